/**
 * A PostgreSQL server in the background, for development: `initdb` once (a superuser and a
 * database both named `sluice`, a random password), then `postgres` detached from the caller,
 * listening on 127.0.0.1 only (no Unix socket). Everything of one server lives in its folder
 * (`dir`): the data directory `pgdata/`, the log `postgres.log` and `postgres.json` (pid, port,
 * password), so that `stop` and `status` from another process find it.
 *
 * Authentication: scram-sha-256 with the password of postgres.json (mode 0600), not trust: with
 * trust every local user of the machine could log in as a superuser, and a PostgreSQL superuser
 * runs programs as the server's user (COPY ... TO PROGRAM).
 *
 * Under root the server runs as nobody (binaries.ts), and its folder is usually in Sluice's data
 * directory, which `sluice serve` keeps at mode 0700: nobody cannot walk the path to it, and
 * PostgreSQL opens some files by their full path (pg_control at every checkpoint: a server that
 * lost the path PANICs). On Linux the server is therefore started in its data directory and given
 * `/proc/self/cwd` as that directory: every process of it reaches its files through its own
 * working folder, whatever the modes of the folders above.
 *
 * Readiness is read from the server's own postmaster.pid (its last line says "ready" once it
 * accepts connections, as pg_ctl reads it), so this module needs no PostgreSQL client.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { endProcess, freePort, isAlive, isFree, sleep } from '../background-process.js';
import { closedToNobody, postgresBinaries, runsAsNobody, serverUser, type PostgresBinaries } from './binaries.js';

const STATE_FILE = 'postgres.json';
const DATA = 'pgdata';
const LOG = 'postgres.log';
export const POSTGRES_HOST = '127.0.0.1';
export const POSTGRES_USER = 'sluice';
export const POSTGRES_DATABASE = 'sluice';
/** The port PostgreSQL clients assume; taken when free and no other was asked for or used before. */
export const DEFAULT_POSTGRES_PORT = 5432;

export interface PostgresOptions {
  /** The server's folder: data directory, log, state. */
  dir: string;
  /** Default: the one of the last start if free, else 5432 if free, else a free one. */
  port?: number;
  /** How long to wait for the server to accept connections (default 60 s). */
  readyTimeoutMs?: number;
  /** Progress lines (initdb, start). */
  log?: (line: string) => void;
}

export interface PostgresState {
  pid: number;
  port: number;
  host: string;
  user: string;
  database: string;
  password: string;
  /** postgres://sluice:<password>@127.0.0.1:<port>/sluice: Sluice's --target, psql's argument. */
  url: string;
  /** The server's major version (PG_VERSION of the data directory). */
  version: string;
  startedAt: string;
}

export interface PostgresStatus {
  running: boolean;
  state?: PostgresState;
}

/** The server of `dir` as its state file describes it, and whether that server still runs. */
export function postgresStatus(dir: string): PostgresStatus {
  const state = readState(dir);
  if (!state) return { running: false };
  return { running: state.pid > 0 && isOurPostmaster(dir, state.pid), state };
}

/**
 * Starts the server of `dir` unless it runs already (initdb on the first start), and resolves
 * once it accepts connections. Idempotent: a running server is only checked and its state
 * returned; asking it for another port than it has is an error.
 */
