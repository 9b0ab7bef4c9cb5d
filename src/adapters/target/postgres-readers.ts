/**
 * Who a read-only SQL query runs as on PostgreSQL. The statement is planned as Sluice's user
 * (the plan names every relation it reads, and the caller checks those against the token), but
 * what it runs can reach further than its plan shows: `query_to_xml('SELECT ...')`,
 * `table_to_xml(...)` and `ts_stat('SELECT ...')` run SQL text, and `set_config('role', ...)`
 * takes back any role the session's login user may become. So the query runs in a session that
 * logs in as a role of its own (`sluice_sql_<hash>`, one per set of buckets read), which may read
 * exactly those buckets' tables and nothing else: no superuser, no file rights, no membership
 * of any role to switch to. Such roles are made when Sluice's user may create roles; they log in
 * with a password derived from a secret kept in the `_sluice` schema (the same on every node),
 * so pg_hba.conf must let them connect like Sluice's user.
 *
 * Without the right to create roles, queries run as Sluice's user itself ('owner' mode), which
 * reads every bucket: a query then needs a token that may read every bucket (the caller is told
 * so by relations marked `reachable`). When that user is a superuser or may read or write server
 * files, running queries as it could reach past the tables: read-only SQL is off ('unavailable').
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import pg from 'pg';
import { byteSizeString } from '../../pipeline/units.js';
import { ident, literal, pgName } from './postgres-names.js';

export type ReaderMode =
  | { kind: 'roles' }
  | { kind: 'owner' }
  | { kind: 'unavailable'; reason: string };

export interface ReaderOptions {
  /** The target's URL (Sluice's user); readers log in to the same server and database. */
  url: string;
  /** Connections per reader role at most: the queries that run at once. */
  connections: number;
  /** Each reader role's temp_file_limit, when Sluice's user may set it (a superuser's right). */
  memoryLimitBytes?: number;
  connectTimeoutMs: number;
  onIdleError?: (err: Error) => void;
}

const ROLE_PREFIX = 'sluice_sql_';
/** Reader pools kept open at most (one per set of buckets recently queried). */
const MAX_POOLS = 8;
/** pg_advisory_xact_lock key: creating or granting reader roles. */
const ROLE_LOCK = 0x51_1c_e0_03;
/** Server roles whose members may read or write server files or run programs. */
const FILE_ROLES = ['pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program'];

export class PostgresReaders {
  private readonly pools = new Map<string, pg.Pool>();
  private secret = '';
  private database = '';
  /** Whether ALTER ROLE ... SET temp_file_limit works for Sluice's user (decided on first try). */
  private tempLimit: 'unknown' | 'applied' | 'not allowed' = 'unknown';

  private constructor(
    private readonly options: ReaderOptions,
    readonly mode: ReaderMode,
  ) {}

  /**
   * Decides how queries run (the class comment) with Sluice's own connection `admin`, and
   * checks that a reader role can log in. `log` hears why a weaker mode was chosen.
   */
  static async open(admin: pg.Pool, options: ReaderOptions, log: (message: string) => void): Promise<PostgresReaders> {
    const { rows: [me] } = await admin.query(
      `SELECT r.rolsuper AS super, r.rolcreaterole AS createrole, current_database() AS database,
              ${FILE_ROLES.map((role) => `pg_has_role(current_user, ${literal(role)}, 'MEMBER')`).join(' OR ')} AS files
         FROM pg_roles r WHERE r.rolname = current_user`,
    );
    const probe = new PostgresReaders(options, { kind: 'roles' });
    probe.database = String(me.database);
    let why = 'the database user of Sluice may not create roles';
    if (me.super || me.createrole) {
      try {
        probe.secret = await readerSecret(admin);
        const role = await probe.ensureRole(admin, []);
        await probe.poolFor(role).query('SELECT 1');
        return probe;
      } catch (err) {
        why = `its reader roles could not be set up or log in (${(err as Error).message})`;
        await probe.end();
      }
    }
    if (me.super || me.files) {
      return new PostgresReaders(options, {
        kind: 'unavailable',
        reason: `Read-only SQL is off on this PostgreSQL target: ${why}, and queries would run as Sluice's user, which is a superuser or may read or write server files. Give that user CREATEROLE and let the ${ROLE_PREFIX}* roles log in like it (pg_hba.conf), or use a user without those rights.`,
      });
    }
    log(`read-only SQL queries run as Sluice's own database user, so they need a token that may read every bucket: ${why}`);
    return new PostgresReaders(options, { kind: 'owner' });
  }

