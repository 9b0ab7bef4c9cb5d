/**
 * Conformance runner for the Jsonnet test suite (google/jsonnet v0.20.0 `test_suite/`).
 *
 *   tsx test/conformance/jsonnet/run.ts [testSuiteDir] [--engine sluice|libjsonnet]
 *       [--filter <substring>]... [--jobs N] [--isolate] [--verbose]
 *
 * Per the suite's FORMAT.md (test/helpers/shared-dir.ts says where the suite is): every `*.jsonnet` of the suite is one program,
 * evaluated as if from inside the suite directory (its name as given, imports relative to it),
 * with `var1` = string `test` and `var2` = code `{x:1,y:2}` as top-level arguments for `tla.*`
 * files and as external variables for the others. Expected:
 *   - `<name>.golden`: the output equals it (trailing newlines aside, as the reference runner's
 *     `$(...)` comparison); `<name>.golden_regex`: the output matches the expression;
 *   - no golden: the output is `true`;
 *   - `error.*`: the evaluation fails and the first line of the error equals the golden's first
 *     line (or matches its regex).
 * `stdlib.jsonnet` (one `&&` chain of std.assertEqual checks) is split into one case per check,
 * named `stdlib.jsonnet:<line>`, each keeping the `local`s declared before it; the text of the
 * other checks is blanked so that positions in messages stay those of the file.
 *
 * std.trace output is captured per evaluation and put before the output, as the reference
 * runner's `2>&1` (trace.jsonnet's golden holds it).
 *
 * The engine is the Sluice compiler (in this process; `--isolate` runs it in child processes with
 * a time limit) or libjsonnet 0.20 in child processes (`--engine libjsonnet`, which validates the
 * runner itself). Output: one line per case (PASS, FAIL with details below it, SKIP with the
 * reason), then exactly one line `N passed, M failed, K skipped`. Exit code 1 if anything failed.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs as parseCliArgs } from 'node:util';
import {
  ChildProcessEngine,
  ENGINE_NAMES,
  LibjsonnetOracle,
  SluiceEngine,
  type EngineName,
  type EvaluateOptions,
  type ExtVar,
  type JsonnetEngine,
} from '@sluice/jsonnet';
import { SKIPPED, staleSkipWarnings } from './skips.js';
import { conformanceMissing, sharedPath } from '../../helpers/shared-dir.js';

const DEFAULT_SUITE = sharedPath('conformance/jsonnet/test_suite');
const TIMEOUT_MS = 60_000;

const VARS: Record<string, ExtVar> = {
  var1: { kind: 'string', value: 'test' },
  var2: { kind: 'code', value: '{x:1,y:2}' },
};

// ---------------------------------------------------------------------------------------------
// Arguments

interface Args {
  suiteDir: string;
  engine: EngineName;
  filters: string[];
  jobs: number;
  isolate: boolean;
  verbose: boolean;
}

const USAGE =
  'usage: tsx test/conformance/jsonnet/run.ts [testSuiteDir] [--engine sluice|libjsonnet] [--filter <substring>]... [--jobs N] [--isolate] [--verbose]';

function parseArgs(argv: string[]): Args {
  const { values, positionals } = parseCliArgs({
    args: argv,
    allowPositionals: true,
    options: {
      filter: { type: 'string', multiple: true },
      engine: { type: 'string' },
      jobs: { type: 'string', short: 'j' },
      isolate: { type: 'boolean' },
      verbose: { type: 'boolean', short: 'v' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (positionals.length > 1) throw new Error(`unexpected argument ${positionals[1]}`);
  const engine = values.engine ?? 'sluice';
  if (!(ENGINE_NAMES as readonly string[]).includes(engine)) throw new Error(`--engine must be one of ${ENGINE_NAMES.join(', ')}`);
  const jobs = values.jobs === undefined ? 2 : Number(values.jobs);
  if (!Number.isInteger(jobs) || jobs < 1) throw new Error('--jobs must be a positive integer');
  return {
    suiteDir: positionals[0] !== undefined ? resolve(positionals[0]) : DEFAULT_SUITE,
    engine: engine as EngineName,
    filters: values.filter ?? [],
    jobs,
    isolate: values.isolate ?? false,
    verbose: values.verbose ?? false,
  };
}

// ---------------------------------------------------------------------------------------------
// Cases

type Expectation = { kind: 'golden'; text: string } | { kind: 'regex'; source: string } | { kind: 'true' };

interface Case {
  name: string;
  /** The file the program comes from (its name in messages). */
  file: string;
  code: string;
  expectError: boolean;
  tla: boolean;
  expected: Expectation;
}