export async function startPostgres(options: PostgresOptions): Promise<PostgresState> {
  const log = options.log ?? (() => undefined);
  const dir = resolve(options.dir);
  const timeoutMs = options.readyTimeoutMs ?? 60_000;
  const current = postgresStatus(dir);
  if (current.running && current.state) {
    if (options.port !== undefined && options.port !== current.state.port) {
      throw new Error(`The server of ${dir} already runs on port ${current.state.port}: stop it first to move it to port ${options.port}.`);
    }
    await waitReady(dir, current.state.pid, timeoutMs, () => undefined);
    log(`PostgreSQL already running (pid ${current.state.pid})`);
    return current.state;
  }

  const bin = await postgresBinaries();
  mkdirSync(dir, { recursive: true });
  if (!viaWorkingFolder()) {
    const closed = closedToNobody(join(dir, DATA));
    if (closed) {
      throw new Error(
        `As root the server runs as nobody, which cannot enter ${closed.folder} (mode ${closed.mode}): ` +
        'give a --dir that everyone can reach (e.g. /var/tmp/sluice-postgres), or run as another user than root.',
      );
    }
  }
  const password = current.state?.password ?? randomBytes(18).toString('base64url');
  if (!existsSync(join(dir, DATA, 'PG_VERSION'))) await initialise(bin, dir, password, log);
  else if (!current.state) await setPassword(bin, dir, password, log);

  const port = await choosePort(options.port, current.state?.port);
  const out = openSync(join(dir, LOG), 'a', 0o600);
  const child = spawn(bin.postgres, [
    '-D', dataArgument(dir, DATA),
    '-p', String(port),
    '-c', `listen_addresses=${POSTGRES_HOST}`,
    // TCP on the loopback only: no socket file whose path could exceed the 107 bytes of a socket address.
    '-c', 'unix_socket_directories=',
  ], { ...serverUser(), cwd: join(dir, DATA), detached: true, stdio: ['ignore', out, out] });
  closeSync(out);
  if (child.pid === undefined) throw new Error(`${bin.postgres} could not be started.`);
  let exited: string | undefined;
  child.on('exit', (code, signal) => (exited = `exit code ${code ?? signal}`));
  child.on('error', (err) => (exited = err.message));
  child.unref();
  const state: PostgresState = {
    pid: child.pid,
    port,
    host: POSTGRES_HOST,
    user: POSTGRES_USER,
    database: POSTGRES_DATABASE,
    password,
    url: postgresUrl(password, port),
    version: readFileSync(join(dir, DATA, 'PG_VERSION'), 'utf8').trim(),
    startedAt: new Date().toISOString(),
  };
  writeState(dir, state);
  log(`PostgreSQL ${state.version} starting (pid ${child.pid}, port ${port}, log ${join(dir, LOG)})`);
  try {
    await waitReady(dir, child.pid, timeoutMs, () => exited);
  } catch (err) {
    await stopPostgres(dir).catch(() => undefined);
    throw new Error(`${(err as Error).message}\n${logTail(dir)}`, { cause: err });
  }
  return state;
}

/**
 * Stops the server of `dir` with a fast shutdown (SIGINT: sessions are ended, the data is
 * flushed) and waits for its exit; an immediate shutdown (SIGQUIT) after `graceMs`. True if one
 * was running.
 */
export async function stopPostgres(dir: string, graceMs = 60_000): Promise<boolean> {
  const { running, state } = postgresStatus(dir);
  if (!state || state.pid === 0) return false;
  if (running) await endProcess(state.pid, 'SIGINT', graceMs, 'SIGQUIT');
  // The state stays (pid 0): the next start takes the same port and password again.
  writeState(dir, { ...state, pid: 0 });
  return running;
}

export function postgresUrl(password: string, port: number): string {
  return `postgres://${POSTGRES_USER}:${encodeURIComponent(password)}@${POSTGRES_HOST}:${port}/${POSTGRES_DATABASE}`;
}

/**
 * initdb into a folder of its own, then, in single-user mode (no client needed), the database
 * `sluice` and the password; then renamed into place: a start that fails half-way leaves no
 * half-made data directory behind for the next one to trip on. initdb's pg_hba.conf (trust) is
 * replaced before any server listens.
 */
async function initialise(bin: PostgresBinaries, dir: string, password: string, log: (line: string) => void): Promise<void> {
  const making = `${DATA}.initdb`;
  rmSync(join(dir, making), { recursive: true, force: true });
  mkdirSync(join(dir, making), { mode: 0o700 });
  const user = serverUser();
  if (user.uid !== undefined) chownSync(join(dir, making), user.uid, user.gid!);
  log(`initdb into ${join(dir, DATA)} (binaries: ${bin.origin})`);
  await run(bin.initdb, ['-D', dataArgument(dir, making), '-U', POSTGRES_USER, '--auth=trust', '-E', 'UTF8', '--locale=C'], join(dir, making));
  // Writing over initdb's file keeps its owner (nobody under root) and its mode.
  writeFileSync(join(dir, making, 'pg_hba.conf'), PG_HBA);
  await single(bin, dir, making, `CREATE DATABASE ${POSTGRES_DATABASE};\n${alterPassword(password)}`);
  renameSync(join(dir, making), join(dir, DATA));
}

