/**
 * `sluice postgres start|stop|status` as a user runs it (`node dist/main.js postgres ...`): a
 * server in the background in a folder of its own, its URL taken by `pg` and by `sluice serve
 * --target`, idempotent starts, stop, status and --purge. Requires `npm run build` first.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ChildService, freePort, MAIN, until } from '../helpers/child-service.js';
import { forgetProcess, noteProcess } from '../helpers/leftovers.js';
import { IMPORT_COUNT, UPLOAD_INTERVAL } from '../helpers/sink-settings.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI as a child process; the environment has no SLUICE_* variable of the test run. */
function sluice(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

async function query(url: string, sql: string): Promise<any[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

const root = mkdtempSync(join(tmpdir(), 'sluice-postgres-cli-'));
// mkdtemp makes 0700; as root the server runs as nobody, who must reach its folder.
chmodSync(root, 0o755);
const dir = join(root, 'pg');
const pids = new Map<string, number>();
/** The server's pid in its state file (remembered: --purge deletes the file). */
const statePid = (folder = dir): number => {
  try {
    pids.set(folder, (JSON.parse(readFileSync(join(folder, 'postgres.json'), 'utf8')) as { pid: number }).pid);
  } catch {
    // purged: the last one read
  }
  return pids.get(folder) ?? 0;
};
let port = 0;
let url = '';
let service: ChildService | undefined;

describe('sluice postgres start|stop|status', () => {
  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" first.`);
    port = await freePort();
  });
  afterAll(async () => {
    await service?.dispose();
    for (const folder of [dir, join(root, 'private-data', 'postgres')]) {
      if (existsSync(join(folder, 'postgres.json'))) await sluice(['postgres', 'stop', '--dir', folder]);
    }
    rmSync(root, { recursive: true, force: true });
  }, 90_000);

  it('start initialises the folder, starts in the background and prints the --target URL and a psql line', async () => {
    const run = await sluice(['postgres', 'start', '--dir', dir, '--port', String(port)]);
    expect(run.code, run.stderr).toBe(0);
    noteProcess(statePid());
    const lines = run.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    url = lines[0];
    expect(url).toMatch(new RegExp(`^postgres://sluice:[A-Za-z0-9_-]{20,}@127\\.0\\.0\\.1:${port}/sluice$`));
    expect(lines[1]).toBe(`psql ${url}`);
    expect(run.stderr).toMatch(/sluice postgres: initdb into .*pgdata/);
    expect(run.stderr).toMatch(/ready after/);
    expect(existsSync(join(dir, 'postgres.log'))).toBe(true);
    // The state holds the password: the caller's alone.
    expect(statSync(join(dir, 'postgres.json')).mode & 0o777).toBe(0o600);
  }, 90_000);

  it('status answers 0 with the URL while it runs', async () => {
    const run = await sluice(['postgres', 'status', '--dir', dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`running ${url}`);
  });

  it('the URL logs in with pg as the user and database sluice, on the loopback only, and a wrong password is refused', async () => {
    const [row] = await query(url, "SELECT current_user AS u, current_database() AS d, current_setting('listen_addresses') AS l");
    expect(row).toEqual({ u: 'sluice', d: 'sluice', l: '127.0.0.1' });
    const wrong = url.replace(/:[^:@/]+@/, ':not-the-password@');
    await expect(query(wrong, 'SELECT 1')).rejects.toThrow(/password authentication failed/);
  });

  it('sluice serve --target <the URL> creates a table from a sink there and its rows land', async () => {
    service = new ChildService({
      dataDir: join(root, 'sluice-data'),
      args: ['--target', url],
      env: { SLUICE_CHECK_INTERVAL: '100ms', SLUICE_UPLOAD_MIN_INTERVAL: '300ms', SLUICE_IMPORT_MIN_INTERVAL: '500ms' },
    });
    await service.start(60_000);
    const path = await service.createSource('events');
    await service.createSink('events', 'raw', 'in.c-events.raw', [{ type: 'path', name: 'id', path: 'id', rawString: true }], { [UPLOAD_INTERVAL]: '1s', [IMPORT_COUNT]: 1 });
    const tables = await query(url, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'in.c-events'");
    expect(tables.map((t) => t.table_name)).toEqual(['raw']);
    for (const id of ['a', 'b', 'c']) {
      const sent = await service.send(path, JSON.stringify({ id }));
      expect(sent.answered && sent.status).toBe(200);
    }
    const rows = await until('3 rows in "in.c-events".raw', async () => {
      const found = await query(url, 'SELECT id FROM "in.c-events".raw ORDER BY id');
      return found.length >= 3 ? found : undefined;
    }, 60_000);
    expect(rows.map((r) => r.id)).toEqual(['a', 'b', 'c']);
    await service.stop();
  }, 120_000);

  it('start again is idempotent: the same server, the same two lines', async () => {
    const pid = statePid();
    const run = await sluice(['postgres', 'start', '--dir', dir]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${url}\npsql ${url}\n`);
    expect(run.stderr).toContain('already running');
    expect(statePid()).toBe(pid);
    // Another port for a running server is refused, not silently ignored.
    const other = await sluice(['postgres', 'start', '--dir', dir, '--port', String(port === 65535 ? port - 1 : port + 1)]);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(`already runs on port ${port}`);
  }, 60_000);

  it('stop shuts the server down; status then answers 3; start brings it back on the same URL with its data', async () => {
    const pid = statePid();
    const stop = await sluice(['postgres', 'stop', '--dir', dir]);
    expect(stop.code, stop.stderr).toBe(0);
    expect(stop.stderr).toContain('PostgreSQL stopped');
    forgetProcess(pid);
    expect(() => process.kill(pid, 0)).toThrow();
    await expect(query(url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);
    const status = await sluice(['postgres', 'status', '--dir', dir]);
    expect(status.code).toBe(3);
    expect(status.stdout).toMatch(/^not running/);

    // No --port: the last one (free again), so the URL the service was given stays right.
    const start = await sluice(['postgres', 'start', '--dir', dir]);
    expect(start.code, start.stderr).toBe(0);
    noteProcess(statePid());
    expect(start.stdout).toBe(`${url}\npsql ${url}\n`);
    expect(start.stderr).not.toContain('initdb');
    expect((await query(url, 'SELECT count(*)::int AS n FROM "in.c-events".raw'))[0].n).toBe(3);
  }, 90_000);

  it('stop --purge deletes the folder', async () => {
    const pid = statePid();
    const run = await sluice(['postgres', 'stop', '--dir', dir, '--purge']);
    expect(run.code, run.stderr).toBe(0);
    forgetProcess(pid);
    expect(existsSync(dir)).toBe(false);
    const status = await sluice(['postgres', 'status', '--dir', dir]);
    expect(status.code).toBe(3);
  }, 60_000);

  it('the folder defaults to <data-dir>/postgres (SLUICE_DATA_DIR or --data-dir; SLUICE_POSTGRES_DIR wins)', async () => {
    const dataDir = join(root, 'data');
    expect((await sluice(['postgres', 'status'], { SLUICE_DATA_DIR: dataDir })).stdout).toBe(`not running (folder ${join(dataDir, 'postgres')})\n`);
    expect((await sluice(['postgres', 'status', '--data-dir', dataDir])).stdout).toBe(`not running (folder ${join(dataDir, 'postgres')})\n`);
    expect((await sluice(['postgres', 'status'], { SLUICE_DATA_DIR: dataDir, SLUICE_POSTGRES_DIR: dir })).stdout).toBe(`not running (folder ${dir})\n`);
  });

  it('a folder in a private data directory (mode 0700, as sluice serve keeps it): starts, checkpoints, stops cleanly and starts again, also as root', async () => {
    const closed = join(root, 'private-data');
    mkdirSync(closed, { mode: 0o700 });
    chmodSync(closed, 0o700);
    const inside = join(closed, 'postgres');
    const first = await sluice(['postgres', 'start', '--dir', inside, '--port', String(await freePort())]);
    expect(first.code, first.stderr).toBe(0);
    const pid = statePid(inside);
    noteProcess(pid);
    const target = first.stdout.split('\n')[0];
    // What the first `sluice serve` does to its data directory while PostgreSQL runs in it.
    chmodSync(closed, 0o700);
    await query(target, 'CREATE TABLE t (n int); INSERT INTO t VALUES (1); CHECKPOINT');
    expect((await sluice(['postgres', 'stop', '--dir', inside])).code).toBe(0);
    forgetProcess(pid);
    expect(readFileSync(join(inside, 'postgres.log'), 'utf8')).not.toMatch(/PANIC|abnormal/);
    const again = await sluice(['postgres', 'start', '--dir', inside]);
    expect(again.code, again.stderr).toBe(0);
    noteProcess(statePid(inside));
    expect((await query(target, 'SELECT n FROM t'))).toEqual([{ n: 1 }]);
    const purge = await sluice(['postgres', 'stop', '--dir', inside, '--purge']);
    expect(purge.code, purge.stderr).toBe(0);
    forgetProcess(statePid(inside));
  }, 120_000);

  it('usage errors exit 2; --help exits 0', async () => {
    for (const args of [['postgres'], ['postgres', 'restart'], ['postgres', 'start', '--port', 'x'], ['postgres', 'status', '--prot', '1'], ['postgres', 'start', '--purge']]) {
      const run = await sluice(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout, args.join(' ')).toBe('');
    }
    const help = await sluice(['postgres', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: sluice postgres <start|stop|status>');
  });
});
