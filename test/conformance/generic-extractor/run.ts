/**
 * Conformance runner for the generic extractor's examples.
 *
 *   tsx test/conformance/generic-extractor/run.ts [examplesDir] [--filter <substring>]... [--verbose]
 *
 * Serves every example's mock API (mock-server.ts, per FORMAT.md) on a local port, copies each
 * example to a temporary data directory, runs the extractor in-process on it with the host of
 * `api.baseUrl` (`http://mock-server:80/`) replaced by the mock's, and byte-compares `out/tables` with `_sample_out`
 * (the reference's `<bucket>.<table>` is our `<bucket>.<table>.csv`, its `.manifest` our
 * `.csv.manifest`; contents must be identical). Output: one line per example (PASS, FAIL with
 * the reason below it, SKIP with the reason), then exactly one line `N passed, M failed, K skipped`.
 * Exit code 1 if anything failed.
 */
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs as parseCliArgs } from 'node:util';
import { runExtraction } from '../../../src/components/generic-extractor/runner.js';
import { startMockServer } from './mock-server.js';
import { SKIPPED } from './skips.js';
import { sharedPath } from '../../helpers/shared-dir.js';

const DEFAULT_EXAMPLES = sharedPath('conformance/generic-extractor/examples');
const MOCK_BASE = /^https?:\/\/mock-server(:80)?\//;
/** Retries against the mock (a duplicate definition answers 500) need not wait long. */
const BACKOFF_MS = 5;
const EXAMPLE_TIMEOUT_MS = 30_000;

interface Args {
  examplesDir: string;
  filters: string[];
  verbose: boolean;
}

const USAGE = 'usage: tsx test/conformance/generic-extractor/run.ts [examplesDir] [--filter <substring>]... [--verbose]';

function parseArgs(argv: string[]): Args {
  const { values, positionals } = parseCliArgs({
    args: argv,
    allowPositionals: true,
    options: { filter: { type: 'string', multiple: true }, verbose: { type: 'boolean', short: 'v' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (positionals.length > 1) throw new Error(`unexpected argument ${positionals[1]}`);
  return {
    examplesDir: positionals[0] !== undefined ? resolve(positionals[0]) : DEFAULT_EXAMPLES,
    filters: values.filter ?? [],
    verbose: values.verbose ?? false,
  };
}

/** The produced file that corresponds to an expected `_sample_out` file. */
function producedName(expected: string): string {
  return expected.endsWith('.manifest') ? `${expected.slice(0, -'.manifest'.length)}.csv.manifest` : `${expected}.csv`;
}

function firstDifference(expected: string, actual: string): string {
  const e = expected.split('\n');
  const a = actual.split('\n');
  for (let i = 0; i < Math.max(e.length, a.length); i++) {
    if (e[i] !== a[i]) {
      return `line ${i + 1}: expected ${JSON.stringify(e[i] ?? '<end of file>')}, got ${JSON.stringify(a[i] ?? '<end of file>')}`;
    }
  }
  return 'contents differ';
}

async function compareOutput(exampleDir: string, outTables: string): Promise<string[]> {
  const problems: string[] = [];
  const expectedDir = join(exampleDir, '_sample_out');
  const expected = existsSync(expectedDir) ? (await readdir(expectedDir)).sort() : [];
  const produced = existsSync(outTables) ? (await readdir(outTables)).sort() : [];
  const matched = new Set<string>();
  for (const name of expected) {
    const mine = producedName(name);
    if (!produced.includes(mine)) {
      problems.push(`missing table file ${mine} (expected ${name})`);
      continue;
    }
    matched.add(mine);
    const [e, a] = await Promise.all([readFile(join(expectedDir, name), 'utf8'), readFile(join(outTables, mine), 'utf8')]);
    if (e !== a) problems.push(`${mine}: ${firstDifference(e, a)}`);
  }
  for (const name of produced) if (!matched.has(name)) problems.push(`unexpected output file ${name}`);
  return problems;
}

async function runExample(exampleDir: string, mockUrl: string, verbose: boolean): Promise<string[]> {
  const work = await mkdtemp(join(tmpdir(), 'sluice-ge-'));
  try {
    await cp(join(exampleDir, 'config.json'), join(work, 'config.json'));
    if (existsSync(join(exampleDir, 'in'))) await cp(join(exampleDir, 'in'), join(work, 'in'), { recursive: true });
    const logs: string[] = [];
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), EXAMPLE_TIMEOUT_MS);
    try {
      await runExtraction({
        dataDir: work,
        backoffBaseMs: BACKOFF_MS,
        // FORMAT.md: the host of api.baseUrl (also when built by user functions) is the mock's.
        baseUrlOverride: (url) => url.replace(MOCK_BASE, `${mockUrl}/`),
        signal: controller.signal,
        log: (m, level = 'info') => logs.push(`${level}: ${m}`),
      });
    } catch (err) {
      return [`extractor failed: ${(err as Error).message}`, ...(verbose ? logs : [])];
    } finally {
      clearTimeout(timer);
    }
    const problems = await compareOutput(exampleDir, join(work, 'out', 'tables'));
    return problems.length > 0 && verbose ? [...problems, ...logs] : problems;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(args.examplesDir)) throw new Error(`examples directory ${args.examplesDir} does not exist`);
  const all = (await readdir(args.examplesDir, { withFileTypes: true }))
    .filter((e) => e.isDirectory() && existsSync(join(args.examplesDir, e.name, 'config.json')))
    .map((e) => e.name)
    .sort();
  const names = args.filters.length > 0 ? all.filter((n) => args.filters.some((f) => n.includes(f))) : all;
  const mock = await startMockServer(args.examplesDir);
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  const started = Date.now();
  try {
    for (const name of names) {
      const reason = SKIPPED.get(name);
      if (reason !== undefined) {
        skipped++;
        process.stdout.write(`SKIP ${name}: ${reason}\n`);
        continue;
      }
      const problems = await runExample(join(args.examplesDir, name), mock.url, args.verbose);
      if (problems.length === 0) {
        passed++;
        process.stdout.write(`PASS ${name}\n`);
      } else {
        failed++;
        process.stdout.write(`FAIL ${name}\n${problems.map((p) => `     ${p}`).join('\n')}\n`);
      }
    }
  } finally {
    await mock.close();
  }
  process.stdout.write(`(${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((err) => {
  process.stderr.write(`${(err as Error)?.stack ?? err}\n`);
  process.stdout.write('0 passed, 1 failed, 0 skipped\n');
  process.exit(1);
});