  /** The role queries over exactly `bucketIds` run as (ensureRole makes it). */
  roleName(bucketIds: readonly string[]): string {
    const key = [this.database, ...[...new Set(bucketIds)].sort()].join('\u0000');
    return `${ROLE_PREFIX}${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
  }

  /**
   * A query over `bucketIds` can run as its role now: the role exists and may use each bucket's
   * schema. Read in the planning transaction, so that a role is made or granted only once.
   */
  async ready(client: pg.PoolClient, bucketIds: readonly string[]): Promise<boolean> {
    const role = this.roleName(bucketIds);
    // Two statements: has_schema_privilege fails for a role that does not exist.
    if (!(await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount) return false;
    const { rows } = await client.query(
      `SELECT coalesce(bool_and(has_schema_privilege($1, n.oid, 'USAGE')), true) AS ready
         FROM pg_namespace n WHERE n.nspname = ANY($2::text[])`,
      [role, bucketIds.map(pgName)],
    );
    return rows[0].ready === true;
  }

  /**
   * Makes the role of `bucketIds` (when missing) with the right to read their tables, also
   * tables made later (default privileges), and its password; returns its name.
   */
  async ensureRole(admin: pg.Pool, bucketIds: readonly string[]): Promise<string> {
    const role = this.roleName(bucketIds);
    const client = await admin.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [ROLE_LOCK]);
      const { rowCount } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role]);
      const password = literal(this.passwordOf(role));
      if (!rowCount) {
        await client.query(`CREATE ROLE ${ident(role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT PASSWORD ${password}`);
      } else {
        await client.query(`ALTER ROLE ${ident(role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS NOINHERIT PASSWORD ${password}`);
      }
      // Everybody may connect by default; only a database that revoked that needs (and allows) the grant.
      const { rows: [can] } = await client.query("SELECT has_database_privilege($1, current_database(), 'CONNECT') AS ok", [role]);
      if (!can.ok) await client.query(`GRANT CONNECT ON DATABASE ${ident(this.database)} TO ${ident(role)}`);
      for (const bucketId of new Set(bucketIds)) {
        await client.query(`GRANT USAGE ON SCHEMA ${ident(bucketId)} TO ${ident(role)}`);
        await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA ${ident(bucketId)} TO ${ident(role)}`);
        await client.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA ${ident(bucketId)} GRANT SELECT ON TABLES TO ${ident(role)}`);
      }
      await this.limitTempFiles(client, role);
      await client.query('COMMIT');
      return role;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** The connections of `role` (at most `connections`), kept for the roles used last. */
  poolFor(role: string): pg.Pool {
    const existing = this.pools.get(role);
    if (existing) {
      this.pools.delete(role);
      this.pools.set(role, existing);
      return existing;
    }
    const url = new URL(this.options.url);
    url.username = role;
    url.password = this.passwordOf(role);
    const pool = new pg.Pool({
      connectionString: url.toString(),
      max: this.options.connections,
      connectionTimeoutMillis: this.options.connectTimeoutMs,
      idleTimeoutMillis: 10_000,
      application_name: 'sluice-sql',
    });
    pool.on('error', (err) => this.options.onIdleError?.(err));
    this.pools.set(role, pool);
    for (const [name, old] of this.pools) {
      if (this.pools.size <= MAX_POOLS) break;
      this.pools.delete(name);
      // Connections in use finish their query first.
      void old.end().catch(() => undefined);
    }
    return pool;
  }

  async end(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  }

  private passwordOf(role: string): string {
    return createHmac('sha256', this.secret).update(role).digest('base64url');
  }

  /**
   * temp_file_limit may be set by superusers only (or, from PostgreSQL 15, by whom they let):
   * set on the role, the query cannot raise it. Tried once; without the right, not applied.
   */
  private async limitTempFiles(client: pg.PoolClient, role: string): Promise<void> {
    if (this.options.memoryLimitBytes === undefined || this.tempLimit === 'not allowed') return;
    const kilobytes = Math.max(1, Math.floor(this.options.memoryLimitBytes / 1024));
    await client.query('SAVEPOINT temp_limit');
    try {
      await client.query(`ALTER ROLE ${ident(role)} SET temp_file_limit = ${literal(`${kilobytes}kB`)}`);
      this.tempLimit = 'applied';
    } catch {
      await client.query('ROLLBACK TO SAVEPOINT temp_limit');
      this.tempLimit = 'not allowed';
    }
  }

  /** Whether a query's temporary files are bounded (for messages): the limit as text, or undefined. */
  get tempFileLimit(): string | undefined {
    return this.tempLimit === 'applied' && this.options.memoryLimitBytes !== undefined ? byteSizeString(this.options.memoryLimitBytes) : undefined;
  }
}

/** The secret the reader roles' passwords are derived from: made once, kept in `_sluice.settings`. */
async function readerSecret(admin: pg.Pool): Promise<string> {
  await admin.query('INSERT INTO _sluice.settings VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', ['sql_reader_secret', randomBytes(32).toString('hex')]);
  const { rows } = await admin.query('SELECT value FROM _sluice.settings WHERE name = $1', ['sql_reader_secret']);
  return String(rows[0].value);
}
