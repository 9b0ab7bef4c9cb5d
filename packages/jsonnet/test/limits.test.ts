/**
 * The limits of one Jsonnet evaluation (src/limits.ts; issue 21, item 1): the longest
 * array, the longest string, the estimated allocation and the time budget, checked inside the
 * builtins and wherever arrays, strings and objects are built, before the allocation. Each
 * crossing is a runtime error that names the limit and the flag that raises it, raised fast,
 * never a V8 fatal (which would end this test process).
 */
import { describe, expect, it } from 'vitest';
import { runJsonnetCli } from '../src/cli.js';
import { compile, evaluateToString, nativeFunction, type CompileOptions } from '../src/index.js';

/** Generous for a loaded 2-core machine: each case fails in milliseconds to a few hundred. */
const FAST_MS = 2500;

/** Evaluates a program that must fail: its error text and how long it took. */
function failure(code: string, options: CompileOptions = {}): { message: string; ms: number } {
  const started = Date.now();
  try {
    evaluateToString(code, options);
  } catch (err) {
    return { message: (err as Error).message, ms: Date.now() - started };
  }
  throw new Error(`expected ${code} to fail`);
}

function expectFails(code: string, firstLine: string | RegExp, options: CompileOptions = {}): string {
  const { message, ms } = failure(code, options);
  const line = message.split('\n')[0];
  if (typeof firstLine === 'string') expect(line).toBe(firstLine);
  else expect(line).toMatch(firstLine);
  expect(ms, code).toBeLessThan(FAST_MS);
  return message;
}

const arrayLimit = (n: number, limit = 10_000_000) => `RUNTIME ERROR: array length ${n} exceeds the limit of ${limit} elements (--max-array-length)`;
const stringLimit = (n: number, limit = 100_000_000) => `RUNTIME ERROR: string length ${n} exceeds the limit of ${limit} characters (--max-string-length)`;
const ALLOCATION = /^RUNTIME ERROR: allocation of about \d+ MB exceeds the limit of (\d+) MB \(--max-allocation\)$/;
const TIME = 'RUNTIME ERROR: evaluation exceeded its time budget of 100 ms (--timeout)';

describe('the array length limit', () => {
  it('fails std.range(1, 1e9) at once, before building it, with the usual stack trace', () => {
    const message = expectFails('std.length(std.range(1, 1e9))', arrayLimit(1_000_000_000));
    expect(message).toBe(`${arrayLimit(1_000_000_000)}\n\t<cmdline>:1:12-29\t\n`);
    expect(failure('std.length(std.range(1, 1e9))').ms).toBeLessThan(500);
  });

  it('checks every builtin and operator that builds an array', () => {
    expectFails('std.makeArray(1e9, function(i) i)', arrayLimit(1_000_000_000));
    expectFails('std.repeat([1, 2], 1e9)', arrayLimit(2_000_000_000));
    expectFails('local a = std.range(1, 6e6); std.length(a + a)', arrayLimit(12_000_000));
    expectFails('std.encodeUTF8(std.repeat("é", 6e6))', arrayLimit(12_000_000));
    expectFails('std.stringChars(std.repeat("a", 2e7))', arrayLimit(20_000_000));
    expectFails('std.map(function(c) c, std.repeat("a", 2e7))', arrayLimit(20_000_000));
    const small = { maxArrayLength: 1000 };
    expectFails('std.split(std.repeat(",", 5000), ",")', arrayLimit(1001, 1000), small);
    // 1000 characters fit; their 1001 pieces do not.
    expectFails('std.splitLimit(std.repeat(",", 1000), ",", -1)', arrayLimit(1001, 1000), small);
    expectFails('std.findSubstr("a", std.repeat("a", 5000))', arrayLimit(1001, 1000), small);
    expectFails('local r = std.range(1, 300); std.join([0], [r, r, r, r])', arrayLimit(1203, 1000), small);
    expectFails('local r = std.range(1, 300); std.flattenArrays([r, r, r, r])', arrayLimit(1200, 1000), small);
    expectFails('local r = std.range(1, 300); std.flatMap(function(x) r, [1, 2, 3, 4])', arrayLimit(1200, 1000), small);
    expectFails('std.parseJson(std.toString(std.range(1, 2000)))', arrayLimit(2000, 1000), small);
  });

  it('checks comprehensions as they grow: nested `for`s multiply', () => {
    expectFails('local a = std.range(1, 1000); std.length([x for x in a for y in a])', arrayLimit(100_001, 100_000), { maxArrayLength: 100_000 });
  });

  it('can be raised: a longer range evaluates', () => {
    const code = 'std.length(std.range(1, 1.1e7))';
    expectFails(code, arrayLimit(11_000_000));
    expect(evaluateToString(code, { maxArrayLength: 12_000_000 })).toBe('11000000\n');
  });
});

