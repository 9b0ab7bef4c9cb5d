/**
 * The data directory holds what only the service's user may read: source secrets and tokens in
 * the metadata, the records in the event log, the tables, the master token, staged and exported
 * data. So the service creates everything with mode 0700 (folders) or 0600 (files) whatever the
 * umask it was started with, and at start takes group and other rights away from what an older
 * version (or a permissive umask) left there.
 */
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { StartFailure } from './start-failure.js';

/** Group and other get no right on what the process creates (LMDB, DuckDB, slices, jobs' folders: all of it). */
export const PRIVATE_UMASK = 0o077;

/** What makePrivate changed, and what it could not (an entry owned by another user, a read-only mount). */
export interface PrivateModes {
  changed: number;
  failed: { path: string; error: string }[];
}

/**
 * Sets the process's umask (the main thread's; a worker thread cannot, and shares it), then
 * removes group and other rights from the data directory and everything in it, and from `files`
 * outside it (the DuckDB file at --target-path and its WAL). Symbolic links are not followed.
 */
export function makePrivate(dataDir: string, files: readonly string[] = []): PrivateModes {
  if (isMainThread) process.umask(PRIVATE_UMASK);
  const result: PrivateModes = { changed: 0, failed: [] };
  const pending = [dataDir];
  for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
    const isDirectory = restrict(path, result);
    if (!isDirectory) continue;
    try {
      for (const name of readdirSync(path)) pending.push(join(path, name));
    } catch (err) {
      result.failed.push({ path, error: (err as Error).message });
    }
  }
  for (const file of files) if (existsSync(file)) restrict(file, result);
  return result;
}

/** Takes group and other rights from one entry; true when it is a folder to walk into. */
function restrict(path: string, result: PrivateModes): boolean {
  let stat;
  try {
    stat = lstatSync(path);
  } catch {
    // Removed meanwhile (a slice uploaded, a job's folder cleaned).
    return false;
  }
  if (stat.isSymbolicLink()) return false;
  if ((stat.mode & 0o077) !== 0) {
    try {
      chmodSync(path, stat.mode & 0o700);
      result.changed++;
    } catch (err) {
      result.failed.push({ path, error: (err as Error).message });
    }
  }
  return stat.isDirectory();
}

/** The file that says which process holds the data directory. */
const PID_FILE = 'sluice.pid';

/**
 * Takes the data directory for this process, or refuses with the PID of the process that has it
 * (a second server on the same directory would fail later on a database's own lock, with a
 * message that names neither). A file left by a process that is gone (killed, a crash) is taken
 * over. Returns the release, which removes the file (at the end of a stop).
 */
export function lockDataDir(dataDir: string): () => void {
  const file = join(dataDir, PID_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
      return () => {
        try {
          if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
        } catch {
          // Already gone: nothing to release.
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = Number.parseInt(readFileSync(file, 'utf8'), 10);
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
      throw new StartFailure(`the data directory ${dataDir} is in use by another process (PID ${holder}): stop it, or start this one with another --data-dir (SLUICE_DATA_DIR).`);
    }
    // Left by a process that is gone: taken over.
    unlinkSync(file);
  }
  throw new StartFailure(`the data directory ${dataDir} is being taken by another process at this moment; try again.`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The file that says which target the data directory's sinks write to. */
const TARGET_FILE = 'target.json';

/** A target as the data directory remembers it: its kind and, for PostgreSQL, where (never a password). */
export interface TargetIdentity {
  kind: 'duckdb' | 'postgres';
  /** PostgreSQL: host:port/database. DuckDB: the file (not compared: a moved data directory moves it). */
  where: string;
}

/**
 * Checks that the data directory's sinks write to the target this start names. Its sinks, their
 * positions and the rows already imported belong to the target it was created with: started with
 * another one, the sinks would look enabled while their tables do not exist there, and every
 * import would fail. So a different target is refused, unless `adopt` says to move to it: then
 * the new target is recorded and the caller creates the sinks' tables in it ("adopted").
 * A data directory from before this check records its current target ("new").
 */
export function checkTargetOfDataDir(dataDir: string, current: TargetIdentity, adopt: boolean): 'same' | 'new' | 'adopted' {
  const file = join(dataDir, TARGET_FILE);
  const write = () => writeFileSync(file, `${JSON.stringify(current)}\n`, { mode: 0o600 });
  if (!existsSync(file)) {
    write();
    return 'new';
  }
  const recorded = JSON.parse(readFileSync(file, 'utf8')) as TargetIdentity;
  const same = recorded.kind === current.kind && (current.kind === 'duckdb' || recorded.where === current.where);
  if (same) return 'same';
  if (!adopt) {
    throw new StartFailure(`the data directory ${dataDir} was created for ${describe(recorded)}, and this start names ${describe(current)}. `
      + `Its sinks' tables and the rows imported so far are in the other one. Start with the same target, use another --data-dir, `
      + `or add --adopt-target on to move to the new one: its sinks' tables are created there and new records land there (the rows imported before stay where they are).`);
  }
  write();
  return 'adopted';
}

function describe(target: TargetIdentity): string {
  return target.kind === 'duckdb' ? `the DuckDB target (${target.where})` : `the PostgreSQL target ${target.where}`;
}
