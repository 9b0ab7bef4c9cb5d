/**
 * `sluice serve` as a child process (`node dist/main.js serve`), for tests that kill it: spawn,
 * wait until it is ready, kill it (SIGKILL) or stop it (SIGTERM), start it again on the same data
 * directory and port, and talk to it over loopback HTTP (Node's fetch, whose undici pool keeps
 * connections alive). Requires `npm run build` first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { forgetProcess, noteProcess } from './leftovers.js';

export const MAIN = resolve('dist/main.js');
export const CHILD_MASTER_TOKEN = '1-1-master-token-of-the-crash-tests';
const HOST = '127.0.0.1';

export interface ChildServiceOptions {
  dataDir: string;
  /** Fixed port, kept across restarts (default: a free one, picked once). */
  port?: number;
  /** More SLUICE_* variables (intervals, sizes); they win over the defaults of this helper (a log level must keep info: start() waits for the ready line). */
  env?: Record<string, string>;
  /** Flags after `serve` (e.g. ['--target', url]). */
  args?: string[];
  /** Start the process with this umask (e.g. '000'), as a shell would (POSIX sh). */
  umask?: string;
}

export interface Answer {
  status: number;
  text: string;
  json: any;
  /** The Retry-After header of an ingestion answer (send only). */
  retryAfter?: string | null;
}