describe('the string length limit', () => {
  it('checks the builtins that build strings, before building them', () => {
    expectFails('std.repeat("abc", 1e9)', stringLimit(3_000_000_000));
    expectFails('std.format("%1000000000d", 1)', stringLimit(999_999_999));
    expectFails('std.format("%0*d", [1e9, 1])', stringLimit(999_999_999));
    expectFails('std.strReplace(std.repeat("a", 1e6), "a", std.repeat("b", 1000))', stringLimit(1_000_000_000));
    const small = { maxStringLength: 1_000_000 };
    expectFails('local s = std.repeat("x", 1e4); std.join(",", std.makeArray(200, function(i) s))', stringLimit(1_000_099, 1_000_000), small);
    expectFails('local s = std.repeat("x", 6e5); std.lines([s, s])', stringLimit(1_200_002, 1_000_000), small);
  });

  it('checks `+` on strings: doubling a string forty times fails at the limit', () => {
    const message = expectFails('local f(s, n) = if n == 0 then s else f(s + s, n - 1); std.length(f("ab", 40))', stringLimit(134_217_728));
    expect(message).toContain('function <f>');
  });

  it('bounds the text of manifestation, which indentation makes longer than the value', () => {
    const small = { maxStringLength: 1_000_000 };
    const over = /^RUNTIME ERROR: string length \d+ exceeds the limit of 1000000 characters \(--max-string-length\)$/;
    // 10 000 numbers, but each on a line indented by 1000 spaces.
    expectFails('std.manifestJsonEx(std.range(1, 1e4), std.repeat(" ", 1000))', over, small);
    expectFails('local s = std.repeat("x", 4e5); std.toString([s, s, s])', stringLimit(1_200_011, 1_000_000), small);
    expectFails('std.manifestYamlDoc([std.repeat("x", 6e5), std.repeat("y", 6e5)])', over, small);
    // The program's output too.
    expectFails('std.range(1, 1000)', /^RUNTIME ERROR: string length \d+ exceeds the limit of 1000 characters/, { maxStringLength: 1000 });
  });
});

