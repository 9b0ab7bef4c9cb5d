/**
 * The shell blocks a reader runs as written: those of the README's "First steps" and of each
 * docs page's "Quick start" section, turned into one bash script per page with checks of their
 * output. The doc-test (test/integration/docs-quick-starts.test.ts) runs the scripts against a
 * fresh server; a page example that does not work fails the build.
 *
 * Conventions a page follows (docs/contributing.md, "Docs that run"):
 * - Every ```sh block of the section runs, in order, in one bash process (so variables carry
 *   from one block to the next), with `set -eo pipefail`: a failing command fails the page.
 * - A comment line `# → text` checks that the output of the commands since the previous check
 *   (stdout and stderr together) contains `text`; `…` in it stands for any text on one line.
 *   Check lines that follow each other read the same output.
 * - `<!-- doctest: no server -->` anywhere in the section: the runner starts no server (the
 *   blocks start what they need, e.g. `npx sluice serve ... &`).
 * - `<!-- doctest: needs java mvn -->`: the section runs only where those commands are on the
 *   PATH (as the Kafka tests: skipped with a line saying which is missing).
 */

export interface DocCheck {
  /** The text after `# → `. */
  expected: string;
  /** Which stretch of output it reads: checks on consecutive lines share one. */
  segment: number;
  /** Where it is, `file:line`, for the failure message. */
  where: string;
}

export interface DocScript {
  file: string;
  /** The section's heading the blocks came from. */
  section: string;
  /** The bash script: the blocks' lines, with a marker echoed after each stretch of commands a check reads. */
  script: string;
  checks: DocCheck[];
  /** How many ```sh blocks the section has. */
  blocks: number;
  /** False when the section says `<!-- doctest: no server -->`. */
  server: boolean;
  /** The commands the section needs on the PATH (`<!-- doctest: needs a b -->`). */
  needs: string[];
}

/** The marker printed after the commands a check reads; `n` is the check's index. */
export function marker(n: number): string {
  return `@@doctest-check-${n}@@`;
}

const CHECK = /^\s*# → (.*)$/;

/**
 * The section under `heading` (a `## ` heading, up to the next one), or undefined. Headings
 * inside code fences do not count.
 */
function section(markdown: string, heading: string): { text: string; firstLine: number } | undefined {
  const lines = markdown.split('\n');
  let fenced = false;
  let start = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    if (start < 0 && line === `## ${heading}`) start = i;
    else if (start >= 0 && line.startsWith('## ')) return { text: lines.slice(start, i).join('\n'), firstLine: start + 1 };
  }
  return start < 0 ? undefined : { text: lines.slice(start).join('\n'), firstLine: start + 1 };
}

/** The script of a page's section `heading`, or undefined when the page has no such section. */
export function docScript(file: string, markdown: string, heading: string): DocScript | undefined {
  const found = section(markdown, heading);
  if (!found) return undefined;
  const lines = found.text.split('\n');
  const out: string[] = ['set -eo pipefail'];
  const checks: DocCheck[] = [];
  let inBlock = false;
  let blocks = 0;
  let segments = 0;
  let previousWasCheck = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!inBlock && /^```(sh|bash|shell)\s*$/.test(line)) {
      inBlock = true;
      blocks++;
      continue;
    }
    if (inBlock && line.startsWith('```')) {
      inBlock = false;
      continue;
    }
    if (!inBlock) continue;
    const check = CHECK.exec(line);
    if (check) {
      // A newline first: curl's answers end without one.
      if (!previousWasCheck) out.push(`printf '\\n${marker(segments++)}\\n'`);
      checks.push({ expected: check[1]!.trim(), segment: segments - 1, where: `${file}:${found.firstLine + i}` });
    } else out.push(line);
    previousWasCheck = check !== null;
  }
  const needs = /<!-- doctest: needs ([^>]*?) -->/.exec(found.text)?.[1]?.split(/\s+/).filter(Boolean) ?? [];
  return { file, section: heading, script: out.join('\n') + '\n', checks, blocks, server: !found.text.includes('<!-- doctest: no server -->'), needs };
}

/** Whether `output` contains `expected`, where `…` in `expected` stands for any text on one line. */
export function outputHas(output: string, expected: string): boolean {
  const pattern = expected
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^\\n]*');
  return new RegExp(pattern).test(output);
}

/**
 * The output of each stretch: the text between the previous marker (or the start) and its
 * own. A stretch whose marker never came (the script stopped before it) reads undefined.
 */
export function outputsPerSegment(output: string, segments: number): (string | undefined)[] {
  const result: (string | undefined)[] = [];
  let from = 0;
  for (let n = 0; n < segments; n++) {
    const at = output.indexOf(marker(n), from);
    if (at < 0) {
      result.push(undefined);
      continue;
    }
    result.push(output.slice(from, at));
    from = at + marker(n).length;
  }
  return result;
}