function expectationOf(suiteDir: string, file: string): Expectation {
  const golden = join(suiteDir, `${file}.golden`);
  if (existsSync(golden)) return { kind: 'golden', text: readFileSync(golden, 'utf8') };
  const regex = join(suiteDir, `${file}.golden_regex`);
  if (existsSync(regex)) return { kind: 'regex', source: readFileSync(regex, 'utf8').replace(/\n+$/, '') };
  return { kind: 'true' };
}

export function loadCases(suiteDir: string): Case[] {
  const files = readdirSync(suiteDir, { withFileTypes: true })
    .filter((d) => d.isFile() && d.name.endsWith('.jsonnet'))
    .map((d) => d.name)
    .sort();
  const cases: Case[] = [];
  for (const file of files) {
    const code = readFileSync(join(suiteDir, file), 'utf8');
    const base = { file, expectError: file.startsWith('error.'), tla: file.startsWith('tla.') };
    if (file === 'stdlib.jsonnet') {
      for (const part of splitAssertions(code)) {
        cases.push({ ...base, name: `${file}:${part.line}`, code: part.code, expected: { kind: 'true' } });
      }
    } else {
      cases.push({ ...base, name: file, code, expected: expectationOf(suiteDir, file) });
    }
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Splitting an `a && b && local x = ...; c && ...` chain into its checks

interface Token {
  text: string;
  start: number;
  end: number;
}

/** Tokens of Jsonnet source that matter for the split: brackets, `&&`, `;`, words; strings and comments skipped. */
function scan(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const n = src.length;
  while (i < n) {
    const c = src[i];
    const start = i;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (c === '#' || (c === '/' && src[i + 1] === '/')) {
      while (i < n && src[i] !== '\n') i++;
    } else if (c === '/' && src[i + 1] === '*') {
      const close = src.indexOf('*/', i + 2);
      i = close < 0 ? n : close + 2;
    } else if (c === '"' || c === "'") {
      i++;
      while (i < n && src[i] !== c) i += src[i] === '\\' ? 2 : 1;
      i++;
      tokens.push({ text: 'string', start, end: i });
    } else if (c === '@' && (src[i + 1] === '"' || src[i + 1] === "'")) {
      const q = src[i + 1];
      i += 2;
      for (;;) {
        if (i >= n) break;
        if (src[i] === q) {
          if (src[i + 1] === q) i += 2;
          else {
            i++;
            break;
          }
        } else i++;
      }
      tokens.push({ text: 'string', start, end: i });
    } else if (src.startsWith('|||', i)) {
      i = skipTextBlock(src, i);
      tokens.push({ text: 'string', start, end: i });
    } else if (/[A-Za-z_]/.test(c)) {
      while (i < n && /[A-Za-z0-9_]/.test(src[i])) i++;
      tokens.push({ text: src.slice(start, i), start, end: i });
    } else if (c === '&' && src[i + 1] === '&') {
      i += 2;
      tokens.push({ text: '&&', start, end: i });
    } else {
      i++;
      tokens.push({ text: c, start, end: i });
    }
  }
  return tokens;
}

/** Skips a `|||` text block starting at `i`; returns the index after its closing `|||`. */
function skipTextBlock(src: string, i: number): number {
  let p = src.indexOf('\n', i + 3);
  if (p < 0) return src.length;
  p++;
  // Blank lines may precede the first content line, which sets the indentation.
  while (p < src.length && src[p] === '\n') p++;
  const indent = /^[ \t]*/.exec(src.slice(p))![0];
  for (;;) {
    if (p >= src.length) return src.length;
    if (src[p] === '\n') {
      p++;
      continue;
    }
    if (indent !== '' && src.startsWith(indent, p)) {
      const nl = src.indexOf('\n', p);
      if (nl < 0) return src.length;
      p = nl + 1;
      continue;
    }
    // The terminator line: whitespace, then |||.
    const m = /^[ \t]*\|\|\|/.exec(src.slice(p, p + 200));
    return m ? p + m[0].length : src.length;
  }
}

interface Part {
  line: string;
  code: string;
}

/**
 * Splits a chain of checks joined by top-level `&&` into one program per check. `local` (and
 * `assert`) preludes at the top level scope over the rest of the chain, so every later check
 * keeps them. A top-level `if`, `function` or `error` would extend to the end of the chain: from
 * there on, the rest is one check. Characters of the file that a program does not use are
 * replaced by spaces (newlines kept), so positions in messages are those of the file.
 */
export function splitAssertions(src: string): Part[] {
  const tokens = scan(src);
  const preludes: Array<[number, number]> = [];
  const parts: Array<{ ranges: Array<[number, number]>; start: number }> = [];
  let depth = 0;
  let i = 0;
  while (i < tokens.length) {
    // Preludes at the start of a segment.
    while (i < tokens.length && (tokens[i].text === 'local' || tokens[i].text === 'assert')) {
      const start = tokens[i].start;
      let binders = 0;
      for (; i < tokens.length; i++) {
        const t = tokens[i].text;
        if ('([{'.includes(t)) depth++;
        else if (')]}'.includes(t)) depth--;
        else if (depth === 0 && (t === 'local' || t === 'assert')) binders++;
        else if (depth === 0 && t === ';' && --binders === 0) break;
      }
      if (i >= tokens.length) break;
      preludes.push([start, tokens[i].end]);
      i++;
    }
    if (i >= tokens.length) break;
    // The check: up to the next top-level `&&`.
    const start = tokens[i].start;
    let end = tokens[i].end;
    let binders = 0;
    let rest = false;
    for (; i < tokens.length; i++) {
      const t = tokens[i].text;
      if ('([{'.includes(t)) depth++;
      else if (')]}'.includes(t)) depth--;
      else if (depth === 0 && (t === 'local' || t === 'assert')) binders++;
      else if (depth === 0 && t === ';') binders--;
      else if (depth === 0 && (t === 'if' || t === 'function' || t === 'error')) rest = true;
      else if (depth === 0 && binders === 0 && !rest && t === '&&') break;
      end = tokens[i].end;
    }
    parts.push({ ranges: [...preludes, [start, end]], start });
    i++;
  }
  const lineOf = (pos: number) => src.slice(0, pos).split('\n').length;
  const seen = new Map<number, number>();
  return parts
    .filter((p) => src.slice(p.ranges[p.ranges.length - 1][0], p.ranges[p.ranges.length - 1][1]).trim() !== 'true')
    .map((p) => {
      const line = lineOf(p.start);
      const count = (seen.get(line) ?? 0) + 1;
      seen.set(line, count);
      return { line: count === 1 ? String(line) : `${line}#${count}`, code: blankExcept(src, p.ranges) };
    });
}

function blankExcept(src: string, ranges: Array<[number, number]>): string {
  const keep = new Uint8Array(src.length);
  for (const [a, b] of ranges) keep.fill(1, a, b);
  let out = '';
  for (let i = 0; i < src.length; i++) out += keep[i] || src[i] === '\n' ? src[i] : ' ';
  return out;
}

// ---------------------------------------------------------------------------------------------
// Running and judging

interface Outcome {
  ok: boolean;
  details: string[];
  /** For passing error cases: whether the whole error text equals the golden file too. */
  note?: string;
}

/** The reference runner's redaction of standard-library positions in stack traces. */
const redactStd = (s: string) => s.replace(/\tstd\.jsonnet:[0-9]*:[0-9-]*/g, '\tstd.jsonnet:<stdlib_position_redacted>');

const trimNewlines = (s: string) => s.replace(/\n+$/, '');
const firstLine = (s: string) => s.split('\n')[0];

function clip(text: string, max = 20): string[] {
  const lines = trimNewlines(text).split('\n');
  const shown = lines.slice(0, max).map((l) => `    | ${l.length > 300 ? `${l.slice(0, 300)}...` : l}`);
  if (lines.length > max) shown.push(`    | ... (${lines.length - max} more lines)`);
  return shown;
}

export function judge(c: Pick<Case, 'expectError' | 'expected'>, result: { output: string } | { error: string; internal?: boolean }): Outcome {
  if ('error' in result) {
    if (!c.expectError) return { ok: false, details: ['  expected success, got an error:', ...clip(result.error)] };
    if (result.internal) return { ok: false, details: ['  the engine failed:', ...clip(result.error)] };
    const got = firstLine(result.error);
    switch (c.expected.kind) {
      case 'golden': {
        const want = firstLine(c.expected.text);
        const exact = redactStd(trimNewlines(result.error)) === redactStd(trimNewlines(c.expected.text));
        return got === want ? { ok: true, details: [], note: exact ? 'exact' : 'first line only' } : { ok: false, details: ['  first line of the error differs:', `    expected: ${want}`, `    actual:   ${got}`] };
      }
      case 'regex':
        return new RegExp(c.expected.source).test(result.error) || new RegExp(c.expected.source).test(got)
          ? { ok: true, details: [] }
          : { ok: false, details: [`  error does not match /${c.expected.source}/:`, ...clip(result.error)] };
      case 'true':
        return { ok: true, details: [] };
    }
  }
  if (c.expectError) return { ok: false, details: ['  expected an error, got output:', ...clip(result.output)] };
  switch (c.expected.kind) {
    case 'golden': {
      const want = trimNewlines(c.expected.text);
      const got = trimNewlines(result.output);
      if (got === want) return { ok: true, details: [] };
      return { ok: false, details: ['  output differs from the golden file', '  expected:', ...clip(want), '  actual:', ...clip(got), ...firstDifference(want, got)] };
    }
    case 'regex':
      return new RegExp(c.expected.source).test(result.output)
        ? { ok: true, details: [] }
        : { ok: false, details: [`  output does not match /${c.expected.source}/:`, ...clip(result.output)] };
    case 'true':
      return trimNewlines(result.output) === 'true' ? { ok: true, details: [] } : { ok: false, details: ['  expected true, got:', ...clip(result.output)] };
  }
}

function firstDifference(want: string, got: string): string[] {
  let i = 0;
  while (i < want.length && i < got.length && want[i] === got[i]) i++;
  const line = want.slice(0, i).split('\n').length;
  return [`  first difference at line ${line}: expected ${JSON.stringify(want.slice(i, i + 40))}, got ${JSON.stringify(got.slice(i, i + 40))}`];
}

async function runCase(engine: JsonnetEngine, c: Case, suiteDir: string): Promise<Outcome> {
  // As the reference runner's `2>&1`: what the program writes on stderr (std.trace) comes first.
  let stderr = '';
  const options: EvaluateOptions = { filename: c.file, cwd: suiteDir, trace: (text) => (stderr += text) };
  if (c.tla) options.tlaVars = VARS;
  else options.extVars = VARS;
  let result: { output: string } | { error: string; internal?: boolean };
  try {
    const output = await engine.evaluate(c.code, options);
    result = { output: stderr + output };
  } catch (err) {
    const e = err as Error & { internal?: boolean };
    const internal = e?.name !== 'EngineError' || e.internal === true;
    result = { error: (internal ? '' : stderr) + (e?.message ?? String(err)), internal };
  }
  return judge(c, result);
}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (!existsSync(args.suiteDir)) {
    // The default folder is absent in a clone outside the workspace: say so and pass.
    if (args.suiteDir === DEFAULT_SUITE) {
      process.stdout.write(`${conformanceMissing('jsonnet')}\n`);
      return 0;
    }
    process.stderr.write(`no test suite at ${args.suiteDir}\n`);
    return 2;
  }
  const all = loadCases(args.suiteDir);
  for (const w of staleSkipWarnings(all.map((c) => c.name))) process.stderr.write(`${w}\n`);
  const selected = args.filters.length === 0 ? all : all.filter((c) => args.filters.some((f) => c.name.includes(f)));

  const engine: JsonnetEngine =
    args.engine === 'libjsonnet'
      ? new LibjsonnetOracle({ concurrency: args.jobs, timeoutMs: TIMEOUT_MS })
      : args.isolate
        ? new ChildProcessEngine({ engine: 'sluice', concurrency: args.jobs, timeoutMs: TIMEOUT_MS })
        : new SluiceEngine();
  process.stdout.write(`engine: ${args.engine}${args.isolate && args.engine === 'sluice' ? ' (isolated)' : ''}, suite: ${args.suiteDir}\n`);

  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const toRun = selected.filter((c) => !SKIPPED.has(c.name));
  // Start evaluations with bounded parallelism, print in suite order.
  const outcomes = new Map<string, Promise<Outcome>>();
  let cursor = 0;
  const startMore = () => {
    while (cursor < toRun.length && outcomes.size - printed < args.jobs * 4) {
      const c = toRun[cursor++];
      outcomes.set(c.name, runCase(engine, c, args.suiteDir));
    }
  };
  let printed = 0;
  const started = Date.now();
  try {
    for (const c of selected) {
      const reason = SKIPPED.get(c.name);
      if (reason !== undefined) {
        skipped++;
        process.stdout.write(`SKIP ${c.name} (${reason})\n`);
        continue;
      }
      startMore();
      const outcome = await outcomes.get(c.name)!;
      printed++;
      startMore();
      if (outcome.ok) {
        passed++;
        process.stdout.write(`PASS ${c.name}${outcome.note ? ` (${outcome.note})` : ''}\n`);
      } else {
        failed++;
        process.stdout.write(`FAIL ${c.name}\n${outcome.details.join('\n')}\n`);
      }
    }
  } finally {
    await engine.close();
  }
  if (args.verbose) process.stdout.write(`(${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  return failed > 0 ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`${err?.stack ?? err}\n`);
      process.exitCode = 2;
    },
  );
}