describe('the allocation limit', () => {
  it('charges lazy elements before making them', () => {
    expect(expectFails('std.length(std.makeArray(5e6, function(i) i))', ALLOCATION)).toMatch(/limit of 256 MB/);
    expectFails('std.length(std.map(function(x) x, std.range(1, 5e6)))', ALLOCATION);
    expectFails('std.parseJson("[" + std.repeat("0,", 2e7) + "0]")', ALLOCATION);
  });

  it('charges object comprehensions, object and array literals, functions', () => {
    const small = { maxAllocationBytes: 8 * 1024 * 1024 };
    expectFails('std.length({ [std.toString(i)]: i for i in std.range(1, 1e5) })', /limit of 8 MB/, small);
    expectFails('local f(n, acc) = if n == 0 then acc else f(n - 1, { next: acc }) tailstrict; std.length(f(1e7, {}))', /limit of 8 MB/, small);
    expectFails('local f(n, acc) = if n == 0 then acc else f(n - 1, [acc, n]) tailstrict; std.length(f(1e7, []))', /limit of 8 MB/, small);
    expectFails('local f(n, acc) = if n == 0 then acc else f(n - 1, function() acc) tailstrict; std.length(f(1e7, null))', /limit of 8 MB/, small);
  });

  it('charges a YAML alias each time it is copied: nine levels of ten are 10^9 elements', () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++) {
      const prev = String.fromCharCode(96 + i);
      const name = String.fromCharCode(97 + i);
      levels.push(`${name}: &${name} [${Array(10).fill(`*${prev}`).join(',')}]`);
    }
    expectFails(`std.length(std.parseYaml(${JSON.stringify(levels.join('\n'))}).i)`, /limit of 8 MB/, { maxAllocationBytes: 8 * 1024 * 1024 });
  });

  it('counts every copy of a quadratic accumulation (`acc + [x]` in a fold)', () => {
    expectFails('std.length(std.foldl(function(acc, x) acc + [x], std.range(1, 20000), []))', ALLOCATION);
    expect(evaluateToString('std.length(std.foldl(function(acc, x) acc + [x], std.range(1, 2000), []))')).toBe('2000\n');
  });

  it('starts again at each evaluation of a compiled program', () => {
    const program = compile('std.length(std.range(1, 1e5))', { maxAllocationBytes: 1024 * 1024 });
    // 800 KB each (estimated): two would not fit in one evaluation's 1 MB.
    expect(program.evaluate()).toBe(100_000);
    expect(program.evaluate()).toBe(100_000);
    expect(() => compile('std.length(std.range(1, 1e5) + std.range(1, 1e5))', { maxAllocationBytes: 1024 * 1024 }).evaluate()).toThrow(
      /allocation of about \d+ MB exceeds the limit of 1 MB/,
    );
    // Nothing of a failed evaluation is left for the next program.
    expect(evaluateToString('std.length(std.range(1, 1e5))')).toBe('100000\n');
  });
});

describe('the time budget, inside builtins', () => {
  const budget = { timeoutMs: 100 };
  it.each([
    ['std.sort over 9 million numbers', 'std.length(std.sort(std.range(1, 9e6)))'],
    ['std.join over 9 million strings', 'std.length(std.join("", std.repeat(["x"], 9e6)))'],
    ['std.foldl over 9 million elements', 'std.foldl(function(a, b) a + b, std.range(0, 9e6), 0)'],
    ['a comprehension of constants', 'std.length([1 for x in std.range(1, 3000) for y in std.range(1, 3000)])'],
    ['manifestation of 3 million numbers', 'std.length(std.manifestJsonMinified(std.range(1, 3e6)))'],
    ['std.set over a million arrays', 'std.length(std.set(std.makeArray(1e6, function(i) [i % 10])))'],
  ])('%s', (_name, code) => {
    expectFails(code, TIME, budget);
  });

  it('the issue\'s std.foldl over std.range(0, 3e7) fails at once, on the array length', () => {
    expectFails('std.foldl(function(a, b) a + b, std.range(0, 3e7), 0)', arrayLimit(30_000_001), budget);
  });
});

