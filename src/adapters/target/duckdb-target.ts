import { randomUUID } from 'node:crypto';
import { existsSync, linkSync, rmSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { DuckDBInstance, listValue, StatementType, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { jsonQueryValue } from './duckdb-json-values.js';
import {
  QueryRefusedError,
  SinkClaimedError,
  TIMESTAMP_COLUMN,
  type ColumnDefinition,
  type ExportProgress,
  type ExportResult,
  type ExportSpec,
  type QueryOptions,
  type QueryResult,
  type NewBucket,
  type NewTable,
  type Stage,
  type Target,
  type TargetBucket,
  type TargetColumn,
  type TargetTable,
  type WriteOptions,
  type WriteResult,
} from '../../ports/target.js';
import { isUntypedColumn } from '../../ports/target-columns.js';
import { byteSizeString } from '../../pipeline/units.js';
import { duckLiteral } from './parquet.js';
import { addColumnsProblem, newTableProblem, readColumn } from './column-types.js';
import { addColumnSql, createTableSql, ident, qualified, textExpression, TIMESTAMP_TYPE, writeStatements } from './duckdb-writes.js';
import { checkRowLengths, planWrite, targetColumn, type TableShape, type WritePlan } from './write-plan.js';
import { readStatementTree } from './duckdb-statement.js';
import { valueSizeProblem } from './duckdb-value-sizes.js';
import { clearIoDir, ioDirOf, ioPathFor, linkIn, lockDown, memoryOptions, moveOut } from './duckdb-lockdown.js';

/**
 * The embedded Target adapter: one DuckDB file. A bucket is a DuckDB schema named by the bucket
 * id ("in.c-my-bucket"), a table is a table of that schema named by the table name, with the
 * columns' native types (column-types.ts) and its primary key, if any. Bucket and table
 * metadata (created time, last import, key/values) and the ids of applied imports live in the
 * `_sluice` schema of the same file, so that a table and its metadata, or rows and their import
 * id, are written in one DuckDB transaction.
 *
 * All writes go through one connection and one queue: DuckDB transactions are per connection,
 * and the queue keeps BEGIN..COMMIT of one caller from interleaving with another's statements.
 * Exports run on a second, read connection with a queue of its own, so a long export does not
 * hold imports up (DuckDB reads a snapshot while the writer goes on). Read-only SQL queries
 * run each on a connection of its own (kept for the next one), so that a slow query does not
 * hold up another; the caller bounds how many run at once (SqlService).
 *
 * The database is locked down (duckdb-lockdown.ts): files only in `<file>.io/`, no extensions
 * on demand, its configuration locked, and with `memoryLimitBytes` its memory and temporary
 * disk bounded (DuckDB's limits are the database's, shared by queries, imports and exports).
 *
 * Shared mode (cluster nodes on one file): DuckDB lets one process at a time open a file for
 * writing, so every operation opens the file, works, and closes it again (about 25 ms), and a
 * node that finds the file locked by another retries until it gets it.
 */
export interface DuckDbTargetOptions {
  /** Open the file per operation, so that several processes can take turns (default false). */
  shared?: boolean;
  /** How long an operation waits for a file another process holds (shared mode; default 30 s). */
  lockWaitMs?: number;
  /**
   * DuckDB's memory_limit and max_temp_directory_size (the database's, for queries, imports and
   * exports alike); default DuckDB's own (80 % of the RAM, 90 % of the free disk).
   */
  memoryLimitBytes?: number;
}

const LOCKED = /Could not set lock on file/;

export class DuckDbTarget implements Target {
  readonly description: string;
  private queue: Promise<unknown> = Promise.resolve();
  private readQueue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private closing?: Promise<void>;
  private instance: DuckDBInstance | undefined;
  private connection: DuckDBConnection | undefined;
  private readConnection: DuckDBConnection | undefined;
  /** Read-only queries' connections: idle ones kept for the next query, running ones with their work. */
  private readonly idleQueryConnections: DuckDBConnection[] = [];
  private readonly runningQueries = new Map<DuckDBConnection, Promise<unknown>>();
  private readonly ioDir: string;

  private constructor(
    private readonly path: string,
    private readonly options: DuckDbTargetOptions,
  ) {
    this.description = `DuckDB file ${path}`;
    this.ioDir = ioDirOf(path);
  }

  /** Opens (creating if needed) the DuckDB file at `path`. */
  static async open(path: string, options: DuckDbTargetOptions = {}): Promise<DuckDbTarget> {
    if (options.shared && !existsSync(path)) await createAtomically(path);
    const target = new DuckDbTarget(path, options);
    // Shared: another node may be importing through the folder right now.
    if (!options.shared) await clearIoDir(target.ioDir);
    if (!options.shared) await target.connect();
    await target.exclusive(() => target.migrate());
    return target;
  }

  private get conn(): DuckDBConnection {
    if (!this.connection) throw new Error('the DuckDB target is not open');
    return this.connection;
  }

  private async connect(): Promise<void> {
    const deadline = Date.now() + (this.options.lockWaitMs ?? 30_000);
    for (let delay = 10; ; delay = Math.min(delay * 2, 250)) {
      try {
        this.instance = await DuckDBInstance.create(this.path, memoryOptions(this.options.memoryLimitBytes));
        break;
      } catch (err) {
        if (!this.options.shared || !LOCKED.test((err as Error).message)) throw err;
        if (Date.now() > deadline) throw new Error(`the tables file ${this.path} stayed locked by another process for ${this.options.lockWaitMs ?? 30_000} ms`, { cause: err });
        await new Promise((r) => setTimeout(r, delay));
      }
    }
    this.connection = await this.instance.connect();
    await lockDown(this.connection, this.ioDir);
  }

  private disconnect(): void {
    for (const conn of this.idleQueryConnections.splice(0)) conn.closeSync();
    this.readConnection?.closeSync();
    this.readConnection = undefined;
    this.connection?.closeSync();
    this.instance?.closeSync();
    this.connection = undefined;
    this.instance = undefined;
  }

  private async migrate(): Promise<void> {
    await this.conn.run(`
      CREATE SCHEMA IF NOT EXISTS _sluice;
      CREATE TABLE IF NOT EXISTS _sluice.buckets (
        id VARCHAR PRIMARY KEY, stage VARCHAR NOT NULL, name VARCHAR NOT NULL,
        created VARCHAR NOT NULL, metadata VARCHAR NOT NULL);
      CREATE TABLE IF NOT EXISTS _sluice.tables (
        id VARCHAR PRIMARY KEY, bucket_id VARCHAR NOT NULL, name VARCHAR NOT NULL,
        created VARCHAR NOT NULL, last_import_date VARCHAR, metadata VARCHAR NOT NULL);
      CREATE TABLE IF NOT EXISTS _sluice.imports (
        table_id VARCHAR NOT NULL, import_id VARCHAR NOT NULL, rows BIGINT NOT NULL,
        imported VARCHAR NOT NULL, PRIMARY KEY (table_id, import_id));
      CREATE TABLE IF NOT EXISTS _sluice.positions (stream VARCHAR PRIMARY KEY, through BIGINT NOT NULL);
      CREATE TABLE IF NOT EXISTS _sluice.stream_owners (stream VARCHAR PRIMARY KEY, owner VARCHAR NOT NULL, claimed VARCHAR NOT NULL);
    `);
    // Tables of files written before the system column existed get it (their rows: the time of this start).
    for (const row of await this.rows('SELECT bucket_id, name FROM _sluice.tables')) {
      const [has] = await this.rows(
        `SELECT 1 FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = $1 AND table_name = $2 AND column_name = $3`,
        [str(row.bucket_id), str(row.name), TIMESTAMP_COLUMN],
      );
      if (!has) await this.conn.run(`ALTER TABLE ${qualified(str(row.bucket_id), str(row.name))} ADD COLUMN ${ident(TIMESTAMP_COLUMN)} ${TIMESTAMP_TYPE}`);
    }
  }

  ping(): Promise<boolean> {
    return this.exclusive(async () => {
      await this.conn.run('SELECT 1');
      return true;
    }).catch(() => false);
  }

  // ---- buckets ----

  listBuckets(): Promise<TargetBucket[]> {
    return this.exclusive(async () => (await this.rows('SELECT * FROM _sluice.buckets ORDER BY id')).map(toBucket));
  }

  getBucket(bucketId: string): Promise<TargetBucket | undefined> {
    return this.exclusive(() => this.readBucket(bucketId));
  }

  createBucket(bucket: NewBucket): Promise<TargetBucket> {
    return this.exclusive(async () => {
      const existing = await this.readBucket(bucket.id);
      if (existing) return existing;
      const created = new Date().toISOString();
      await this.transaction(async () => {
        await this.conn.run(`CREATE SCHEMA IF NOT EXISTS ${ident(bucket.id)}`);
        await this.conn.run('INSERT INTO _sluice.buckets VALUES ($1, $2, $3, $4, $5)', [
          bucket.id, bucket.stage, bucket.name, created, JSON.stringify(bucket.metadata ?? {}),
        ]);
      });
      return { id: bucket.id, stage: bucket.stage, name: bucket.name, created, metadata: { ...bucket.metadata } };
    });
  }

  dropBucket(bucketId: string): Promise<boolean> {
    return this.exclusive(async () => {
      if (!(await this.readBucket(bucketId))) return false;
      await this.transaction(async () => {
        await this.conn.run(`DROP SCHEMA IF EXISTS ${ident(bucketId)} CASCADE`);
        await this.conn.run(
          'DELETE FROM _sluice.imports WHERE table_id IN (SELECT id FROM _sluice.tables WHERE bucket_id = $1)',
          [bucketId],
        );
        await this.conn.run('DELETE FROM _sluice.tables WHERE bucket_id = $1', [bucketId]);
        await this.conn.run('DELETE FROM _sluice.buckets WHERE id = $1', [bucketId]);
      });
      return true;
    });
  }

  // ---- tables ----

  listTables(bucketId?: string): Promise<TargetTable[]> {
    return this.exclusive(async () => {
      const rows = bucketId === undefined
        ? await this.rows('SELECT * FROM _sluice.tables ORDER BY id')
        : await this.rows('SELECT * FROM _sluice.tables WHERE bucket_id = $1 ORDER BY id', [bucketId]);
      const out: TargetTable[] = [];
      for (const row of rows) out.push(await this.completeTable(row));
      return out;
    });
  }

  getTable(tableId: string): Promise<TargetTable | undefined> {
    return this.exclusive(async () => {
      const row = await this.tableRow(tableId);
      return row && this.completeTable(row);
    });
  }

  createTable(table: NewTable): Promise<TargetTable> {
    return this.exclusive(async () => {
      const problem = newTableProblem(table);
      if (problem !== undefined) throw new Error(`table "${table.id}" cannot be created: ${problem}`);
      if (await this.tableRow(table.id)) throw new Error(`table "${table.id}" already exists`);
      if (!(await this.readBucket(table.bucketId))) throw new Error(`bucket "${table.bucketId}" does not exist`);
      const created = new Date().toISOString();
      const columns = table.columns.map((name) => ({ name, type: table.types?.[name] }));
      await this.transaction(async () => {
        await this.conn.run(createTableSql(qualified(table.bucketId, table.name), columns, table.primaryKey ?? []));
        await this.conn.run('INSERT INTO _sluice.tables VALUES ($1, $2, $3, $4, NULL, $5)', [
          table.id, table.bucketId, table.name, created, JSON.stringify(table.metadata ?? {}),
        ]);
      });
      return this.completeTable((await this.tableRow(table.id))!);
    });
  }

  addColumns(tableId: string, columns: readonly ColumnDefinition[]): Promise<TargetTable> {
    return this.exclusive(async () => {
      const row = await this.requireTableRow(tableId);
      const shape = await this.shapeOf(str(row.bucket_id), str(row.name));
      const problem = addColumnsProblem(shape.columns.map((c) => c.name), columns);
      if (problem !== undefined) throw new Error(`columns cannot be added to table "${tableId}": ${problem}`);
      const table = qualified(str(row.bucket_id), str(row.name));
      await this.transaction(async () => {
        for (const column of columns) for (const sql of addColumnSql(table, column)) await this.conn.run(sql);
      });
      return this.completeTable(row);
    });
  }

  dropTable(tableId: string): Promise<boolean> {
    return this.exclusive(async () => {
      const row = await this.tableRow(tableId);
      if (!row) return false;
      await this.transaction(async () => {
        await this.conn.run(`DROP TABLE IF EXISTS ${qualified(str(row.bucket_id), str(row.name))}`);
        await this.conn.run('DELETE FROM _sluice.imports WHERE table_id = $1', [tableId]);
        await this.conn.run('DELETE FROM _sluice.tables WHERE id = $1', [tableId]);
      });
      return true;
    });
  }

  // ---- rows ----

  insertRows(tableId: string, rows: readonly (readonly (string | null)[])[], options: WriteOptions = {}): Promise<WriteResult> {
    return this.exclusive(async () => {
      const row = await this.requireTableRow(tableId);
      const shape = await this.shapeOf(str(row.bucket_id), str(row.name));
      const plan = planWrite(tableId, shape, options);
      checkRowLengths(tableId, rows, plan.data.length);
      return this.write(tableId, options, async () => {
        // The rows go through a temporary table of text fields, so that they are cast, checked
        // and upserted as an import's are. The appender writes inside the open transaction: a
        // rollback discards its rows too.
        const fields = plan.data.map((_, i) => `c${i} VARCHAR`).join(', ');
        await this.conn.run(`CREATE OR REPLACE TEMP TABLE sluice_rows (${fields}, ordinality BIGINT)`);
        const appender = await this.conn.createAppender('sluice_rows', 'main', 'temp');
        try {
          rows.forEach((r, n) => {
            for (const value of r) {
              if (value === null) appender.appendNull();
              else appender.appendVarchar(value);
            }
            appender.appendBigInt(BigInt(n + 1));
            appender.endRow();
          });
        } finally {
          appender.closeSync();
        }
        const written = await this.writeFrom(row, shape, plan, 'temp.sluice_rows');
        // (After a failure the rollback drops it: it was made in the transaction.)
        await this.conn.run('DROP TABLE temp.sluice_rows');
        return written;
      });
    });
  }

  importCsv(tableId: string, path: string | readonly string[], options: WriteOptions = {}): Promise<WriteResult> {
    return this.exclusive(async () => {
      const row = await this.requireTableRow(tableId);
      const shape = await this.shapeOf(str(row.bucket_id), str(row.name));
      const plan = planWrite(tableId, shape, options);
      const paths = typeof path === 'string' ? [path] : [...path];
      // Positional names c0..cN keep user column names out of the read_csv options. An unquoted
      // empty field is NULL, a quoted one '' (allow_quoted_nulls = false); writeStatements
      // makes NULL '' in an untyped column. read_csv takes a list of files, decompresses ".gz"
      // by the file extension, and for an upsert numbers the rows across the files in their
      // order (WITH ORDINALITY: the last row of a key wins). See newlineOnly.
      const numbered = shape.primaryKey.length > 0 ? ' WITH ORDINALITY' : '';
      const spec = plan.data.map((_, i) => `'c${i}': 'VARCHAR'`).join(', ');
      return this.write(tableId, options, async () => {
        if (paths.length === 0) return 0;
        // The database reads files only in its own folder (duckdb-lockdown.ts).
        const readable = await linkIn(this.ioDir, paths);
        try {
          const source = `read_csv($paths, header = false, auto_detect = false, delim = ',', quote = '"', escape = '"',
               null_padding = false, allow_quoted_nulls = false,${options.newlineOnly ? " new_line = '\\n'," : ''} columns = {${spec}})${numbered}`;
          return await this.writeFrom(row, shape, plan, source, { paths: listValue(readable.paths) });
        } finally {
          await readable.remove();
        }
      });
    });
  }

  preview(tableId: string, limit: number): Promise<string[][]> {
    return this.exclusive(async () => {
      const row = await this.requireTableRow(tableId);
      const { columns } = await this.shapeOf(str(row.bucket_id), str(row.name));
      // No ORDER BY: DuckDB keeps insertion order (preserve_insertion_order defaults to true).
      const reader = await this.conn.runAndReadAll(
        `SELECT ${columns.map(textExpression).join(', ')} FROM ${qualified(str(row.bucket_id), str(row.name))} LIMIT $1`,
        [Math.max(0, Math.floor(limit))],
      );
      return reader.getRowsJS().map((r) => r.map((v) => (v === null || v === undefined ? '' : String(v))));
    });
  }

  rowCount(tableId: string): Promise<number> {
    return this.exclusive(async () => {
      const row = await this.requireTableRow(tableId);
      return this.count(str(row.bucket_id), str(row.name));
    });
  }

  exportTable(tableId: string, spec: ExportSpec, path: string, onProgress?: (progress: ExportProgress) => void): Promise<ExportResult> {
    return this.reading(async (conn) => {
      const row = await this.requireTableRowOn(conn, tableId);
      const { columns } = await this.shapeOf(str(row.bucket_id), str(row.name), conn);
      const select = exportSelect(qualified(str(row.bucket_id), str(row.name)), columns, spec);
      const [{ n }] = (await conn.runAndReadAll(`SELECT count(*) AS n FROM (${select})`)).getRowObjectsJS();
      const totalRows = Number(n);
      onProgress?.({ rows: 0, totalRows });
      const options = spec.format === 'parquet' ? 'FORMAT parquet' : `FORMAT csv, HEADER true, COMPRESSION ${spec.gzip ? 'gzip' : 'none'}`;
      // Written in the database's own folder (duckdb-lockdown.ts), then moved into place.
      const written = await ioPathFor(this.ioDir, path);
      // DuckDB reports how far a running statement is: the export's progress, every half second.
      const timer = setInterval(() => {
        const { percentage } = conn.progress;
        if (percentage > 0) onProgress?.({ rows: Math.floor((totalRows * Math.min(100, percentage)) / 100), totalRows });
      }, 500);
      try {
        await conn.run(`COPY (${select}) TO ${duckLiteral(written)} (${options})`);
        await moveOut(written, path);
      } finally {
        clearInterval(timer);
        await rm(written, { force: true });
      }
      onProgress?.({ rows: totalRows, totalRows });
      return { rows: totalRows, bytes: (await stat(path)).size };
    });
  }

  query(sql: string, options: QueryOptions): Promise<QueryResult> {
    return this.withQueryConnection((conn) => this.runQuery(conn, sql, options));
  }

  /**
   * Runs `fn` on a connection of the read-only queries (one of its own while it runs; in shared
   * mode the file's one connection, in the write queue), which has the database's lockdown.
   * Public for the tests that check what such a connection refuses whatever a statement check
   * would have let through.
   */
  async withQueryConnection<R>(fn: (conn: DuckDBConnection) => Promise<R>): Promise<R> {
    if (this.options.shared) return this.exclusive(() => fn(this.conn));
    if (this.closed || this.closing) throw new Error('the DuckDB target is closed');
    if (!this.instance) throw new Error('the DuckDB target is not open');
    const conn = this.idleQueryConnections.pop() ?? (await this.instance.connect());
    const work = fn(conn);
    this.runningQueries.set(conn, work.catch(() => undefined));
    try {
      return await work;
    } finally {
      this.runningQueries.delete(conn);
      if (this.closing) conn.closeSync();
      else this.idleQueryConnections.push(conn);
    }
  }

  /**
   * One read-only query on `conn`. The interrupt is armed first: DuckDB folds constant
   * expressions while it prepares a statement, so `SELECT len(range(60000000))` can take a minute
   * before anything runs. DuckDB notices an interrupt only between pieces of work (at once while
   * rows flow, up to tens of seconds inside one huge value), and forgets one that comes between
   * two statements: each step checks the flag too, and a fetch that ended because of it is a
   * timeout, never a short answer.
   */
  private async runQuery(conn: DuckDBConnection, sql: string, options: QueryOptions): Promise<QueryResult> {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      conn.interrupt();
    }, Math.max(1, options.timeoutMs));
    const timeout = () => new QueryRefusedError('timeout', 'The query ran longer than the statement timeout and was cancelled.');
    /** A step of the query: refused once the time is up; DuckDB's memory errors named as such; others as `invalid` when asked. */
    const step = async <T>(work: () => Promise<T>, invalid = false): Promise<T> => {
      if (timedOut) throw timeout();
      let value: T;
      try {
        value = await work();
      } catch (err) {
        if (timedOut) throw timeout();
        const message = (err as Error).message;
        if (OUT_OF_MEMORY.test(message)) throw new QueryRefusedError('memory', this.memoryMessage(message));
        throw invalid ? new QueryRefusedError('invalid', message) : err;
      }
      if (timedOut) throw timeout();
      return value;
    };
    try {
      // The parser alone (json_serialize_sql) says what the statement is and what it reads,
      // before anything is bound: binding read_csv('/some/file') would already read the file.
      const [[serialized]] = (await step(() => conn.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [sql]))).getRowsJS();
      const tree = JSON.parse(String(serialized)) as unknown;
      const { relations, tableFunctions } = readStatementTree(tree);
      if (tableFunctions.length > 0) {
        throw new QueryRefusedError('forbidden', `The table function ${tableFunctions[0]}() cannot be used here: a query reads the tables of buckets only.`);
      }
      const oversized = valueSizeProblem(tree);
      if (oversized !== undefined) throw new QueryRefusedError('memory', `Refused before it ran: ${oversized} DuckDB does not count such a value against its memory limit.`);
      const catalog = str((await step(() => conn.runAndReadAll('SELECT current_database()'))).getRowsJS()[0][0]);
      const buckets = new Set((await step(() => conn.runAndReadAll('SELECT id FROM _sluice.buckets'))).getRowsJS().map((r) => str(r[0])));
      options.authorize(relations.map((r) => ({
        schema: r.schema,
        table: r.table,
        bucketId: (r.catalog === '' || r.catalog === catalog) && buckets.has(r.schema) ? r.schema : undefined,
      })));
      const prepared = await step(() => conn.prepare(sql), true);
      if (prepared.statementType !== StatementType.SELECT) {
        throw new QueryRefusedError('write', 'Only one statement that reads (SELECT) can run here. Nothing was executed.');
      }
      const result = await step(() => prepared.stream(), true);
      const columns = result.columnNames().map((name, i) => ({ name, type: result.columnTypes()[i].toString() }));
      const rows: unknown[][] = [];
      while (rows.length <= options.maxRows) {
        const chunk = await step(() => result.fetchChunk(), true);
        if (!chunk || chunk.rowCount === 0) break;
        for (const r of chunk.convertRows(jsonQueryValue)) rows.push(r);
      }
      const truncated = rows.length > options.maxRows;
      return { columns, rows: truncated ? rows.slice(0, options.maxRows) : rows, truncated };
    } finally {
      clearTimeout(timer);
    }
  }

  private memoryMessage(duckdbMessage: string): string {
    const limit = this.options.memoryLimitBytes === undefined ? "the database's memory limit" : `the SQL memory limit (${byteSizeString(this.options.memoryLimitBytes)})`;
    return `The query needed more memory or temporary disk than ${limit} allows, and was stopped (${duckdbMessage.split('\n')[0]}).`;
  }

  position(sink: string): Promise<number | undefined> {
    return this.exclusive(async () => {
      const [row] = await this.rows('SELECT through FROM _sluice.positions WHERE stream = $1', [sink]);
      return row === undefined ? undefined : Number(row.through);
    });
  }

  claimSink(sink: string, owner: string): Promise<number | undefined> {
    return this.exclusive(() => this.transaction(async () => {
      await this.conn.run(
        'INSERT INTO _sluice.stream_owners VALUES ($1, $2, $3) ON CONFLICT (stream) DO UPDATE SET owner = excluded.owner, claimed = excluded.claimed',
        [sink, owner, new Date().toISOString()],
      );
      const [row] = await this.rows('SELECT through FROM _sluice.positions WHERE stream = $1', [sink]);
      return row === undefined ? undefined : Number(row.through);
    }));
  }

  forgetPositions(prefix: string): Promise<void> {
    return this.exclusive(async () => {
      await this.conn.run('DELETE FROM _sluice.positions WHERE starts_with(stream, $1)', [prefix]);
      await this.conn.run('DELETE FROM _sluice.stream_owners WHERE starts_with(stream, $1)', [prefix]);
    });
  }

  /** Waits for queued work, then closes the file; later calls fail, repeated close() is fine. */
  close(): Promise<void> {
    if (!this.closing) {
      const running = [...this.runningQueries];
      for (const [conn] of running) conn.interrupt();
      this.closing = Promise.all([this.queue, this.readQueue, ...running.map(([, work]) => work)]).then(() => {
        this.closed = true;
        this.disconnect();
      });
    }
    return this.closing;
  }

  // ---- internals (each runs inside exclusive()) ----

  /** Runs fn after every earlier call has finished; a failure does not block later calls. */
  private exclusive<R>(fn: () => Promise<R>): Promise<R> {
    const run = this.queue.then(async () => {
      if (this.closed) throw new Error('the DuckDB target is closed');
      if (!this.options.shared) return fn();
      await this.connect();
      try {
        return await fn();
      } finally {
        this.disconnect();
      }
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Runs a read on the read connection, one at a time, beside the writes; in shared mode (the
   * file is opened per operation) in the write queue, on its connection.
   */
  private reading<R>(fn: (conn: DuckDBConnection) => Promise<R>): Promise<R> {
    if (this.options.shared) return this.exclusive(() => fn(this.conn));
    const run = this.readQueue.then(async () => {
      if (this.closed || this.closing) throw new Error('the DuckDB target is closed');
      if (!this.instance) throw new Error('the DuckDB target is not open');
      this.readConnection ??= await this.instance.connect();
      return fn(this.readConnection);
    });
    this.readQueue = run.catch(() => undefined);
    return run;
  }

  private async transaction<R>(fn: () => Promise<R>): Promise<R> {
    await this.conn.run('BEGIN TRANSACTION');
    try {
      const result = await fn();
      await this.conn.run('COMMIT');
      return result;
    } catch (err) {
      await this.conn.run('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  /** One write of rows: import id check, rows, import record and last import time, atomically. */
  private write(tableId: string, options: WriteOptions, insert: () => Promise<number>): Promise<WriteResult> {
    return this.transaction(async () => {
      if (options.importId !== undefined) {
        const seen = await this.rows('SELECT 1 FROM _sluice.imports WHERE table_id = $1 AND import_id = $2', [
          tableId, options.importId,
        ]);
        if (seen.length > 0) return { inserted: 0, duplicate: true };
      }
      const owner = options.position?.owner;
      if (owner !== undefined) {
        const [claim] = await this.rows('SELECT owner FROM _sluice.stream_owners WHERE stream = $1', [options.position!.sink]);
        if (claim !== undefined && claim.owner !== owner) throw new SinkClaimedError(options.position!.sink, owner, String(claim.owner));
      }
      const inserted = await insert();
      if (options.expectedRows !== undefined && inserted !== options.expectedRows) {
        throw new Error(`the write to table "${tableId}" would insert ${inserted} rows, ${options.expectedRows} were expected; nothing was written`);
      }
      const now = new Date().toISOString();
      if (options.importId !== undefined) {
        await this.conn.run('INSERT INTO _sluice.imports VALUES ($1, $2, $3, $4)', [tableId, options.importId, inserted, now]);
      }
      if (options.position !== undefined) {
        await this.conn.run(
          'INSERT INTO _sluice.positions VALUES ($1, $2) ON CONFLICT (stream) DO UPDATE SET through = greatest(through, excluded.through)',
          [options.position.sink, options.position.through],
        );
      }
      await this.conn.run('UPDATE _sluice.tables SET last_import_date = $1 WHERE id = $2', [now, tableId]);
      return { inserted, duplicate: false };
    });
  }

  /**
   * Writes the data of `source` (the fields c0..cN and `ordinality`, see duckdb-writes.ts) into
   * the table by the plan, inside write()'s transaction; returns the rows read.
   */
  private async writeFrom(row: Record<string, unknown>, shape: TableShape, plan: WritePlan, source: string, params?: Record<string, DuckDBValue>): Promise<number> {
    const table = qualified(str(row.bucket_id), str(row.name));
    // A table written before typed columns: its untyped columns have no default to give.
    for (const column of plan.needDefault) await this.conn.run(`ALTER TABLE ${table} ALTER COLUMN ${ident(column.name)} SET DEFAULT ''`);
    const { statements, countAt } = writeStatements(table, plan.data, plan.others, shape.primaryKey, source);
    let rows = 0;
    for (const [i, sql] of statements.entries()) {
      const result = await this.conn.runAndReadAll(sql, sql.includes('$paths') ? params : undefined);
      if (countAt === undefined) rows = Number(result.rowsChanged);
      else if (i === countAt) rows = Number(result.getRowObjectsJS()[0].n);
    }
    return rows;
  }

  private async rows(sql: string, params?: DuckDBValue[]): Promise<Record<string, unknown>[]> {
    return (await this.conn.runAndReadAll(sql, params)).getRowObjectsJS();
  }

  private async readBucket(bucketId: string): Promise<TargetBucket | undefined> {
    const [row] = await this.rows('SELECT * FROM _sluice.buckets WHERE id = $1', [bucketId]);
    return row && toBucket(row);
  }

  private async tableRow(tableId: string): Promise<Record<string, unknown> | undefined> {
    const [row] = await this.rows('SELECT * FROM _sluice.tables WHERE id = $1', [tableId]);
    return row;
  }

  private async requireTableRow(tableId: string): Promise<Record<string, unknown>> {
    return this.requireTableRowOn(this.conn, tableId);
  }

  private async requireTableRowOn(conn: DuckDBConnection, tableId: string): Promise<Record<string, unknown>> {
    const [row] = (await conn.runAndReadAll('SELECT * FROM _sluice.tables WHERE id = $1', [tableId])).getRowObjectsJS();
    if (!row) throw new Error(`table "${tableId}" does not exist`);
    return row;
  }

  private async completeTable(row: Record<string, unknown>): Promise<TargetTable> {
    const bucketId = str(row.bucket_id);
    const name = str(row.name);
    // The columns and the key come from DuckDB's catalog, the source of truth for the table's shape.
    const { columns, primaryKey } = await this.shapeOf(bucketId, name);
    return {
      id: str(row.id),
      bucketId,
      name,
      columns: columns.map((c) => c.name),
      definitions: columns.map(targetColumn),
      primaryKey,
      created: str(row.created),
      lastImportDate: row.last_import_date === null ? null : str(row.last_import_date),
      rowsCount: await this.count(bucketId, name),
      metadata: parseMetadata(row.metadata),
    };
  }

  /** The table's columns (without the system column) and primary key from DuckDB's catalog (the truth). */
  private async shapeOf(schema: string, table: string, conn = this.conn): Promise<TableShape> {
    const [[key]] = (await conn.runAndReadAll(
      `SELECT coalesce(any_value(constraint_column_names), []) FROM duckdb_constraints()
        WHERE database_name = current_database() AND schema_name = $1 AND table_name = $2 AND constraint_type = 'PRIMARY KEY'`,
      [schema, table],
    )).getRowsJS();
    const primaryKey = (key as unknown[]).map(str);
    const rows = (await conn.runAndReadAll(
      `SELECT column_name, data_type, is_nullable, column_default FROM duckdb_columns()
        WHERE database_name = current_database() AND schema_name = $1 AND table_name = $2
        ORDER BY column_index`,
      [schema, table],
    )).getRowObjectsJS();
    const columns = rows.filter((r) => r.column_name !== TIMESTAMP_COLUMN).map((r) => {
      const catalog = {
        name: str(r.column_name), nativeType: str(r.data_type), notNull: r.is_nullable === false,
        hasDefault: r.column_default !== null, inPrimaryKey: primaryKey.includes(str(r.column_name)),
      };
      return { ...readColumn('duckdb', catalog), hasDefault: catalog.hasDefault };
    });
    return { columns, primaryKey };
  }

  private async count(schema: string, table: string): Promise<number> {
    const [row] = await this.rows(`SELECT count(*) AS n FROM ${qualified(schema, table)}`);
    return Number(row.n);
  }
}

/** DuckDB's errors for a query past memory_limit or max_temp_directory_size. */
const OUT_OF_MEMORY = /^Out of Memory Error|max_temp_directory_size/;

/**
 * The SELECT of an export (literals: COPY takes no parameters). Typed columns are written as
 * their text (textExpression), and compared by it in `where`, NULL as ''.
 */
function exportSelect(table: string, columns: readonly TargetColumn[], spec: ExportSpec): string {
  const byName = new Map(columns.map((c) => [c.name, c]));
  const text = (name: string) => {
    const column = byName.get(name);
    return column === undefined || isUntypedColumn(column) ? ident(name) : textExpression(column);
  };
  const select = spec.columns
    .map((c) => (c === TIMESTAMP_COLUMN ? `strftime(${ident(c)}, '%Y-%m-%dT%H:%M:%S.%fZ') AS ${ident(c)}` : `${text(c)} AS ${ident(c)}`))
    .join(', ');
  const where: string[] = [];
  if (spec.where) {
    const column = byName.get(spec.where.column);
    const compared = column === undefined || isUntypedColumn(column) ? ident(spec.where.column) : `COALESCE(${textExpression(column)}, '')`;
    where.push(spec.where.values.length === 0
      ? (spec.where.operator === 'eq' ? 'false' : 'true')
      : `${compared} ${spec.where.operator === 'eq' ? 'IN' : 'NOT IN'} (${spec.where.values.map(duckLiteral).join(', ')})`);
  }
  const time = (d: Date) => `${duckLiteral(d.toISOString().replace('T', ' ').replace('Z', ''))}::TIMESTAMP`;
  if (spec.changedSince) where.push(`${ident(TIMESTAMP_COLUMN)} >= ${time(spec.changedSince)}`);
  if (spec.changedUntil) where.push(`${ident(TIMESTAMP_COLUMN)} < ${time(spec.changedUntil)}`);
  return `SELECT ${select} FROM ${table}`
    + (where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '')
    + (spec.limit !== undefined ? ` LIMIT ${Math.max(0, Math.floor(spec.limit))}` : '');
}

function str(v: unknown): string {
  return String(v);
}

function parseMetadata(v: unknown): Record<string, string> {
  return typeof v === 'string' ? (JSON.parse(v) as Record<string, string>) : {};
}

function toBucket(row: Record<string, unknown>): TargetBucket {
  return {
    id: str(row.id),
    stage: str(row.stage) as Stage,
    name: str(row.name),
    created: str(row.created),
    metadata: parseMetadata(row.metadata),
  };
}

/**
 * Creates a new shared tables file so that no other process ever sees it half written: nodes
 * starting together on a new file would otherwise open it while DuckDB writes its header and
 * fail ("not a valid DuckDB database file"). The database is made under a name of this process,
 * then linked into place; whoever links first wins, the others take that file.
 */
async function createAtomically(path: string): Promise<void> {
  const own = `${path}.${process.pid}.${randomUUID().slice(0, 8)}.new`;
  const instance = await DuckDBInstance.create(own);
  instance.closeSync();
  try {
    linkSync(own, path);
  } catch (err) {
    // EEXIST: another node was first. Anything else (a file system without hard links): DuckDB creates it in place.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST' && !existsSync(path)) return;
  } finally {
    rmSync(own, { force: true });
    rmSync(`${own}.wal`, { force: true });
  }
}