/** Who may connect: TCP from 127.0.0.1 with the password; nothing else (no socket, no other host). */
const PG_HBA = `# Written by sluice postgres start: TCP on the loopback only, with the password of postgres.json.
# TYPE  DATABASE  USER  ADDRESS        METHOD
host    all       all   127.0.0.1/32   scram-sha-256
`;

/** The password is base64url: no quote to escape. */
const alterPassword = (password: string) => `ALTER ROLE ${POSTGRES_USER} PASSWORD '${password}';\n`;

/** A data directory whose postgres.json was lost: its user gets the new password. */
async function setPassword(bin: PostgresBinaries, dir: string, password: string, log: (line: string) => void): Promise<void> {
  log(`${join(dir, STATE_FILE)} is missing: setting a new password for the user ${POSTGRES_USER}`);
  await single(bin, dir, DATA, alterPassword(password));
}

/** Statements (one a line) in single-user mode on the data directory `dir/data`, the server stopped. */
function single(bin: PostgresBinaries, dir: string, data: string, statements: string): Promise<void> {
  return run(bin.postgres, ['--single', '-D', dataArgument(dir, data), '-c', 'unix_socket_directories=', 'postgres'], join(dir, data), statements);
}

/** Under root on Linux, see the header: the data directory through the working folder. */
function viaWorkingFolder(): boolean {
  return runsAsNobody() && process.platform === 'linux';
}

/** The -D of a process started in `dir/data`. */
function dataArgument(dir: string, data: string): string {
  return viaWorkingFolder() ? '/proc/self/cwd' : join(dir, data);
}

function run(command: string, args: string[], cwd: string, input?: string): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { ...serverUser(), cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 && !/\bERROR:/.test(output)
      ? resolvePromise()
      : reject(new Error(`${command} ${args.join(' ')} failed (exit code ${code}):\n${output.trim().slice(-2000)}`))));
    child.stdin.end(input ?? '');
  });
}

/** The last port if free (a stable URL), else 5432 if free, else a free one; an asked port must be free. */
async function choosePort(wanted: number | undefined, last: number | undefined): Promise<number> {
  if (wanted !== undefined) {
    if (!(await isFree(POSTGRES_HOST, wanted))) throw new Error(`Port ${wanted} on ${POSTGRES_HOST} is in use by another process: choose another --port.`);
    return wanted;
  }
  for (const port of [last, DEFAULT_POSTGRES_PORT]) if (port !== undefined && (await isFree(POSTGRES_HOST, port))) return port;
  return freePort(POSTGRES_HOST);
}

/** postmaster.pid: pid, data directory, start time, port, socket folder, listen address, shared memory key, status. */
function postmasterLines(dir: string): string[] {
  try {
    return readFileSync(join(dir, DATA, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return [];
  }
}

/** Alive and the postmaster of this data directory: a reused pid of another program is never signalled. */
function isOurPostmaster(dir: string, pid: number): boolean {
  return isAlive(pid) && Number(postmasterLines(dir)[0]) === pid;
}

async function waitReady(dir: string, pid: number, timeoutMs: number, exited: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const why = exited() ?? (isAlive(pid) ? undefined : 'the process is gone');
    if (why) throw new Error(`PostgreSQL stopped during its start (${why}).`);
    const lines = postmasterLines(dir);
    if (Number(lines[0]) === pid && lines[7]?.trim() === 'ready') return;
    if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections within ${Math.round(timeoutMs / 1000)} s.`);
    await sleep(100);
  }
}

function readState(dir: string): PostgresState | undefined {
  try {
    return JSON.parse(readFileSync(join(dir, STATE_FILE), 'utf8')) as PostgresState;
  } catch {
    return undefined;
  }
}

/** Mode 0600: it holds the password. */
function writeState(dir: string, state: PostgresState): void {
  const file = join(dir, STATE_FILE);
  writeFileSync(`${file}.tmp`, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

function logTail(dir: string): string {
  try {
    const text = readFileSync(join(dir, LOG), 'utf8').trim();
    return text ? `--- ${join(dir, LOG)} (end) ---\n${text.slice(-3000)}` : '';
  } catch {
    return '';
  }
}