describe('limits of an embedding program', () => {
  it('names its own settings in the errors', () => {
    const { message } = failure('std.range(1, 20)', { maxArrayLength: 10, limitNames: { maxArrayLength: '--template-max-array-length' } });
    expect(message.split('\n')[0]).toBe('RUNTIME ERROR: array length 20 exceeds the limit of 10 elements (--template-max-array-length)');
  });

  it("charges what a native gives back (a template's Body(), called in a loop)", () => {
    const body = { items: Array.from({ length: 1000 }, (_, i) => `item ${i}`) };
    const program = (options: CompileOptions) => compile('std.foldl(function(n, i) n + std.length(Body().items), std.range(1, 1000), 0)', { ...options, globals: { Body: nativeFunction([], () => body) } });
    expect(program({}).evaluate()).toBe(1_000_000);
    // A thousand copies of the body, each of a thousand strings.
    expect(() => program({ maxAllocationBytes: 1024 * 1024 }).evaluate()).toThrow(/allocation of about \d+ MB exceeds the limit of 1 MB/);
    expect(() => program({ maxArrayLength: 999 }).evaluate()).toThrow('array length 1000 exceeds the limit of 999 elements');
  });

  it('an evaluation started by a native keeps its own limits; the outer one gets its own back', () => {
    const inner = compile('std.length(std.range(1, n))', { globals: ['n'], maxArrayLength: 5 });
    const outer = compile('[Inner(3), std.length(std.range(1, 1000))]', {
      maxArrayLength: 2000,
      globals: { Inner: nativeFunction(['n'], (n) => inner.evaluate(undefined, { n })) },
    });
    expect(outer.evaluate()).toEqual([3, 1000]);
    expect(() => compile('Inner(6)', { globals: { Inner: nativeFunction(['n'], (n) => inner.evaluate(undefined, { n })) } }).evaluate()).toThrow(
      'array length 6 exceeds the limit of 5 elements',
    );
  });
});

describe('sluice jsonnet: the limits as flags', () => {
  async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    let stdout = '';
    let stderr = '';
    const io = { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } };
    const code = await runJsonnetCli(argv, io);
    return { code, stdout, stderr };
  }

  it('each flag lowers or raises its limit', async () => {
    expect(await cli(['--max-string-length', '10', '-e', 'std.repeat("ab", 6)'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'RUNTIME ERROR: string length 12 exceeds the limit of 10 characters (--max-string-length)\n\t<cmdline>:1:1-20\t\n',
    });
    expect(await cli(['--max-string-length=12', '-e', 'std.repeat("ab", 6)'])).toEqual({ code: 0, stdout: '"abababababab"\n', stderr: '' });
    const allocation = await cli(['--max-allocation', '1MB', '-e', 'std.range(1, 1e6)']);
    expect(allocation.code).toBe(1);
    expect(allocation.stderr).toMatch(/^RUNTIME ERROR: allocation of about 8 MB exceeds the limit of 1 MB \(--max-allocation\)\n/);
    const timeout = await cli(['--timeout', '100ms', '-e', 'std.length(std.sort(std.range(1, 9e6)))']);
    expect(timeout.code).toBe(1);
    expect(timeout.stderr).toMatch(/^RUNTIME ERROR: evaluation exceeded its time budget of 100 ms \(--timeout\)\n/);
    expect(await cli(['--max-array-length', '3', '-e', 'std.range(1, 3)'])).toMatchObject({ code: 0, stdout: '[\n   1,\n   2,\n   3\n]\n' });
  });

  it('refuses values that are not limits, or past what V8 itself allows', async () => {
    for (const [flag, value, message] of [
      ['--max-array-length', 'abc', 'ERROR: invalid --max-array-length value: abc'],
      ['--max-array-length', '0', 'ERROR: invalid --max-array-length value: 0'],
      ['--max-array-length', '200000000', "ERROR: --max-array-length is at most 134217725 (V8's own limit), got 200000000"],
      ['--max-string-length', '600000000', "ERROR: --max-string-length is at most 536870888 (V8's own limit), got 600000000"],
      ['--max-allocation', 'much', 'ERROR: invalid --max-allocation value: much'],
      ['--timeout', '10 minutes', 'ERROR: invalid --timeout value: 10 minutes'],
    ]) {
      const r = await cli([flag, value, '-e', '1']);
      expect(r.code, `${flag} ${value}`).toBe(1);
      expect(r.stderr.split('\n')[0]).toBe(message);
    }
  });
});
