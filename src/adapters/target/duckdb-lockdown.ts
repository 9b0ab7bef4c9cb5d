/**
 * What the DuckDB database of the tables may do besides its own file. DuckDB's settings are the
 * database's, not a connection's (memory_limit, enable_external_access, lock_configuration are
 * all GLOBAL), and a second database on the same file in one process reads a snapshot that goes
 * stale and can break at the writer's next checkpoint; so the read-only SQL endpoint's bounds
 * apply to the one database, imports and exports included:
 *
 * - no file outside `<tables file>.io/`: imports read their CSV files through a hard link made
 *   there (a copy across file systems), exports are written there and then moved into place;
 * - no extension installed or loaded on demand, and no setting changed after the start;
 * - memory and temporary disk at most the given limit.
 *
 * A statement the endpoint's check let through by mistake still cannot read /etc/passwd, write
 * a file, attach a database, load an extension or raise a limit.
 */
import { randomUUID } from 'node:crypto';
import { copyFile, link, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { duckLiteral } from './parquet.js';

/** The only folder the database may read or write files in: `<tables file>.io`. */
export function ioDirOf(tablesPath: string): string {
  return `${resolve(tablesPath)}.io`;
}

/** DuckDB's options at the database's creation: its memory and temporary disk limits. */
export function memoryOptions(memoryLimitBytes: number | undefined): Record<string, string> {
  if (memoryLimitBytes === undefined) return {};
  const limit = `${Math.floor(memoryLimitBytes)}B`;
  return { memory_limit: limit, max_temp_directory_size: limit };
}

/**
 * Locks the database down, on its first connection, before anything else runs: files only in
 * `ioDir`, no extensions on demand, the configuration locked (in this order: a locked
 * configuration refuses the settings before it).
 */
export async function lockDown(conn: DuckDBConnection, ioDir: string): Promise<void> {
  await conn.run(`SET allowed_directories = [${duckLiteral(`${ioDir}/`)}]`);
  await conn.run('SET enable_external_access = false');
  await conn.run('SET autoinstall_known_extensions = false');
  await conn.run('SET autoload_known_extensions = false');
  await conn.run('SET lock_configuration = true');
}

/** Removes what an earlier process left in `ioDir` (only when no other process shares it). */
export async function clearIoDir(ioDir: string): Promise<void> {
  for (const name of await readdir(ioDir).catch(() => [] as string[])) await rm(join(ioDir, name), { recursive: true, force: true });
}

/**
 * The files at `paths` made readable to the database: linked into `ioDir` under new names that
 * keep their endings (read_csv decompresses by ".gz"); `remove()` deletes the links.
 */
export async function linkIn(ioDir: string, paths: readonly string[]): Promise<{ paths: string[]; remove(): Promise<void> }> {
  const linked: string[] = [];
  const remove = async () => {
    await Promise.all(linked.map((p) => rm(p, { force: true })));
  };
  try {
    await makeIoDir(ioDir);
    for (const path of paths) {
      const inside = join(ioDir, `${randomUUID()}-${basename(path)}`);
      try {
        await link(path, inside);
      } catch (err) {
        // Another file system, or a link the kernel refuses (protected_hardlinks): a copy.
        if (!['EXDEV', 'EPERM', 'EMLINK', 'ENOTSUP'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
        await copyFile(path, inside);
      }
      linked.push(inside);
    }
  } catch (err) {
    await remove();
    throw err;
  }
  return { paths: linked, remove };
}

/** A new path in `ioDir` (made when missing) for a file that will be moved to `finalPath` (moveOut). */
export async function ioPathFor(ioDir: string, finalPath: string): Promise<string> {
  await makeIoDir(ioDir);
  return join(ioDir, `${randomUUID()}-${basename(finalPath)}`);
}

/** The folder is made on first use, readable by this user alone (table data passes through it). */
async function makeIoDir(ioDir: string): Promise<void> {
  await mkdir(ioDir, { recursive: true, mode: 0o700 });
}

/** Moves a file the database wrote in its folder to where the caller wanted it. */
export async function moveOut(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await copyFile(from, to);
    await rm(from, { force: true });
  }
}
