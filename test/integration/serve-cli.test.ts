import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { POSTGRES_START_TIMEOUT_MS, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import pgLib from 'pg';

const MAIN = resolve('dist/main.js');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function freePort(): Promise<number> {
  return new Promise((res) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });
}

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function serve(env: Record<string, string>, args: string[] = []): Proc {
  let out = '';
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], { env: { PATH: process.env.PATH ?? '', SLUICE_OTLP_GRPC_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  return { child, output: () => out, exited };
}

async function ready(port: number, proc: Proc): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health-check`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not ready: ${proc.output()}`);
}

describe('sluice serve', () => {
  beforeAll(() => {
    // npm test builds before running vitest; a bare vitest run needs `npm run build` first.
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" first.`);
  });

  it('generates the master token once (0600), serves, and stops cleanly on SIGTERM', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-serve-'));
    dirs.push(dataDir);
    const port = await freePort();
    const env = { SLUICE_DATA_DIR: dataDir, SLUICE_PORT: String(port), SLUICE_HOST: '127.0.0.1', SLUICE_PROJECT_ID: '42' };

    const first = serve(env);
    await ready(port, first);
    const file = join(dataDir, 'master-token');
    const token = readFileSync(file, 'utf8').trim();
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(first.output()).toContain(token);
    const verify = await fetch(`http://127.0.0.1:${port}/v2/storage/tokens/verify`, { headers: { 'X-StorageApi-Token': token } });
    expect(verify.status).toBe(200);
    expect(((await verify.json()) as { isMasterToken: boolean }).isMasterToken).toBe(true);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toMatch(/shutting down/);

    const second = serve(env);
    await ready(port, second);
    expect(second.output()).not.toContain(token);
    const again = await fetch(`http://127.0.0.1:${port}/v2/storage/tokens/verify`, { headers: { 'X-StorageApi-Token': token } });
    expect(again.status).toBe(200);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  });

  it('ends a start that cannot listen or whose data directory is taken with one line; the master token shows on the first start that succeeds', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-serve-fail-'));
    dirs.push(dataDir);
    // A port someone else holds.
    const holder = createServer();
    await new Promise<void>((res) => holder.listen(0, '127.0.0.1', () => res()));
    const taken = (holder.address() as { port: number }).port;
    const env = { SLUICE_DATA_DIR: dataDir, SLUICE_HOST: '127.0.0.1' };
    const busy = serve({ ...env, SLUICE_PORT: String(taken) });
    expect(await busy.exited).toBe(1);
    expect(busy.output().trim().split('\n').at(-1)).toBe(`Cannot start: port ${taken} on 127.0.0.1 (the API) is in use by another process: stop it, or start with another --port (SLUICE_PORT).`);
    expect(busy.output()).not.toMatch(/EADDRINUSE| {4}at /);
    holder.close();
    const token = readFileSync(join(dataDir, 'master-token'), 'utf8').trim();
    expect(busy.output()).not.toContain(token);

    // The first start that succeeds prints the token the failed one generated.
    const port = await freePort();
    const first = serve({ ...env, SLUICE_PORT: String(port) });
    await ready(port, first);
    expect(first.output()).toContain(`Master token (saved to ${join(dataDir, 'master-token')}): ${token}`);
    expect(first.output()).toMatch(/sluice is ready: the API at http:\/\/localhost:\d+, the console at http:\/\/localhost:\d+\/console\/, the API docs at http:\/\/localhost:\d+\/v1\/documentation\/; the master token is in /);

    // A second server on the same data directory is refused, naming the first one's PID.
    const second = serve({ ...env, SLUICE_PORT: String(await freePort()) });
    expect(await second.exited).toBe(1);
    expect(second.output().trim().split('\n').at(-1)).toBe(`Cannot start: the data directory ${dataDir} is in use by another process (PID ${first.child.pid}): stop it, or start this one with another --data-dir (SLUICE_DATA_DIR).`);
    first.child.kill('SIGKILL');
    await first.exited;

    // Not a terminal: JSON lines; no line per request at info.
    expect(first.output()).toContain('"msg":"sluice is ready: the API at');
    expect(first.output()).not.toMatch(/incoming request|request completed/);

    // A killed server leaves its PID behind; the next start takes the directory over, and does not show the token again.
    const third = serve({ ...env, SLUICE_PORT: String(port) }, ['--log-format', 'pretty']);
    await ready(port, third);
    expect(third.output()).not.toContain(token);
    expect(third.output()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: sluice is ready: the API at http:\/\/localhost:\d+, /m);
    expect(third.output()).toMatch(/^ {4}console: "http:\/\/localhost:\d+\/console\/"$/m);
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
    expect(existsSync(join(dataDir, 'sluice.pid'))).toBe(false);
  });

  it('refuses bad configuration with a clear message', async () => {
    // A wrong configuration is a usage error: exit code 2, as the client commands have it.
    const bad = serve({ SLUICE_PORT: 'eighty' });
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toMatch(/Configuration error: port must be a non-negative integer, got "eighty"/);
    const unknown = serve({}, ['--colour', 'red']);
    expect(await unknown.exited).toBe(2);
    expect(unknown.output()).toMatch(/Unknown option "--colour"/);
  });

  it('ends with one clear line for a target URL that does not parse or a database that cannot be reached', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-serve-target-'));
    dirs.push(dataDir);
    const notPostgres = serve({ SLUICE_DATA_DIR: dataDir }, ['--target', 'mysql://u:p@db/x']);
    expect(await notPostgres.exited).toBe(2);
    expect(notPostgres.output().trim()).toBe('Configuration error: The target must be a PostgreSQL URL like postgres://user:password@host:5432/database (the DuckDB file is --target-path), got a "mysql:" URL.');
    const both = serve({ SLUICE_DATA_DIR: dataDir, SLUICE_TARGET_PATH: join(dataDir, 't.duckdb') }, ['--target', 'postgres://u@db/x']);
    expect(await both.exited).toBe(2);
    expect(both.output()).toMatch(/^Configuration error: Choose one target/);
    const port = await freePort();
    const down = serve({ SLUICE_DATA_DIR: dataDir, SLUICE_PORT: String(await freePort()) }, ['--target', `postgres://sluice:s3cret@127.0.0.1:${port}/tables`]);
    expect(await down.exited).toBe(1);
    const lines = down.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^Cannot start: PostgreSQL at 127\\.0\\.0\\.1:${port}/tables is not reachable: .*ECONNREFUSED`));
    expect(down.output()).not.toContain('s3cret');
  });
});

describe('a data directory and its target', () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await startTestPostgres();
  }, POSTGRES_START_TIMEOUT_MS);
  afterAll(async () => pg?.stop());

  /** A data directory of the DuckDB target with a source and a sink (its table made), the server stopped. */
  async function duckDbWalkThrough(name: string) {
    const dataDir = mkdtempSync(join(tmpdir(), `sluice-serve-${name}-`));
    dirs.push(dataDir);
    const port = await freePort();
    const env = { SLUICE_DATA_DIR: dataDir, SLUICE_PORT: String(port), SLUICE_HOST: '127.0.0.1', SLUICE_MASTER_TOKEN: `${name}-master-token` };
    const api = (method: string, path: string, body?: unknown) => fetch(`http://127.0.0.1:${port}${path}`, {
      method, headers: { 'X-StorageApi-Token': `${name}-master-token`, ...(body ? { 'Content-Type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined,
    });
    const duck = serve(env);
    await ready(port, duck);
    expect((await api('POST', '/v1/branches/default/sources', { sourceId: 'events', name: 'events', type: 'http' })).status).toBe(202);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await api('POST', '/v1/branches/default/sources/events/sinks', { sinkId: 'raw', name: 'raw', type: 'table', table: { type: 'keboola', tableId: 'in.c-events.raw', mapping: { columns: [{ type: 'body', name: 'body' }] } } })).status).toBe(202);
    await new Promise((r) => setTimeout(r, 1500));
    duck.child.kill('SIGTERM');
    expect(await duck.exited).toBe(0);
    return { dataDir, port, env, api };
  }

  it('refuses a start with another target than the data directory was made for, and moves to it with --adopt-target on', async () => {
    // A DuckDB walk-through: a source and a sink with its table.
    const { dataDir, port, env, api } = await duckDbWalkThrough('adopt');

    // The same data directory with PostgreSQL: refused in one line, nothing started.
    const url = await pg.createDatabase('adopt');
    const refused = serve(env, ['--target', url]);
    expect(await refused.exited).toBe(1);
    const where = new URL(url);
    expect(refused.output().trim().split('\n').at(-1)).toBe(`Cannot start: the data directory ${dataDir} was created for the DuckDB target (${join(dataDir, 'tables.duckdb')}), `
      + `and this start names the PostgreSQL target ${where.hostname}:${where.port}${where.pathname}. Its sinks' tables and the rows imported so far are in the other one. `
      + 'Start with the same target, use another --data-dir, or add --adopt-target on to move to the new one: its sinks\' tables are created there and new records land there (the rows imported before stay where they are).');

    // Adopted: the sink's table exists in PostgreSQL, and the next start needs no flag.
    const adopted = serve(env, ['--target', url, '--adopt-target', 'on']);
    await ready(port, adopted);
    expect(adopted.output()).toContain("its sinks' tables were created here");
    expect((await api('GET', '/v2/storage/tables/in.c-events.raw')).status).toBe(200);
    adopted.child.kill('SIGTERM');
    expect(await adopted.exited).toBe(0);
    const again = serve(env, ['--target', url]);
    await ready(port, again);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  }, 120_000);

  it('creates the missing tables of the sinks a data directory new to its target already knows (a node joining a cluster, a directory from before target.json)', async () => {
    const { dataDir, port, env, api } = await duckDbWalkThrough('new-target');

    // The sinks are known, the target is new and nothing recorded another one: no refusal, and the table is made.
    rmSync(join(dataDir, 'target.json'));
    const url = await pg.createDatabase('newtarget');
    const joined = serve(env, ['--target', url]);
    await ready(port, joined);
    expect(joined.output()).toContain("the sinks' tables are in place");
    const table = await api('GET', '/v2/storage/tables/in.c-events.raw');
    expect(table.status).toBe(200);
    // In PostgreSQL itself, not only in Sluice's view of it.
    const client = new pgLib.Client({ connectionString: url });
    await client.connect();
    try {
      const found = await client.query("SELECT 1 FROM information_schema.tables WHERE table_schema = 'in.c-events' AND table_name = 'raw'");
      expect(found.rowCount).toBe(1);
    } finally {
      await client.end();
    }
    joined.child.kill('SIGTERM');
    expect(await joined.exited).toBe(0);
  }, 120_000);
});
