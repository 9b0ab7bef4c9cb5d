/**
 * Conformance runner for the Stream API suite.
 *
 *   tsx test/conformance/stream-api/run.ts [casesDir] [--filter <substring>]... [--jobs N]
 *
 * Every scenario runs against its own `node dist/main.js serve` child with a fresh data directory.
 * A scenario with an `initial-etcd-kvs.txt` gets that state loaded into its data directory before
 * the service starts (etcd-fixtures.ts), and its service runs without the periodic checks
 * (`SLUICE_CHECK_INTERVAL` of a day): the reference ran these cases with its API component only,
 * so no operator imported, uploaded or expired the seeded files while the steps read them.
 * The runner does not build: run `npm run build` first. Output: one line per scenario (PASS,
 * FAIL with details below it, SKIP with the reason), then exactly one line
 * `N passed, M failed, K skipped`. Exit code 1 if anything failed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs as parseCliArgs } from 'node:util';
import { listScenarios, loadScenario, runScenario, substitutePlaceholders, ETCD_FIXTURE_FILE, type Vars } from './scenario.js';
import { loadEtcdFixture } from './etcd-fixtures.js';
import { SKIPPED, staleSkipWarnings } from './skips.js';
import { conformanceMissing, sharedPath } from '../../helpers/shared-dir.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = join(ROOT, 'dist', 'main.js');
const DEFAULT_CASES = sharedPath('conformance/stream-api/cases');

const HOST = '127.0.0.1';
const PUBLIC_API_URL = 'https://stream.keboola.local';
const PUBLIC_INGEST_URL = 'https://stream-in.keboola.local';
const VARS: Vars = { projectId: 1234, defaultBranchId: 5678, storageApiToken: 'conformance-master-token-0123456789' };
const READY_TIMEOUT_MS = 10_000;
/** The check interval of a service started on seeded state: no trigger check, upload, import or retention during the scenario. */
const PAUSED_CHECK_INTERVAL = '24h';
const STOP_TIMEOUT_MS = 5_000;
const OUTPUT_TAIL_LINES = 40;

// ---------------------------------------------------------------------------------------------
// Arguments

interface Args {
  casesDir: string;
  filters: string[];
  jobs: number;
}

const USAGE = 'usage: tsx test/conformance/stream-api/run.ts [casesDir] [--filter <substring>]... [--jobs N]';