/** The result of one ingestion request: an answer, or none (connection refused, reset, timeout). */
export type SendResult = ({ answered: true } & Answer) | { answered: false; error: string };

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Resolves with a port that was free on the loopback interface a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.on('error', rej);
    srv.listen(0, HOST, () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Keeps only the end of a long text (process output in assertion messages). */
export function tail(text: string, chars = 4000): string {
  return text.length > chars ? '…' + text.slice(-chars) : text;
}

export class ChildService {
  readonly dataDir: string;
  port = 0;
  /** How many processes were started (1 after the first start). */
  starts = 0;
  private child?: ChildProcess;
  private exited?: Promise<Exit>;
  private out = '';
  private readonly env: Record<string, string>;
  private readonly umask?: string;
  private readonly args: string[];

  constructor(options: ChildServiceOptions) {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" first.`);
    this.dataDir = options.dataDir;
    this.port = options.port ?? 0;
    this.env = options.env ?? {};
    this.umask = options.umask;
    this.args = options.args ?? [];
  }

  get base(): string {
    return `http://${HOST}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** True while the current process has not exited. */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Everything every process of this service printed (stdout and stderr), in order. */
  output(): string {
    return this.out;
  }

  /** Spawns the process and waits until /health-check answers 200. */
  async start(timeoutMs = 20_000): Promise<void> {
    if (this.running) throw new Error('the service is already running');
    if (this.port === 0) this.port = await freePort();
    this.starts++;
    this.out += `\n----- start #${this.starts} -----\n`;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      SLUICE_DATA_DIR: this.dataDir,
      SLUICE_HOST: HOST,
      SLUICE_PORT: String(this.port),
      SLUICE_MASTER_TOKEN: CHILD_MASTER_TOKEN,
      SLUICE_PUBLIC_API_URL: this.base,
      SLUICE_LOG_LEVEL: 'info',
      // No OTLP/gRPC listener unless a test asks for one: parallel test files would collide on 4317.
      SLUICE_OTLP_GRPC_PORT: '0',
      ...this.env,
    };
    const command = [process.execPath, MAIN, 'serve', ...this.args];
    // The shell sets the umask and becomes the service (exec: same pid).
    const child = this.umask === undefined
      ? spawn(command[0], command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('/bin/sh', ['-c', `umask ${this.umask} && exec "$@"`, 'sh', ...command], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stdout!.on('data', (d) => (this.out += d));
    child.stderr!.on('data', (d) => (this.out += d));
    noteProcess(child.pid);
    this.exited = new Promise<Exit>((res) => child.on('exit', (code, signal) => {
      forgetProcess(child.pid);
      res({ code, signal });
    }));
    const outputFrom = this.out.length;
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`the service exited while starting: ${tail(this.out)}`);
      // Our own process must say it listens: a port picked free a moment ago can have been taken by another
      // test worker's service since, whose health check would answer for ours (ours exits with EADDRINUSE).
      if (!this.out.includes('"msg":"sluice is ready', outputFrom)) {
        await sleep(25);
        continue;
      }
      try {
        const res = await fetch(`${this.base}/health-check`, { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(25);
    }
    throw new Error(`the service was not ready within ${timeoutMs} ms: ${tail(this.out)}`);
  }

  /** Kills the process (default SIGKILL: no cleanup at all) and waits for its exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    const child = this.child;
    if (!child || !this.exited) throw new Error('the service was never started');
    if (this.running) child.kill(signal);
    return this.exited;
  }

  /** Stops gracefully (SIGTERM) and waits for the exit; SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 15_000): Promise<Exit> {
    const child = this.child;
    if (!child || !this.exited) throw new Error('the service was never started');
    if (!this.running) return this.exited;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills the process if it still runs (for afterAll). */
  async dispose(): Promise<void> {
    if (this.running) await this.kill('SIGKILL');
  }

  /** A management or storage API call with the master token. */
  async call(method: string, path: string, json?: unknown, timeoutMs = 10_000): Promise<Answer> {
    const headers: Record<string, string> = { 'X-StorageApi-Token': CHILD_MASTER_TOKEN };
    if (json !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(this.base + path, {
      method,
      headers,
      body: json === undefined ? undefined : JSON.stringify(json),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return toAnswer(res.status, await res.text());
  }

  /** Calls an endpoint that answers with a task (202) and polls the task until it finished; throws unless it succeeded. */
  async task(method: string, path: string, json?: unknown, timeoutMs = 15_000): Promise<any> {
    const res = await this.call(method, path, json);
    if (res.status !== 202) throw new Error(`${method} ${path}: expected 202, got ${res.status} ${res.text}`);
    const taskPath = new URL(res.json.url as string).pathname;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const task = await this.call('GET', taskPath);
      if (task.status !== 200) throw new Error(`task ${taskPath}: HTTP ${task.status} ${task.text}`);
      if (task.json.status !== 'processing') {
        if (task.json.status !== 'success') throw new Error(`task ${taskPath} failed: ${task.text}`);
        return task.json;
      }
      if (Date.now() > deadline) throw new Error(`task ${taskPath} still processing after ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  /** Creates an HTTP source and returns the path of its ingestion URL (/stream/<project>/<source>/<secret>). */
  async createSource(sourceId: string, branch = 'default'): Promise<string> {
    await this.task('POST', `/v1/branches/${branch}/sources`, { sourceId, name: sourceId, type: 'http' });
    const source = await this.call('GET', `/v1/branches/${branch}/sources/${sourceId}`);
    if (source.status !== 200) throw new Error(`source ${sourceId}: HTTP ${source.status} ${source.text}`);
    return new URL(source.json.http.url as string).pathname;
  }

  /** Creates a table sink with the given columns, then applies `settings` (key/value pairs) if any. */
  async createSink(
    sourceId: string,
    sinkId: string,
    tableId: string,
    columns: unknown[],
    settings: Record<string, unknown> = {},
    branch = 'default',
  ): Promise<void> {
    await this.task('POST', `/v1/branches/${branch}/sources/${sourceId}/sinks`, {
      sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId, mapping: { columns } },
    });
    if (Object.keys(settings).length > 0) await this.patchSinkSettings(sourceId, sinkId, settings, branch);
  }

  async patchSinkSettings(sourceId: string, sinkId: string, settings: Record<string, unknown>, branch = 'default'): Promise<void> {
    await this.task('PATCH', `/v1/branches/${branch}/sources/${sourceId}/sinks/${sinkId}/settings`, {
      settings: Object.entries(settings).map(([key, value]) => ({ key, value })),
    });
  }

  async sinkStatistics(sourceId: string, sinkId: string, branch = 'default'): Promise<any> {
    const res = await this.call('GET', `/v1/branches/${branch}/sources/${sourceId}/sinks/${sinkId}/statistics/total`);
    if (res.status !== 200) throw new Error(`statistics of ${sourceId}/${sinkId}: HTTP ${res.status} ${res.text}`);
    return res.json;
  }

  /**
   * Sends one event to an ingestion path. Any HTTP answer is an answer; a connection that is
   * refused, reset or closed before the answer, or no answer within `timeoutMs`, is none.
   */
  async send(path: string, body: string, timeoutMs = 10_000): Promise<SendResult> {
    try {
      const res = await fetch(this.base + path, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      return { answered: true, ...toAnswer(res.status, text), retryAfter: res.headers.get('retry-after') };
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      return { answered: false, error: cause?.code ?? cause?.message ?? String(err) };
    }
  }

  async healthy(): Promise<boolean> {
    try {
      const res = await fetch(`${this.base}/health-check`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      return res.status === 200;
    } catch {
      return false;
    }
  }
}

function toAnswer(status: number, text: string): Answer {
  let json: any;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status, text, json };
}

/** Polls `probe` until it returns a value other than undefined; throws after `timeoutMs`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(everyMs);
  }
}
