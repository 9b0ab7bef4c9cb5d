/** The Jsonnet conformance runner's helpers (test/conformance/jsonnet/run.ts). */
import { describe, expect, it } from 'vitest';

describe('conformance runner helpers', () => {
  it('splitAssertions: one program per top-level && operand, locals kept, positions kept', async () => {
    const { splitAssertions } = await import('../../conformance/jsonnet/run.js');
    const src = [
      '// header && comment',
      "std.assertEqual(1 && 2, 'a && b') &&",
      'local x = local y = 1; y + 1;',
      "std.assertEqual(x, 2) && std.assertEqual(|||\n  && in a block\n|||, '') &&",
      'local f(a) = a && true;',
      'f(true) &&',
      'if x > 1 then true && true else false &&',
      'true',
    ].join('\n');
    const parts = splitAssertions(src);
    expect(parts.map((p) => p.line)).toEqual(['2', '4', '4#2', '8', '9']);
    for (const p of parts) {
      expect(p.code.length).toBe(src.length);
      expect(p.code.split('\n').length).toBe(src.split('\n').length);
    }
    const compact = (code: string) => code.replace(/\s+/g, ' ').trim();
    expect(compact(parts[0].code)).toBe("std.assertEqual(1 && 2, 'a && b')");
    expect(compact(parts[1].code)).toBe('local x = local y = 1; y + 1; std.assertEqual(x, 2)');
    expect(compact(parts[2].code)).toBe("local x = local y = 1; y + 1; std.assertEqual(||| && in a block |||, '')");
    expect(compact(parts[3].code)).toBe('local x = local y = 1; y + 1; local f(a) = a && true; f(true)');
    // A top-level `if` extends to the end of the chain: the rest is one program.
    expect(compact(parts[4].code)).toBe('local x = local y = 1; y + 1; local f(a) = a && true; if x > 1 then true && true else false && true');
  });

  it('judge: golden output modulo trailing newlines, first line of errors, true without golden', async () => {
    const { judge } = await import('../../conformance/jsonnet/run.js');
    const golden = (text: string) => ({ kind: 'golden' as const, text });
    expect(judge({ expectError: false, expected: golden('{ }') }, { output: '{ }\n' }).ok).toBe(true);
    expect(judge({ expectError: false, expected: golden('{ }\n') }, { output: '{}\n' }).ok).toBe(false);
    expect(judge({ expectError: false, expected: { kind: 'true' } }, { output: 'true\n' }).ok).toBe(true);
    expect(judge({ expectError: false, expected: { kind: 'true' } }, { output: 'false\n' }).ok).toBe(false);
    expect(judge({ expectError: false, expected: { kind: 'true' } }, { error: 'RUNTIME ERROR: x' }).ok).toBe(false);
    const err = golden('RUNTIME ERROR: foo\n\tstd.jsonnet:12:3-4\tfunction <x>\n');
    expect(judge({ expectError: true, expected: err }, { error: 'RUNTIME ERROR: foo\n\tstd.jsonnet:99:1-2\tfunction <x>\n' })).toEqual({ ok: true, details: [], note: 'exact' });
    expect(judge({ expectError: true, expected: err }, { error: 'RUNTIME ERROR: foo\n' })).toEqual({ ok: true, details: [], note: 'first line only' });
    expect(judge({ expectError: true, expected: err }, { error: 'RUNTIME ERROR: bar\n' }).ok).toBe(false);
    expect(judge({ expectError: true, expected: err }, { output: 'true\n' }).ok).toBe(false);
    expect(judge({ expectError: true, expected: err }, { error: 'RUNTIME ERROR: foo', internal: true }).ok).toBe(false);
    expect(judge({ expectError: false, expected: { kind: 'regex', source: '^\\{ "a": [0-9]+ \\}' } }, { output: '{ "a": 12 }\n' }).ok).toBe(true);
  });
});
