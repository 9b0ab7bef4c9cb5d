import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import {
  QueryRefusedError,
  SinkClaimedError,
  TargetUnavailableError,
  TIMESTAMP_COLUMN,
  type ColumnDefinition,
  type ExportProgress,
  type ExportResult,
  type ExportSpec,
  type NewBucket,
  type NewTable,
  type QueryOptions,
  type QueryRelation,
  type QueryResult,
  type Stage,
  type Target,
  type TargetBucket,
  type TargetColumn,
  type TargetTable,
  type WriteOptions,
  type WriteResult,
} from '../../ports/target.js';
import { isUntypedColumn } from '../../ports/target-columns.js';
import { addColumnsProblem, newTableProblem } from './column-types.js';
import { CsvRecordCounter, NulReplacer } from './csv-records.js';
import { csvToParquet } from './parquet.js';
import { ident, literal, pgName, qualified } from './postgres-names.js';
import { dataError, refusedAtOpen, translate } from './postgres-errors.js';
import { addColumnSql, copySql, createTableSql, readShape, textExpression, upsertSql, upsertTableSql } from './postgres-writes.js';
import { checkRowLengths, planWrite, targetColumn, type TableShape, type WritePlan } from './write-plan.js';
import { pgValue, readRelations, typeName } from './postgres-query.js';
import { PostgresReaders } from './postgres-readers.js';

/**
 * The PostgreSQL Target adapter (`--target postgres://...`). A bucket is a schema named by the
 * bucket id ("in.c-my-bucket"), a table is a table of that schema named by the table name,
 * with the columns' native types (column-types.ts) and its primary key, if any, and
 * `_timestamp timestamptz` records when a row was written.
 * Bucket and table metadata, the ids of applied imports, the sinks' positions and the stream
 * owners (fencing) live in the `_sluice` schema of the same database, so that rows, their
 * import id, the sink's position and the owner check are one transaction.
 *
 * Rows arrive by `COPY ... FROM STDIN` (pg-copy-streams), streamed from the staged gzip files;
 * into a table with a primary key through a temporary table, then upserted (postgres-writes.ts).
 * Work runs on a bounded pool (`poolSize` connections); every call takes one connection for its
 * transaction, so imports of different tables run side by side. Read-only SQL queries are
 * planned on that pool and run on connections of their own, logged in as a role that may read
 * only the buckets the query reads (postgres-readers.ts).
 *
 * Fencing between cluster nodes: an import takes the stream's owner row FOR SHARE for its whole
 * transaction, and a claim updates that row, so a claim waits for an import in flight and reads
 * the position that import wrote; an import after the claim sees the new owner and is refused.
 */
export interface PostgresTargetOptions {
  /** Connections at most (default 8). */
  poolSize?: number;
  /** How long a call waits for a connection (default 10 s), then fails as unavailable. */
  connectTimeoutMs?: number;
  /** Connection errors of idle connections (the server restarted): logged, never thrown. */
  onIdleError?: (err: Error) => void;
  /** Read-only SQL queries that run at once: connections per reader role (default 2). */
  queryConnections?: number;
  /** A read-only query's temp_file_limit (when Sluice's user may set it), a quarter of it its work_mem. */
  queryMemoryBytes?: number;
  /** Hears how read-only queries run when it is weaker than the default (postgres-readers.ts). */
  onNotice?: (message: string) => void;
}

/** pg_advisory_xact_lock keys: schema migration, and DDL of buckets and tables. */
const MIGRATE_LOCK = 0x51_1c_e0_01;
const DDL_LOCK = 0x51_1c_e0_02;

export class PostgresTarget implements Target {
  readonly description: string;
  private readonly pool: pg.Pool;
  private readers!: PostgresReaders;
  private closing?: Promise<void>;

  private constructor(
    private readonly url: string,
    private readonly options: PostgresTargetOptions,
  ) {
    this.description = describeUrl(url);
    this.pool = new pg.Pool({
      connectionString: url,
      max: options.poolSize ?? 8,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      idleTimeoutMillis: 30_000,
      application_name: 'sluice',
    });
    // An idle connection that the server closes (restart, admin) emits here; unhandled it would end the process.
    this.pool.on('error', (err) => options.onIdleError?.(err));
  }