function parseArgs(argv: string[]): Args {
  const { values, positionals } = parseCliArgs({
    args: argv,
    allowPositionals: true,
    options: { filter: { type: 'string', multiple: true }, jobs: { type: 'string', short: 'j' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (positionals.length > 1) throw new Error(`unexpected argument ${positionals[1]}`);
  const jobs = values.jobs === undefined ? 2 : Number(values.jobs);
  if (!Number.isInteger(jobs) || jobs < 1) throw new Error('--jobs must be a positive integer');
  return { casesDir: positionals[0] !== undefined ? resolve(positionals[0]) : DEFAULT_CASES, filters: values.filter ?? [], jobs };
}

// ---------------------------------------------------------------------------------------------
// The service under test

/** Keeps the last lines of the child's stdout and stderr, interleaved. */
class OutputTail {
  private lines: string[] = [];
  private partial = '';
  push(chunk: Buffer): void {
    const parts = (this.partial + chunk.toString('utf8')).split('\n');
    this.partial = parts.pop() ?? '';
    this.lines.push(...parts);
    if (this.lines.length > 500) this.lines.splice(0, this.lines.length - 500);
  }
  tail(n: number): string {
    const all = this.partial ? [...this.lines, this.partial] : this.lines;
    return all.slice(-n).join('\n');
  }
}

const liveChildren = new Set<ChildProcess>();

interface Server {
  proc: ChildProcess;
  port: number;
  output: OutputTail;
  /** Resolves with the exit code (or signal name) when the child exits. */
  exited: Promise<string>;
  hasExited: () => boolean;
}

/** Ports this runner has handed out: parallel workers must never start two services on one port. */
const handedOut = new Set<number>();

/**
 * A loopback port that was free a moment ago and that no other worker of this run got. (The OS
 * may hand the same just-closed port to two workers; the second service then fails to bind, but
 * its health check could meet the first one's service before that and run the scenario there.)
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await anyFreePort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

function anyFreePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', rej);
    srv.listen(0, HOST, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => res(port));
    });
  });
}

function healthCheck(port: number): Promise<number> {
  return new Promise((res) => {
    const req = http.get({ host: HOST, port, path: '/health-check', agent: false, timeout: 1000 }, (r) => {
      r.resume();
      r.on('end', () => res(r.statusCode ?? 0));
      r.on('error', () => res(0));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => res(0));
  });
}

interface ServiceOptions {
  /** Start without the periodic checks (SLUICE_CHECK_INTERVAL of a day). */
  pauseChecks?: boolean;
}

function startChild(port: number, dataDir: string, options: ServiceOptions): Server {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SLUICE_')) env[k] = v;
  Object.assign(env, {
    SLUICE_HOST: HOST,
    SLUICE_PORT: String(port),
    SLUICE_OTLP_GRPC_PORT: '0',
    SLUICE_DATA_DIR: dataDir,
    SLUICE_MASTER_TOKEN: VARS.storageApiToken,
    SLUICE_PROJECT_ID: String(VARS.projectId),
    SLUICE_BRANCH_ID: String(VARS.defaultBranchId),
    SLUICE_PUBLIC_API_URL: PUBLIC_API_URL,
    SLUICE_PUBLIC_INGEST_URL: PUBLIC_INGEST_URL,
    SLUICE_LOG_LEVEL: 'warn',
  });
  if (options.pauseChecks) env.SLUICE_CHECK_INTERVAL = PAUSED_CHECK_INTERVAL;
  const proc = spawn(process.execPath, [MAIN, 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  liveChildren.add(proc);
  const output = new OutputTail();
  proc.stdout?.on('data', (c: Buffer) => output.push(c));
  proc.stderr?.on('data', (c: Buffer) => output.push(c));
  let done = false;
  const exited = new Promise<string>((res) => {
    proc.on('error', (err) => {
      output.push(Buffer.from(`[runner] spawn error: ${err.message}\n`));
    });
    proc.on('close', (code, signal) => {
      done = true;
      liveChildren.delete(proc);
      res(signal ?? String(code));
    });
  });
  return { proc, port, output, exited, hasExited: () => done };
}

/** Starts the service and waits for /health-check; retries on a port taken in the meantime. */
async function startServer(dataDir: string, options: ServiceOptions = {}): Promise<Server> {
  for (let attempt = 1; ; attempt++) {
    const server = startChild(await freePort(), dataDir, options);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (!server.hasExited() && Date.now() < deadline) {
      if ((await healthCheck(server.port)) === 200) return server;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (server.hasExited()) {
      const code = await server.exited;
      if (attempt < 3 && /EADDRINUSE/.test(server.output.tail(OUTPUT_TAIL_LINES))) continue;
      throw Object.assign(new Error(`the service exited before it was ready (exit ${code})`), { output: server.output });
    }
    await stopServer(server);
    throw Object.assign(new Error(`GET /health-check did not answer 200 within ${READY_TIMEOUT_MS / 1000} s`), {
      output: server.output,
    });
  }
}

/** SIGTERM, then SIGKILL after 5 s; returns a problem to report, if any. */
async function stopServer(server: Server): Promise<string | undefined> {
  if (server.hasExited()) return `the service exited during the scenario (exit ${await server.exited})`;
  server.proc.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    server.exited.then(() => false),
    new Promise<boolean>((r) => {
      timer = setTimeout(() => r(true), STOP_TIMEOUT_MS);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    server.proc.kill('SIGKILL');
    await server.exited;
    return `the service did not exit within ${STOP_TIMEOUT_MS / 1000} s of SIGTERM (killed)`;
  }
  const code = await server.exited;
  return code === '0' ? undefined : `the service exited with ${code} after SIGTERM`;
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface Result {
  status: 'PASS' | 'FAIL' | 'SKIP';
  line: string;
  details?: string;
}

const indent = (s: string, by = '    '): string => s.replace(/^(?=.)/gm, by);
const oneLine = (s: string, max = 200): string => {
  const l = s.replace(/\s*\n\s*/g, ' ');
  return l.length > max ? `${l.slice(0, max - 3)}...` : l;
};

async function runOne(casesDir: string, name: string): Promise<Result> {
  const scenario = await loadScenario(casesDir, name);
  if (scenario.steps.length === 0) return { status: 'FAIL', line: `FAIL ${name} (no NNN-step directories)` };
  const dataDir = await mkdtemp(join(tmpdir(), 'sluice-conformance-'));
  let server: Server | undefined;
  try {
    const seeded = scenario.etcdFixtureText !== undefined;
    if (seeded) {
      try {
        await loadEtcdFixture(dataDir, substitutePlaceholders(scenario.etcdFixtureText as string, VARS), { projectId: VARS.projectId });
      } catch (err) {
        return { status: 'FAIL', line: `FAIL ${name} (${ETCD_FIXTURE_FILE}: ${oneLine((err as Error).message)})` };
      }
    }
    try {
      server = await startServer(dataDir, { pauseChecks: seeded });
    } catch (err) {
      const output = (err as { output?: OutputTail }).output;
      return {
        status: 'FAIL',
        line: `FAIL ${name} (${oneLine((err as Error).message)})`,
        details: output ? `service output (last ${OUTPUT_TAIL_LINES} lines):\n${indent(output.tail(OUTPUT_TAIL_LINES))}` : undefined,
      };
    }
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    let failure;
    try {
      failure = await runScenario(scenario, {
        vars: VARS,
        target: { host: HOST, port: server.port, publicApiUrl: PUBLIC_API_URL, agent },
      });
    } finally {
      agent.destroy();
    }
    const stopProblem = await stopServer(server);
    if (!failure && !stopProblem) return { status: 'PASS', line: `PASS ${name}` };
    const reason = failure ? `step ${failure.step}: ${failure.summary}` : (stopProblem as string);
    const details = [
      failure?.details,
      failure && stopProblem ? stopProblem : undefined,
      `service output (last ${OUTPUT_TAIL_LINES} lines):\n${indent(server.output.tail(OUTPUT_TAIL_LINES) || '(none)')}`,
    ]
      .filter((x): x is string => !!x)
      .join('\n');
    return { status: 'FAIL', line: `FAIL ${name} (${oneLine(reason)})`, details };
  } catch (err) {
    if (server && !server.hasExited()) await stopServer(server);
    return { status: 'FAIL', line: `FAIL ${name} (runner error: ${oneLine((err as Error).message)})`, details: (err as Error).stack };
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (!existsSync(MAIN)) {
    process.stderr.write(`${MAIN} is missing: build the service first (npm run build).\n`);
    return 1;
  }
  if (!existsSync(args.casesDir)) {
    // The default folder is absent in a clone outside the workspace: say so and pass.
    if (args.casesDir === DEFAULT_CASES) {
      process.stdout.write(`${conformanceMissing('stream-api')}\n`);
      return 0;
    }
    process.stderr.write(`cases directory ${args.casesDir} does not exist.\n`);
    return 1;
  }

  const all = await listScenarios(args.casesDir);
  for (const w of staleSkipWarnings(all)) process.stderr.write(`${w}\n`);
  const selected = args.filters.length ? all.filter((n) => args.filters.some((f) => n.includes(f))) : all;
  if (selected.length === 0) process.stderr.write(`warning: no scenario matches ${args.filters.map((f) => JSON.stringify(f)).join(', ')}\n`);

  const started = Date.now();
  const results: Array<Result | undefined> = new Array(selected.length);
  let printed = 0;
  const flush = (): void => {
    while (printed < selected.length && results[printed]) {
      const r = results[printed] as Result;
      process.stdout.write(`${r.line}\n${r.details ? `${indent(r.details)}\n` : ''}`);
      printed++;
    }
  };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < selected.length) {
      const i = next++;
      const name = selected[i];
      const skip = SKIPPED.get(name);
      results[i] = skip !== undefined ? { status: 'SKIP', line: `SKIP ${name}: ${skip}` } : await runOne(args.casesDir, name);
      flush();
    }
  };
  await Promise.all(Array.from({ length: Math.min(args.jobs, Math.max(1, selected.length)) }, worker));
  flush();

  const count = (s: Result['status']): number => results.filter((r) => r?.status === s).length;
  const failed = count('FAIL');
  process.stdout.write(`(${selected.length} scenarios in ${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  process.stdout.write(`${count('PASS')} passed, ${failed} failed, ${count('SKIP')} skipped\n`);
  return failed > 0 || selected.length === 0 ? 1 : 0;
}

function killChildren(signal: NodeJS.Signals): void {
  for (const c of liveChildren) c.kill(signal);
}
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    killChildren('SIGTERM');
    setTimeout(() => {
      killChildren('SIGKILL');
      process.exit(130);
    }, 1000).unref();
  });
}
process.on('exit', () => killChildren('SIGKILL'));

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    killChildren('SIGKILL');
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
