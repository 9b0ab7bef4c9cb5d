import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

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
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
