/**
 * How the doc-test reads a page: which blocks run, what a `# → ` check reads, and when a check
 * fails. The runs themselves are test/integration/docs-quick-starts.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { docScript, marker, outputHas, outputsPerSegment } from '../../helpers/doc-blocks.js';

const PAGE = [
  '# A page',
  '',
  '```sh',
  'echo not in the section',
  '```',
  '',
  '## Quick start',
  '',
  '```sh',
  'A=1',
  'echo "a is $A"',
  '# → a is 1',
  '```',
  '',
  '```json',
  '{"not": "run"}',
  '```',
  '',
  '```',
  '## Quick start (a heading inside a fence does not end the section)',
  '```',
  '',
  '```bash',
  'echo "still $A"',
  '# → still …',
  '# → 1',
  '```',
  '',
  '## Next section',
  '',
  '```sh',
  'echo after',
  '```',
].join('\n');

describe('docScript', () => {
  const script = docScript('docs/x.md', PAGE, 'Quick start')!;

  it("runs the section's sh and bash blocks only, in order, with a marker after each check", () => {
    expect(script.blocks).toBe(2);
    expect(script.script).toBe(
      ['set -eo pipefail', 'A=1', 'echo "a is $A"', `printf '\\n${marker(0)}\\n'`, 'echo "still $A"', `printf '\\n${marker(1)}\\n'`, ''].join('\n'),
    );
    expect(script.checks).toEqual([
      { expected: 'a is 1', segment: 0, where: 'docs/x.md:12' },
      { expected: 'still …', segment: 1, where: 'docs/x.md:25' },
      { expected: '1', segment: 1, where: 'docs/x.md:26' },
    ]);
    expect(script.server).toBe(true);
    expect(script.needs).toEqual([]);
  });

  it('knows a section that starts its own server, one that needs commands, and a page without the section', () => {
    expect(docScript('p.md', '## Quick start\n<!-- doctest: no server -->\n```sh\ntrue\n```\n', 'Quick start')!.server).toBe(false);
    expect(docScript('p.md', '## Quick start\n<!-- doctest: needs java mvn -->\n```sh\ntrue\n```\n', 'Quick start')!.needs).toEqual(['java', 'mvn']);
    expect(docScript('p.md', '## Other\n```sh\ntrue\n```\n', 'Quick start')).toBeUndefined();
  });
});

describe('a check', () => {
  it('reads the output since the previous stretch', () => {
    const output = `one\n${marker(0)}\ntwo\n${marker(1)}\nthree`;
    expect(outputsPerSegment(output, 3)).toEqual(['one\n', '\ntwo\n', undefined]);
  });

  it('matches a substring, with … for any text within a line, and fails otherwise', () => {
    expect(outputHas('{"statusCode":415,"error":"x"}', '"statusCode":415')).toBe(true);
    expect(outputHas('web | http | Web | enabled', 'web…http…enabled')).toBe(true);
    expect(outputHas('web | http\nWeb | enabled', 'web…enabled')).toBe(false);
    expect(outputHas('a.b (c)', 'a.b (c)')).toBe(true);
    expect(outputHas('axb', 'a.b')).toBe(false);
  });
});