  /** Connects, creates Sluice's schema when missing, and checks that the server answers. */
  static async open(url: string, options: PostgresTargetOptions = {}): Promise<PostgresTarget> {
    const target = new PostgresTarget(url, options);
    try {
      await target.migrate();
    } catch (err) {
      await target.pool.end().catch(() => undefined);
      throw refusedAtOpen(err, target.description, new URL(url)) ?? translate(err, target.description);
    }
    return target;
  }

  private async migrate(): Promise<void> {
    await this.transaction(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK]);
      await c.query(`
        CREATE SCHEMA IF NOT EXISTS _sluice;
        CREATE TABLE IF NOT EXISTS _sluice.buckets (
          id text PRIMARY KEY, stage text NOT NULL, name text NOT NULL, created text NOT NULL, metadata text NOT NULL);
        CREATE TABLE IF NOT EXISTS _sluice.tables (
          id text PRIMARY KEY, bucket_id text NOT NULL, name text NOT NULL, created text NOT NULL,
          last_import_date text, metadata text NOT NULL, columns text NOT NULL, rows_count bigint NOT NULL DEFAULT 0);
        CREATE TABLE IF NOT EXISTS _sluice.imports (
          table_id text NOT NULL, import_id text NOT NULL, rows bigint NOT NULL, imported text NOT NULL,
          PRIMARY KEY (table_id, import_id));
        CREATE TABLE IF NOT EXISTS _sluice.positions (stream text PRIMARY KEY, through bigint NOT NULL);
        CREATE TABLE IF NOT EXISTS _sluice.stream_owners (stream text PRIMARY KEY, owner text NOT NULL, claimed text NOT NULL);
        CREATE TABLE IF NOT EXISTS _sluice.settings (name text PRIMARY KEY, value text NOT NULL);
      `);
    });
    this.readers = await PostgresReaders.open(this.pool, {
      url: this.url,
      connections: this.options.queryConnections ?? 2,
      memoryLimitBytes: this.options.queryMemoryBytes,
      connectTimeoutMs: this.options.connectTimeoutMs ?? 10_000,
      onIdleError: this.options.onIdleError,
    }, (message) => this.options.onNotice?.(message));
  }

  async ping(): Promise<boolean> {
    try {
      await this.pool.query('SELECT 1');
      return true;
    } catch {
      return false;
    }
  }

  // ---- buckets ----

  async listBuckets(): Promise<TargetBucket[]> {
    return (await this.rows('SELECT * FROM _sluice.buckets ORDER BY id')).map(toBucket);
  }

  async getBucket(bucketId: string): Promise<TargetBucket | undefined> {
    const [row] = await this.rows('SELECT * FROM _sluice.buckets WHERE id = $1', [bucketId]);
    return row && toBucket(row);
  }

  createBucket(bucket: NewBucket): Promise<TargetBucket> {
    return this.transaction(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK]);
      const [existing] = (await c.query('SELECT * FROM _sluice.buckets WHERE id = $1', [bucket.id])).rows;
      if (existing) return toBucket(existing);
      const created = new Date().toISOString();
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${ident(bucket.id)}`);
      await c.query('INSERT INTO _sluice.buckets VALUES ($1, $2, $3, $4, $5)', [
        bucket.id, bucket.stage, bucket.name, created, JSON.stringify(bucket.metadata ?? {}),
      ]);
      return { id: bucket.id, stage: bucket.stage, name: bucket.name, created, metadata: { ...bucket.metadata } };
    });
  }

  dropBucket(bucketId: string): Promise<boolean> {
    return this.transaction(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK]);
      const { rowCount } = await c.query('DELETE FROM _sluice.buckets WHERE id = $1', [bucketId]);
      if (!rowCount) return false;
      await c.query(`DROP SCHEMA IF EXISTS ${ident(bucketId)} CASCADE`);
      await c.query('DELETE FROM _sluice.imports WHERE table_id IN (SELECT id FROM _sluice.tables WHERE bucket_id = $1)', [bucketId]);
      await c.query('DELETE FROM _sluice.tables WHERE bucket_id = $1', [bucketId]);
      return true;
    });
  }

  // ---- tables ----

  async listTables(bucketId?: string): Promise<TargetTable[]> {
    return this.withClient(async (c) => {
      const rows = bucketId === undefined
        ? (await c.query('SELECT * FROM _sluice.tables ORDER BY id')).rows
        : (await c.query('SELECT * FROM _sluice.tables WHERE bucket_id = $1 ORDER BY id', [bucketId])).rows;
      const out: TargetTable[] = [];
      for (const row of rows) out.push(await completeTable(c, row));
      return out;
    });
  }

  getTable(tableId: string): Promise<TargetTable | undefined> {
    return this.withClient(async (c) => {
      const [row] = (await c.query('SELECT * FROM _sluice.tables WHERE id = $1', [tableId])).rows;
      return row && completeTable(c, row);
    });
  }

  createTable(table: NewTable): Promise<TargetTable> {
    const problem = newTableProblem(table);
    if (problem !== undefined) return Promise.reject(new Error(`table "${table.id}" cannot be created: ${problem}`));
    return this.transaction(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK]);
      if ((await c.query('SELECT 1 FROM _sluice.tables WHERE id = $1', [table.id])).rowCount) throw new Error(`table "${table.id}" already exists`);
      if (!(await c.query('SELECT 1 FROM _sluice.buckets WHERE id = $1', [table.bucketId])).rowCount) throw new Error(`bucket "${table.bucketId}" does not exist`);
      const created = new Date().toISOString();
      const columns = table.columns.map((name) => ({ name, type: table.types?.[name] }));
      await c.query(createTableSql(qualified(table.bucketId, table.name), columns, table.primaryKey ?? []));
      await c.query('INSERT INTO _sluice.tables (id, bucket_id, name, created, metadata, columns) VALUES ($1, $2, $3, $4, $5, $6)', [
        table.id, table.bucketId, table.name, created, JSON.stringify(table.metadata ?? {}), JSON.stringify(table.columns),
      ]);
      return completeTable(c, await requireTable(c, table.id));
    });
  }

  addColumns(tableId: string, columns: readonly ColumnDefinition[]): Promise<TargetTable> {
    return this.transaction(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK]);
      const table = await requireTable(c, tableId);
      const shape = await shapeOf(c, table);
      const problem = addColumnsProblem(shape.columns.map((col) => col.name), columns);
      if (problem !== undefined) throw new Error(`columns cannot be added to table "${tableId}": ${problem}`);
      for (const column of columns) await c.query(addColumnSql(qualified(table.bucket_id, table.name), column));
      // The Storage names of the columns (pgName maps long ones to other identifiers).
      const created = [...(JSON.parse(table.columns) as string[]), ...columns.map((col) => col.name)];
      await c.query('UPDATE _sluice.tables SET columns = $1 WHERE id = $2', [JSON.stringify(created), tableId]);
      return completeTable(c, await requireTable(c, tableId));
    });
  }

  dropTable(tableId: string): Promise<boolean> {
    return this.transaction(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK]);
      const [row] = (await c.query('DELETE FROM _sluice.tables WHERE id = $1 RETURNING bucket_id, name', [tableId])).rows;
      if (!row) return false;
      await c.query(`DROP TABLE IF EXISTS ${qualified(row.bucket_id, row.name)}`);
      await c.query('DELETE FROM _sluice.imports WHERE table_id = $1', [tableId]);
      return true;
    });
  }

  // ---- rows ----

  insertRows(tableId: string, rows: readonly (readonly (string | null)[])[], options: WriteOptions = {}): Promise<WriteResult> {
    return this.write(tableId, options, (plan) => checkRowLengths(tableId, rows, plan.data.length), (copy) => {
      if (rows.length === 0) return Promise.resolve(0);
      // Every value quoted (no empty string read as NULL, no "\." line as the end of data), NULL an unquoted empty field.
      const csv = rows.map((r) => r.map((v) => (v === null ? '' : `"${v.replaceAll('"', '""')}"`)).join(',') + '\n');
      return copy([Readable.from(csv.map((line) => Buffer.from(line)))]);
    });
  }

  importCsv(tableId: string, path: string | readonly string[], options: WriteOptions = {}): Promise<WriteResult> {
    const paths = typeof path === 'string' ? [path] : [...path];
    return this.write(tableId, options, () => undefined, async (copy) => {
      let read = 0;
      // One COPY per file: a file that does not end in a line break cannot join the next one's first row.
      for (const p of paths) {
        // Stages, not .pipe(): a file that cannot be read (gone, damaged gzip) fails this import, never the process.
        read += await copy(p.endsWith('.gz') ? [createReadStream(p), createGunzip()] : [createReadStream(p)]);
      }
      return read;
    });
  }

  async preview(tableId: string, limit: number): Promise<string[][]> {
    return this.transaction(async (c) => {
      const table = await requireTable(c, tableId);
      const { columns } = await shapeOf(c, table);
      // A heap read from its start keeps the insertion order of an append-only table.
      await c.query('SET LOCAL synchronize_seqscans = off');
      const result = await c.query({
        text: `SELECT ${columns.map(textExpression).join(', ')} FROM ${qualified(table.bucket_id, table.name)} LIMIT $1`,
        values: [Math.max(0, Math.floor(limit))],
        rowMode: 'array',
      });
      return result.rows.map((r: unknown[]) => r.map((v) => (v === null || v === undefined ? '' : String(v))));
    });
  }

  rowCount(tableId: string): Promise<number> {
    return this.withClient(async (c) => {
      const table = await requireTable(c, tableId);
      const { rows } = await c.query(`SELECT count(*)::bigint AS n FROM ${qualified(table.bucket_id, table.name)}`);
      return Number(rows[0].n);
    });
  }

  async exportTable(tableId: string, spec: ExportSpec, path: string, onProgress?: (progress: ExportProgress) => void): Promise<ExportResult> {
    const { select, totalRows } = await this.withClient(async (c) => {
      const table = await requireTable(c, tableId);
      const select = exportSelect(table, (await shapeOf(c, table)).columns, spec);
      const { rows } = await c.query(`SELECT count(*)::bigint AS n FROM (${select}) AS q`);
      return { select, totalRows: Number(rows[0].n) };
    });
    onProgress?.({ rows: 0, totalRows });
    const csvPath = spec.format === 'parquet' ? `${path}.csv` : path;
    const counter = new CsvRecordCounter((records) => onProgress?.({ rows: Math.max(0, records - 1), totalRows }));
    await this.withClient(async (c) => {
      const out = c.query(copyTo(`COPY (${select}) TO STDOUT WITH (FORMAT csv, HEADER true)`));
      if (spec.format === 'csv' && spec.gzip) await pipeline(out, counter, createGzip({ level: 6 }), createWriteStream(csvPath));
      else await pipeline(out, counter, createWriteStream(csvPath));
    });
    const rows = Math.max(0, counter.records - 1);
    if (spec.format === 'parquet') {
      try {
        await csvToParquet(csvPath, path, spec.columns);
      } finally {
        await rm(csvPath, { force: true });
      }
    }
    onProgress?.({ rows, totalRows });
    return { rows, bytes: (await stat(path)).size };
  }

  async query(sql: string, options: QueryOptions): Promise<QueryResult> {
    const statement = readStatement(sql);
    const deadline = Date.now() + options.timeoutMs;
    const remaining = () => Math.max(1, deadline - Date.now());
    const { mode } = this.readers;
    if (mode.kind === 'unavailable') throw new QueryRefusedError('unavailable', mode.reason);
    const { relations, everyBucket, ready } = await this.withClient(async (c) => {
      await c.query('BEGIN TRANSACTION READ ONLY');
      try {
        await c.query(`SET LOCAL statement_timeout = ${remaining()}`);
        // Planned as Sluice's user, so that every relation is named (the planner runs no volatile
        // function); the extended protocol takes one statement only: "SELECT 1; DELETE ..." is refused here.
        const plan = await c.query(extended(`EXPLAIN (VERBOSE, FORMAT JSON) ${statement}`));
        const { relations, writes } = readRelations(plan.rows[0]['QUERY PLAN']);
        if (writes) throw new QueryRefusedError('write', 'The statement writes or locks rows; only a statement that reads (SELECT) can run here. Nothing was executed.');
        const buckets = new Map<string, string>();
        for (const { id } of (await c.query('SELECT id FROM _sluice.buckets')).rows) buckets.set(pgName(id), id);
        const named = relations.map((r): QueryRelation => ({ ...r, bucketId: buckets.get(r.schema) }));
        const read = bucketsOf(named);
        return { relations: named, everyBucket: [...buckets.values()], ready: mode.kind === 'roles' && read !== undefined && (await this.readers.ready(c, read)) };
      } catch (err) {
        throw refusal(err);
      } finally {
        await c.query('ROLLBACK').catch(() => undefined);
      }
    });
    // As Sluice's own user a query can reach every bucket (the class comment of postgres-readers.ts).
    const reachable = mode.kind === 'owner' ? everyBucket.map((id): QueryRelation => ({ schema: pgName(id), table: '*', bucketId: id, reachable: true })) : [];
    options.authorize([...relations, ...reachable]);
    const read = bucketsOf(relations);
    if (read === undefined) throw new QueryRefusedError('forbidden', 'The query reads a relation that is not a table of a bucket: a query reads the tables of buckets only.');
    if (mode.kind === 'roles' && !ready) await this.withUnavailable(() => this.readers.ensureRole(this.pool, read));
    return this.withReaderSession(read, remaining(), async (c) => {
      await c.query(extended(`DECLARE sluice_query NO SCROLL CURSOR FOR ${statement}`));
      const result = await c.query({ text: `FETCH ${options.maxRows + 1} FROM sluice_query`, rowMode: 'array' });
      const truncated = result.rows.length > options.maxRows;
      return {
        columns: result.fields.map((f) => ({ name: f.name, type: typeName(f.dataTypeID) })),
        rows: (truncated ? result.rows.slice(0, options.maxRows) : result.rows).map((r: unknown[]) => r.map(pgValue)),
        truncated,
      };
    });
  }

  /**
   * Runs `fn` in the session a read-only query over `bucketIds` runs in: a read-only
   * transaction, as the buckets' reader role (or Sluice's user, see postgres-readers.ts), with
   * the statement timeout and work_mem set; afterwards the session is reset (DISCARD ALL: no
   * advisory lock or setting of the query outlives it). Public for the tests that check what
   * the session refuses whatever the statement check let through.
   */
  async withReaderSession<R>(bucketIds: readonly string[], timeoutMs: number, fn: (c: pg.PoolClient) => Promise<R>): Promise<R> {
    const { mode } = this.readers;
    if (mode.kind === 'unavailable') throw new QueryRefusedError('unavailable', mode.reason);
    if (this.closing) throw new Error('the PostgreSQL target is closed');
    const pool = mode.kind === 'roles' ? this.readers.poolFor(this.readers.roleName(bucketIds)) : this.pool;
    const client = await this.withUnavailable(() => pool.connect());
    let broken: Error | undefined;
    try {
      await client.query('BEGIN TRANSACTION READ ONLY');
      try {
        await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
        if (this.options.queryMemoryBytes !== undefined) {
          await client.query(`SET LOCAL work_mem = ${literal(`${Math.max(64, Math.floor(this.options.queryMemoryBytes / 4 / 1024))}kB`)}`);
        }
        return await fn(client);
      } catch (err) {
        const translated = translate(err, this.description);
        if (translated instanceof TargetUnavailableError) broken = translated;
        throw refusal(translated, this.readers.tempFileLimit);
      } finally {
        await client.query('ROLLBACK').catch(() => undefined);
        await client.query('DISCARD ALL').catch((err: Error) => void (broken ??= err));
      }
    } finally {
      client.release(broken);
    }
  }

  // ---- sink positions and owners (the tables' column is named `stream`, as in targets written before) ----

  async position(sink: string): Promise<number | undefined> {
    const [row] = await this.rows('SELECT through FROM _sluice.positions WHERE stream = $1', [sink]);
    return row === undefined ? undefined : Number(row.through);
  }

  claimSink(sink: string, owner: string): Promise<number | undefined> {
    return this.transaction(async (c) => {
      // Waits for an import holding the owner row (FOR SHARE), then reads what it wrote.
      await c.query(
        'INSERT INTO _sluice.stream_owners VALUES ($1, $2, $3) ON CONFLICT (stream) DO UPDATE SET owner = excluded.owner, claimed = excluded.claimed',
        [sink, owner, new Date().toISOString()],
      );
      const [row] = (await c.query('SELECT through FROM _sluice.positions WHERE stream = $1', [sink])).rows;
      return row === undefined ? undefined : Number(row.through);
    });
  }

  forgetPositions(prefix: string): Promise<void> {
    return this.transaction(async (c) => {
      await c.query('DELETE FROM _sluice.positions WHERE starts_with(stream, $1)', [prefix]);
      await c.query('DELETE FROM _sluice.stream_owners WHERE starts_with(stream, $1)', [prefix]);
    });
  }

  close(): Promise<void> {
    this.closing ??= Promise.all([this.pool.end(), this.readers?.end()]).then(() => undefined);
    return this.closing;
  }

  // ---- internals ----

  /**
   * One write of rows: import id, owner check, rows, import record, position and last import
   * time, atomically. `check` sees the plan before anything is written; `send` streams the rows
   * through `copy` (called once per file), which COPYs them into the table, or on a table with
   * a primary key into the temporary table the upsert reads afterwards.
   */
  private write(
    tableId: string,
    options: WriteOptions,
    check: (plan: WritePlan) => void,
    send: Send,
  ): Promise<WriteResult> {
    return this.transaction(async (c) => {
      const table = await requireTable(c, tableId);
      const shape = await shapeOf(c, table);
      const plan = planWrite(tableId, shape, options);
      check(plan);
      const now = new Date().toISOString();
      if (options.importId !== undefined) {
        // Claims the import id at once: a concurrent retry of the same import waits here, then finds it.
        const { rowCount } = await c.query(
          'INSERT INTO _sluice.imports VALUES ($1, $2, 0, $3) ON CONFLICT DO NOTHING', [tableId, options.importId, now],
        );
        if (!rowCount) return { inserted: 0, duplicate: true };
      }
      const owner = options.position?.owner;
      if (owner !== undefined) {
        const [claim] = (await c.query('SELECT owner FROM _sluice.stream_owners WHERE stream = $1 FOR SHARE', [options.position!.sink])).rows;
        if (claim !== undefined && claim.owner !== owner) throw new SinkClaimedError(options.position!.sink, owner, String(claim.owner));
      }
      const { read: inserted, added } = await writeRows(c, table, shape, plan, send).catch((err: unknown) => Promise.reject(dataError(err, tableId)));
      if (options.expectedRows !== undefined && inserted !== options.expectedRows) {
        throw new Error(`the write to table "${tableId}" would insert ${inserted} rows, ${options.expectedRows} were expected; nothing was written`);
      }
      if (options.importId !== undefined) {
        await c.query('UPDATE _sluice.imports SET rows = $3 WHERE table_id = $1 AND import_id = $2', [tableId, options.importId, inserted]);
      }
      if (options.position !== undefined) {
        await c.query(
          'INSERT INTO _sluice.positions VALUES ($1, $2) ON CONFLICT (stream) DO UPDATE SET through = greatest(_sluice.positions.through, excluded.through)',
          [options.position.sink, options.position.through],
        );
      }
      await c.query('UPDATE _sluice.tables SET last_import_date = $1, rows_count = rows_count + $2 WHERE id = $3', [now, added, tableId]);
      return { inserted, duplicate: false };
    });
  }

  /** `fn`, with a connection failure as TargetUnavailableError. */
  private async withUnavailable<R>(fn: () => Promise<R>): Promise<R> {
    try {
      return await fn();
    } catch (err) {
      throw translate(err, this.description);
    }
  }

  private async rows(sql: string, params?: unknown[]): Promise<Record<string, any>[]> {
    return this.withClient(async (c) => (await c.query(sql, params)).rows);
  }

  private async withClient<R>(fn: (c: pg.PoolClient) => Promise<R>): Promise<R> {
    if (this.closing) throw new Error('the PostgreSQL target is closed');
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw translate(err, this.description);
    }
    let broken: Error | undefined;
    try {
      return await fn(client);
    } catch (err) {
      const translated = translate(err, this.description);
      if (translated instanceof TargetUnavailableError) broken = translated;
      throw translated;
    } finally {
      // A connection that failed underneath is not given back to the pool.
      client.release(broken);
    }
  }

  private transaction<R>(fn: (c: pg.PoolClient) => Promise<R>): Promise<R> {
    return this.withClient(async (c) => {
      await c.query('BEGIN');
      try {
        const result = await fn(c);
        await c.query('COMMIT');
        return result;
      } catch (err) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }
}

/** Streams a write's rows through `copy` (once per file); returns the rows read. */
type Send = (copy: (input: [NodeJS.ReadableStream, ...NodeJS.ReadWriteStream[]]) => Promise<number>) => Promise<number>;

interface TableRow {
  id: string;
  bucket_id: string;
  name: string;
  created: string;
  last_import_date: string | null;
  metadata: string;
  columns: string;
  rows_count: string;
}

/** "PostgreSQL at host:port/db" without user or password. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `PostgreSQL at ${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return 'PostgreSQL';
  }
}

async function requireTable(c: pg.PoolClient, tableId: string): Promise<TableRow> {
  const [row] = (await c.query('SELECT * FROM _sluice.tables WHERE id = $1', [tableId])).rows;
  if (!row) throw new Error(`table "${tableId}" does not exist`);
  return row as TableRow;
}

/** The table's columns and key from the catalog (postgres-writes.ts readShape). */
function shapeOf(c: pg.PoolClient, table: TableRow): Promise<TableShape> {
  return readShape(c, table.bucket_id, table.name, JSON.parse(table.columns) as string[]);
}

async function completeTable(c: pg.PoolClient, row: TableRow): Promise<TargetTable> {
  const { columns, primaryKey } = await shapeOf(c, row);
  return {
    id: row.id,
    bucketId: row.bucket_id,
    name: row.name,
    columns: columns.map((col) => col.name),
    definitions: columns.map(targetColumn),
    primaryKey,
    created: row.created,
    lastImportDate: row.last_import_date,
    // Kept by every write of Sluice's (a count(*) of a large table would take seconds).
    rowsCount: Number(row.rows_count),
    metadata: JSON.parse(row.metadata) as Record<string, string>,
  };
}

/**
 * The rows of a write, by the plan: COPYed into the table (its other columns and `_timestamp`
 * take their defaults), or on a table with a primary key into a temporary table, then upserted.
 * `read`: the rows read; `added`: the rows the table has more now.
 */
async function writeRows(
  c: pg.PoolClient,
  table: TableRow,
  shape: TableShape,
  plan: WritePlan,
  send: Send,
): Promise<{ read: number; added: number }> {
  const into = qualified(table.bucket_id, table.name);
  // A table written before typed columns: its untyped columns have no default to give.
  for (const column of plan.needDefault) await c.query(`ALTER TABLE ${into} ALTER COLUMN ${ident(column.name)} SET DEFAULT ''`);
  const keyed = shape.primaryKey.length > 0;
  if (keyed) await c.query(upsertTableSql(plan.data));
  const sql = copySql(keyed ? 'pg_temp.sluice_upsert' : into, plan.data);
  const read = await send(async (input) => {
    const copy = c.query(copyFrom(sql));
    await pipeline([...input, new NulReplacer(), copy]);
    return copy.rowCount;
  });
  if (!keyed) return { read, added: read };
  if (read === 0) return { read, added: 0 };
  const { rows } = await c.query(upsertSql(into, plan.data, plan.others, shape.primaryKey));
  return { read, added: Number(rows[0].fresh) };
}

const TIMESTAMP_FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/**
 * The SELECT of an export (literals, not parameters: COPY takes none). Typed columns are written
 * as their text (textExpression), and compared by it in `where`, NULL as ''.
 */
function exportSelect(table: TableRow, columns: readonly TargetColumn[], spec: ExportSpec): string {
  const byName = new Map(columns.map((col) => [col.name, col]));
  const text = (name: string) => {
    const column = byName.get(name);
    return column === undefined || isUntypedColumn(column) ? ident(name) : textExpression(column);
  };
  const select = spec.columns
    .map((col) => (col === TIMESTAMP_COLUMN ? `to_char(${ident(col)} AT TIME ZONE 'UTC', ${TIMESTAMP_FORMAT}) AS ${ident(col)}` : `${text(col)} AS ${ident(col)}`))
    .join(', ');
  const where: string[] = [];
  if (spec.where) {
    const values = spec.where.values.map(literal).join(', ');
    const column = byName.get(spec.where.column);
    const compared = column === undefined || isUntypedColumn(column) ? ident(spec.where.column) : `COALESCE(${textExpression(column)}, '')`;
    where.push(spec.where.values.length === 0
      ? (spec.where.operator === 'eq' ? 'false' : 'true')
      : `${compared} ${spec.where.operator === 'eq' ? 'IN' : 'NOT IN'} (${values})`);
  }
  if (spec.changedSince) where.push(`${ident(TIMESTAMP_COLUMN)} >= ${literal(spec.changedSince.toISOString())}::timestamptz`);
  if (spec.changedUntil) where.push(`${ident(TIMESTAMP_COLUMN)} < ${literal(spec.changedUntil.toISOString())}::timestamptz`);
  return `SELECT ${select} FROM ${qualified(table.bucket_id, table.name)}`
    + (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '')
    + (spec.limit !== undefined ? ` LIMIT ${Math.max(0, Math.floor(spec.limit))}` : '');
}

/** The statement without a trailing semicolon; only statements that may read are let through to the planner. */
function readStatement(sql: string): string {
  const statement = sql.trim().replace(/;\s*$/, '');
  const start = statement.replace(/^(\s|--[^\n]*\n?|\/\*[\s\S]*?\*\/)*/, '');
  if (!/^(select|with|values|table|\()/i.test(start)) {
    const word = /^\w+/.exec(start)?.[0]?.toUpperCase() ?? 'this statement';
    throw new QueryRefusedError('write', `${word} is not allowed: only one statement that reads (SELECT, WITH ... SELECT, VALUES, TABLE) can run here. Nothing was executed.`);
  }
  return statement;
}

function extended(text: string): pg.QueryConfig {
  return { text, queryMode: 'extended' } as pg.QueryConfig;
}

/** The buckets of the relations a query reads; undefined when one is not a bucket's table. */
function bucketsOf(relations: readonly QueryRelation[]): string[] | undefined {
  if (relations.some((r) => r.bucketId === undefined)) return undefined;
  return [...new Set(relations.map((r) => r.bucketId!))];
}

/**
 * PostgreSQL's refusals as QueryRefusedError: the statement, not the server, was wrong.
 * `tempFileLimit`: the query's temp_file_limit as text, for the message when it was reached.
 */
function refusal(err: unknown, tempFileLimit?: string): unknown {
  if (err instanceof QueryRefusedError || err instanceof TargetUnavailableError) return err;
  const e = err as { code?: string; message?: string; position?: string };
  if (typeof e.code !== 'string' || e.code.length !== 5) return err;
  if (e.code === '57014') return new QueryRefusedError('timeout', 'The query ran longer than the statement timeout and was cancelled.');
  // configuration_limit_exceeded (temp_file_limit), out_of_memory, disk_full.
  if (e.code === '53400' || e.code === '53200' || e.code === '53100') {
    const limit = tempFileLimit === undefined ? 'the server allows' : `the SQL memory limit (${tempFileLimit} of temporary files) allows`;
    return new QueryRefusedError('memory', `The query needed more memory or temporary disk than ${limit}, and was stopped (${e.message}).`);
  }
  if (e.code === '42501') return new QueryRefusedError('forbidden', `${e.message}: a query reads the tables of buckets only.`);
  if (e.code === '25006') return new QueryRefusedError('write', `The statement writes (${e.message}); only a statement that reads can run here. Nothing was written.`);
  if (e.code === '42601' && /multiple commands/.test(e.message ?? '')) {
    return new QueryRefusedError('invalid', 'Only one statement can run at a time.');
  }
  return new QueryRefusedError('invalid', `${e.message}${e.position ? ` (at character ${e.position})` : ''}`);
}

function toBucket(row: Record<string, any>): TargetBucket {
  return {
    id: String(row.id),
    stage: String(row.stage) as Stage,
    name: String(row.name),
    created: String(row.created),
    metadata: JSON.parse(String(row.metadata)) as Record<string, string>,
  };
}
