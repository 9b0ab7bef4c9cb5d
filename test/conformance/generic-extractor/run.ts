/**
 * Conformance runner for the generic extractor's examples.
 *
 *   tsx test/conformance/generic-extractor/run.ts [examplesDir] [--filter <substring>]... [--verbose]
 *
 * Serves every example's mock API (mock-server.ts, per FORMAT.md) on a local port, copies each
 * example to a temporary data directory, runs the extractor in-process on it, and byte-compares
 * `out/tables` with `_sample_out` (the reference's `<bucket>.<table>` is our
 * `<bucket>.<table>.csv`, its `.manifest` our `.csv.manifest`; contents must be identical).
 *
 * - The configuration is not rewritten: the extractor connects to the host `mock-server` (and
 *   `mock-server-*`, the reference's proxies) at the mock, wherever the configuration names it
 *   (baseUrl, login requests, absolute endpoints, next-page URLs); URLs, Host headers and
 *   signatures keep the recorded host. An `https://` URL reaches an HTTPS front with the
 *   certificate of the example's `https/certs/` (client certificates required when it has
 *   `https/client_ca/`).
 * - Every example runs under a virtual clock that advances one second per mock answer and with
 *   a seeded random source; the recordings' own values where they matter (recordings.ts).
 *
 * Output: one line per example (PASS, FAIL with the reason below it, SKIP with the reason), the
 * duration, then exactly one line `N passed, M failed, K skipped`. Exit code 1 if anything failed.
 */
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs as parseCliArgs } from 'node:util';
import { runExtraction, type ConnectTo } from '@sluice/generic-extractor';
import { startMockServer, type MockServer, type TlsFront } from './mock-server.js';
import { DEFAULT_START, RECORDINGS } from './recordings.js';
import { SKIPPED } from './skips.js';
import { startSshProxy, type SshProxyServer } from './ssh-proxy.js';
import { conformanceMissing, sharedPath } from '../../helpers/shared-dir.js';

const DEFAULT_EXAMPLES = sharedPath('conformance/generic-extractor/examples');
/** The reference's docker-compose services of the mock: `mock-server` and its proxies `mock-server-*`. */
const MOCK_HOST = /^mock-server(-[a-z0-9-]+)?$/i;
/** The reference's SSH server the tunnelling examples name (ssh-proxy.ts). */
const SSH_PROXY_HOST = 'ssh-proxy';
/** Virtual time one answer of the mock API takes. */
const TICK_MS = 1000;
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

/** A random source: `recorded` bytes first, then a stream derived from `seed` (sha256 blocks). */
function seededRandom(recorded: Buffer, seed: string): (bytes: number) => Buffer {
  let pos = 0;
  let block = 0;
  let pool = Buffer.alloc(0);
  return (n) => {
    const out = Buffer.alloc(n);
    for (let i = 0; i < n; i++) {
      if (pos < recorded.length) {
        out[i] = recorded[pos++];
        continue;
      }
      if (pool.length === 0) pool = createHash('sha256').update(`${seed}:${block++}`).digest();
      out[i] = pool[0];
      pool = pool.subarray(1);
    }
    return out;
  };
}

/** The HTTPS front of an example that ships the reference proxy's certificates, if it does. */
async function tlsFrontFor(exampleDir: string, mock: MockServer): Promise<TlsFront | null> {
  const certs = join(exampleDir, 'https', 'certs');
  if (!existsSync(join(certs, 'cert.pem')) || !existsSync(join(certs, 'key.pem'))) return null;
  const clientCa = join(exampleDir, 'https', 'client_ca', 'rootCA.crt');
  return mock.serveTls({
    cert: await readFile(join(certs, 'cert.pem')),
    key: await readFile(join(certs, 'key.pem')),
    ...(existsSync(clientCa) ? { ca: await readFile(clientCa) } : {}),
  });
}

/** The reference's SSH server in front of the mock, for an example whose configuration tunnels through it. */
async function sshProxyFor(exampleDir: string, mock: MockServer): Promise<SshProxyServer | null> {
  const config = JSON.parse(await readFile(join(exampleDir, 'config.json'), 'utf8')) as { parameters?: { sshProxy?: { '#privateKey'?: string } } };
  const key = config.parameters?.sshProxy?.['#privateKey'];
  if (key === undefined) return null;
  // Behind it, the mock answers for its hosts on port 80 (the docker network of the reference's suite).
  return startSshProxy(key, (host, port) => (MOCK_HOST.test(host) && port === 80 ? { host: '127.0.0.1', port: mock.port } : undefined));
}

async function runExample(exampleDir: string, mock: MockServer, verbose: boolean): Promise<string[]> {
  const work = await mkdtemp(join(tmpdir(), 'sluice-ge-'));
  const name = basename(exampleDir);
  const recording = RECORDINGS.get(name);
  let clock = Date.parse(recording?.start ?? DEFAULT_START);
  mock.onRequest = () => {
    clock += TICK_MS;
  };
  const tlsFront = await tlsFrontFor(exampleDir, mock);
  const sshProxy = await sshProxyFor(exampleDir, mock);
  const connectTo: ConnectTo = (host, _port, protocol) => {
    if (sshProxy && host === SSH_PROXY_HOST) return { host: '127.0.0.1', port: sshProxy.port };
    if (!MOCK_HOST.test(host)) return undefined;
    if (protocol === 'http:') return { host: '127.0.0.1', port: mock.port };
    return tlsFront ? { host: '127.0.0.1', port: tlsFront.port } : undefined;
  };
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
        connectTo,
        now: () => clock,
        random: seededRandom(Buffer.from(recording?.random ?? '', 'hex'), name),
        signal: controller.signal,
        log: (m, level = 'info') => logs.push(`${level}: ${m}`),
      });
    } catch (err) {
      return [`extractor failed: ${(err as Error).message}`, ...(verbose ? logs : [])];
    } finally {
      clearTimeout(timer);
    }
    const problems = await compareOutput(exampleDir, join(work, 'out', 'tables'));
    if (sshProxy && sshProxy.channels === 0) problems.push('no request went through the SSH proxy');
    return problems.length > 0 && verbose ? [...problems, ...logs] : problems;
  } finally {
    mock.onRequest = null;
    await tlsFront?.close();
    await sshProxy?.close();
    await rm(work, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  // The default folder is absent in a clone outside the workspace: say so and pass.
  if (!existsSync(args.examplesDir) && args.examplesDir === DEFAULT_EXAMPLES) {
    process.stdout.write(`${conformanceMissing('generic-extractor')}\n`);
    return;
  }
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
      const problems = await runExample(join(args.examplesDir, name), mock, args.verbose);
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
