import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';

export const MASTER_TOKEN = '1-1-master-token-of-the-integration-tests';

export interface Response {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export interface CallOptions {
  /** Token header; null sends none. Default: the master token. */
  token?: string | null;
  json?: unknown;
  /** Raw body with its content type (default application/json). */
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

/**
 * A real service on a free loopback port with its own data directory: LMDB, DuckDB and the
 * HTTP listener exactly as `sluice serve` runs them.
 */
export class TestService {
  server!: RunningServer;
  readonly dataDir: string;

  private constructor(
    private readonly env: { projectId: number; branchId: number; args: string[]; logger?: Logger },
    dataDir?: string,
  ) {
    this.dataDir = dataDir ?? mkdtempSync(join(tmpdir(), 'sluice-test-'));
  }

  /** `args`: extra `sluice serve` flags, e.g. ['--check-interval', '100ms']. */
  static async start(options: { projectId?: number; branchId?: number; dataDir?: string; args?: string[]; logger?: Logger } = {}): Promise<TestService> {
    const svc = new TestService(
      { projectId: options.projectId ?? 11, branchId: options.branchId ?? 22, args: options.args ?? [], logger: options.logger },
      options.dataDir,
    );
    await svc.open();
    return svc;
  }

  private async open(): Promise<void> {
    const config = loadConfig(
      // No OTLP/gRPC listener unless a test asks for one: parallel test files would collide on 4317.
      ['--host', '127.0.0.1', '--port', '0', '--otlp-grpc-port', '0', '--data-dir', this.dataDir, '--master-token', MASTER_TOKEN,
        '--project-id', String(this.env.projectId), '--branch-id', String(this.env.branchId),
        '--public-api-url', 'https://api.test', '--public-ingest-url', 'https://in.test', ...this.env.args],
      {},
    );
    this.server = await startServer(config, this.env.logger ?? pino({ level: 'silent' }));
  }

  get branchId(): number {
    return this.env.branchId;
  }

  get projectId(): number {
    return this.env.projectId;
  }

  /** Stops and starts again on the same data directory. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Stops the server, keeping the data directory (start() brings it back). */
  async stop(): Promise<void> {
    await this.server.close();
  }

  async start(): Promise<void> {
    await this.open();
  }

  async call(method: string, path: string, options: CallOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...options.headers };
    const token = options.token === undefined ? MASTER_TOKEN : options.token;
    if (token !== null) headers['X-StorageApi-Token'] = token;
    let body: string | undefined;
    if (options.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.body !== undefined) {
      headers['Content-Type'] = options.contentType ?? 'application/json';
      body = options.body;
    }
    const res = await fetch(this.server.address + path, { method, headers, body });
    const text = await res.text();
    let json: any;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  }

  /** Polls a task (by the URL the API returned) until it is no longer processing. */
  async waitTask(taskUrl: string, timeoutMs = 10_000): Promise<any> {
    const path = new URL(taskUrl).pathname;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await this.call('GET', path);
      if (res.status !== 200) throw new Error(`task ${path}: HTTP ${res.status} ${res.text}`);
      if (res.json.status !== 'processing') return res.json;
      if (Date.now() > deadline) throw new Error(`task ${path} still processing`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Calls an endpoint that answers with a task and waits for it; returns the finished task. */
  async task(method: string, path: string, options: CallOptions = {}): Promise<any> {
    const res = await this.call(method, path, options);
    if (res.status !== 202) throw new Error(`${method} ${path}: expected 202, got ${res.status} ${res.text}`);
    return this.waitTask(res.json.url);
  }

  /** The local path of a source's ingestion URL. */
  async ingestPath(sourceId: string): Promise<string> {
    const source = (await this.call('GET', `/v1/branches/${this.branchId}/sources/${sourceId}`)).json;
    return new URL(source.http.url).pathname;
  }

  /** Polls until `check` returns a value (not undefined), or fails after the timeout. */
  async until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async close(): Promise<void> {
    await this.server.close();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
