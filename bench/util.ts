/** Small helpers shared by the benchmarks. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A loopback port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((res) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

export function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

// ---------------------------------------------------------------------------------------------
// A Sluice server in a child process and its management API (used by the benches).

/** A server in a child process; keeps the tail of its output to explain a death. */
export class ServerProcess {
  private readonly proc: ChildProcess;
  private output = '';
  exited = false;
  exitCode: number | null = null;
  exitSignal: NodeJS.Signals | null = null;
  private readonly exitPromise: Promise<void>;

  constructor(argv: string[], env: Record<string, string>) {
    this.proc = spawn(process.execPath, argv, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString('utf8')).slice(-4000);
    };
    this.proc.stdout?.on('data', keep);
    this.proc.stderr?.on('data', keep);
    this.exitPromise = new Promise((res) =>
      this.proc.once('exit', (code, signal) => {
        this.exited = true;
        this.exitCode = code;
        this.exitSignal = signal;
        res();
      }),
    );
  }

  get pid(): number {
    return this.proc.pid ?? 0;
  }

  lastOutput(): string {
    return this.output.trim().slice(-1500) || '(none)';
  }

  describeExit(): string {
    return `code ${this.exitCode}, signal ${this.exitSignal}; last output: ${this.lastOutput()}`;
  }

  /** Waits until GET /health-check answers. */
  async ready(base: string, timeoutMs = 30_000): Promise<void> {
    const started = performance.now();
    for (;;) {
      if (this.exited) throw new Error(`the server exited before it was ready: ${this.describeExit()}`);
      try {
        if ((await fetch(`${base}/health-check`)).ok) return;
      } catch {
        // not listening yet
      }
      if (performance.now() - started > timeoutMs) throw new Error('the server was not ready within 30 s');
      await sleep(20);
    }
  }

  /** SIGTERM, then SIGKILL after `graceMs`; true when it stopped by itself. */
  async stop(graceMs = 15_000): Promise<boolean> {
    if (this.exited) return true;
    this.proc.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([this.exitPromise.then(() => true), new Promise<boolean>((res) => (timer = setTimeout(() => res(false), graceMs)))]);
    clearTimeout(timer);
    if (!inTime) {
      this.proc.kill('SIGKILL');
      await this.exitPromise;
    }
    return inTime;
  }
}

/** A server of `startBenchServer`: its process, API base URL and data directory. */
export interface BenchServer {
  server: ServerProcess;
  base: string;
  /** Stops the process and removes its data directory. */
  close(): Promise<void>;
}

/**
 * `node dist/main.js serve` with `npm start`'s node flags, on a free loopback port, a fresh data
 * directory (`sluice-bench-<name>-*` in the temporary folder), master token `token`, log level
 * warn, OTLP/gRPC off, and `env` on top (`nodeArgs` before the script, e.g. `--cpu-prof`);
 * resolves once it is ready.
 */
export async function startBenchServer(main: string, name: string, token: string, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<BenchServer> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), `sluice-bench-${name}-`));
  const server = new ServerProcess([...serveNodeFlags(), ...nodeArgs, main, 'serve'], {
    SLUICE_PORT: String(port),
    SLUICE_HOST: '127.0.0.1',
    SLUICE_DATA_DIR: dir,
    SLUICE_MASTER_TOKEN: token,
    SLUICE_LOG_LEVEL: 'warn',
    // No OTLP/gRPC listener unless a bench asks for one (its default port, 4317, may be taken).
    SLUICE_OTLP_GRPC_PORT: '0',
    ...env,
  });
  const close = async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await server.ready(base);
  } catch (err) {
    await close();
    throw err;
  }
  return { server, base, close };
}

/** Calls the management API with the master token; throws on an error status. */
export async function apiCall(base: string, token: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(base + path, {
    method,
    headers: { 'x-storageapi-token': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text) as unknown;
}

/** Polls a management task until it is no longer processing; a task that failed throws. */
export async function waitTask(base: string, token: string, started: unknown): Promise<void> {
  let t = started as { url: string; status: string };
  const path = new URL(t.url).pathname;
  const deadline = performance.now() + 30_000;
  while (t.status === 'processing') {
    if (performance.now() > deadline) throw new Error(`task ${path} still processing after 30 s`);
    await sleep(20);
    t = (await apiCall(base, token, 'GET', path)) as { url: string; status: string };
  }
  if (t.status !== 'success') throw new Error(`task ${path} ended ${JSON.stringify(t)}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * The Node flags of `npm start` (package.json), so that the benchmarks run the server as users
 * do; the baselines get them too (they change nothing there: `--max-semi-space-size` only
 * matters to a process that allocates as much short-lived garbage as the sink pipeline).
 */
export function serveNodeFlags(): string[] {
  const start = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start.split(/\s+/);
  if (start[0] !== 'node') throw new Error(`package.json start script does not run node: ${start.join(' ')}`);
  return start.slice(1, start.indexOf('dist/main.js'));
}

// ---------------------------------------------------------------------------------------------
// CPU readings from /proc.

const CLK_TCK = clockTicks();

/** User + system CPU seconds of a process (all its threads) from /proc; 0 where /proc is missing. */
export function procCpuSec(pid: number | string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat(5) (utime, stime); the split starts at field 3.
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** CPU seconds the whole machine spent busy (all cores; /proc/stat), 0 where /proc is missing. */
export function machineBusySec(): number {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    const busy = fields.slice(0, 8).reduce((a, b) => a + b, 0) - fields[3] - fields[4];
    return busy / CLK_TCK;
  } catch {
    return 0;
  }
}

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/**
 * CPU seconds of a process's main thread (/proc/<pid>/task/<pid>/stat); 0 where /proc is
 * missing. Node names all its threads `node`, so the main thread is the only one /proc tells
 * apart from the others (worker threads, libuv's pool, V8's helpers, DuckDB's).
 */
/**
 * Resident memory of a process, bytes, or zeros once it is gone: `anon` is its own memory (heaps,
 * buffers), `file` the pages of mapped files it touched (the LMDB event log and metadata are
 * memory-mapped: the kernel's page cache, given back under pressure, growing with the data).
 */
export function residentBytes(pid: number): { anon: number; file: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
    return { anon: kb('RssAnon'), file: kb('RssFile') + kb('RssShmem') };
  } catch {
    return { anon: 0, file: 0 };
  }
}

export function mainThreadCpuSec(pid: number): number {
  return procCpuSec(`${pid}/task/${pid}`);
}
