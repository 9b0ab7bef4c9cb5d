import { randomUUID } from 'node:crypto';
import { existsSync, linkSync, rmSync } from 'node:fs';
import { DuckDBInstance, listValue, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import {
  StreamClaimedError,
  TableColumnsMismatchError,
  type NewBucket,
  type NewTable,
  type Stage,
  type Target,
  type TargetBucket,
  type TargetTable,
  type WriteOptions,
  type WriteResult,
} from '../../storage/target.js';

/**
 * The embedded Target adapter: one DuckDB file. A bucket is a DuckDB schema named by the bucket
 * id ("in.c-my-bucket"), a table is a table of that schema named by the table name, and every
 * column is VARCHAR. Bucket and table metadata (created time, last import, key/values) and the
 * ids of applied imports live in the `_sluice` schema of the same file, so that a table and its
 * metadata, or rows and their import id, are written in one DuckDB transaction.
 *
 * All work goes through one connection and one queue: DuckDB transactions are per connection,
 * and the queue keeps BEGIN..COMMIT of one caller from interleaving with another's statements.
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
}

const LOCKED = /Could not set lock on file/;

export class DuckDbTarget implements Target {
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private closing?: Promise<void>;
  private instance: DuckDBInstance | undefined;
  private connection: DuckDBConnection | undefined;

  private constructor(
    private readonly path: string,
    private readonly options: DuckDbTargetOptions,
  ) {}

  /** Opens (creating if needed) the DuckDB file at `path`. */
  static async open(path: string, options: DuckDbTargetOptions = {}): Promise<DuckDbTarget> {
    if (options.shared && !existsSync(path)) await createAtomically(path);
    const target = new DuckDbTarget(path, options);
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
        this.instance = await DuckDBInstance.create(this.path);
        break;
      } catch (err) {
        if (!this.options.shared || !LOCKED.test((err as Error).message)) throw err;
        if (Date.now() > deadline) throw new Error(`the tables file ${this.path} stayed locked by another process for ${this.options.lockWaitMs ?? 30_000} ms`, { cause: err });
        await new Promise((r) => setTimeout(r, delay));
      }
    }
    this.connection = await this.instance.connect();
  }

  private disconnect(): void {
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
      if (table.columns.length === 0) throw new Error('a table needs at least one column');
      if (await this.tableRow(table.id)) throw new Error(`table "${table.id}" already exists`);
      if (!(await this.readBucket(table.bucketId))) throw new Error(`bucket "${table.bucketId}" does not exist`);
      const created = new Date().toISOString();
      const columns = table.columns.map((c) => `${ident(c)} VARCHAR NOT NULL`).join(', ');
      await this.transaction(async () => {
        await this.conn.run(`CREATE TABLE ${qualified(table.bucketId, table.name)} (${columns})`);
        await this.conn.run('INSERT INTO _sluice.tables VALUES ($1, $2, $3, $4, NULL, $5)', [
          table.id, table.bucketId, table.name, created, JSON.stringify(table.metadata ?? {}),
        ]);
      });
      return {
        id: table.id, bucketId: table.bucketId, name: table.name, columns: [...table.columns],
        created, lastImportDate: null, rowsCount: 0, metadata: { ...table.metadata },
      };
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

  insertRows(tableId: string, rows: readonly (readonly string[])[], options: WriteOptions = {}): Promise<WriteResult> {
    return this.exclusive(async () => {
      const row = await this.requireTableRow(tableId);
      const columns = await this.columnsOf(str(row.bucket_id), str(row.name));
      checkColumns(tableId, columns, options);
      rows.forEach((r, i) => {
        if (r.length !== columns.length) {
          throw new Error(`row ${i} has ${r.length} values, table "${tableId}" has ${columns.length} columns`);
        }
      });
      return this.write(tableId, options, async () => {
        // The appender writes inside the open transaction: a rollback discards its rows too.
        const appender = await this.conn.createAppender(str(row.name), str(row.bucket_id));
        try {
          for (const r of rows) {
            for (const v of r) appender.appendVarchar(v);
            appender.endRow();
          }
        } finally {
          appender.closeSync();
        }
        return rows.length;
      });
    });
  }

  importCsv(tableId: string, path: string | readonly string[], options: WriteOptions = {}): Promise<WriteResult> {
    return this.exclusive(async () => {
      const row = await this.requireTableRow(tableId);
      const columns = await this.columnsOf(str(row.bucket_id), str(row.name));
      checkColumns(tableId, columns, options);
      const paths = typeof path === 'string' ? [path] : [...path];
      // Positional names c0..cN keep user column names out of the read_csv options; COALESCE
      // turns the reader's NULL for an unquoted empty field into the empty string. read_csv
      // takes a list of files and decompresses ".gz" by the file extension. See newlineOnly.
      const spec = columns.map((_, i) => `'c${i}': 'VARCHAR'`).join(', ');
      const select = columns.map((_, i) => `COALESCE(c${i}, '')`).join(', ');
      return this.write(tableId, options, async () => {
        if (paths.length === 0) return 0;
        const result = await this.conn.run(
          `INSERT INTO ${qualified(str(row.bucket_id), str(row.name))} SELECT ${select} FROM read_csv($paths,
             header = false, auto_detect = false, delim = ',', quote = '"', escape = '"',
             null_padding = false,${options.newlineOnly ? " new_line = '\\n'," : ''} columns = {${spec}})`,
          { paths: listValue(paths) },
        );
        return Number(result.rowsChanged);
      });
    });
  }

  preview(tableId: string, limit: number): Promise<string[][]> {
    return this.exclusive(async () => {
      const row = await this.requireTableRow(tableId);
      // No ORDER BY: DuckDB keeps insertion order (preserve_insertion_order defaults to true).
      const reader = await this.conn.runAndReadAll(
        `SELECT * FROM ${qualified(str(row.bucket_id), str(row.name))} LIMIT $1`,
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

  position(stream: string): Promise<number | undefined> {
    return this.exclusive(async () => {
      const [row] = await this.rows('SELECT through FROM _sluice.positions WHERE stream = $1', [stream]);
      return row === undefined ? undefined : Number(row.through);
    });
  }

  claimStream(stream: string, owner: string): Promise<number | undefined> {
    return this.exclusive(() => this.transaction(async () => {
      await this.conn.run(
        'INSERT INTO _sluice.stream_owners VALUES ($1, $2, $3) ON CONFLICT (stream) DO UPDATE SET owner = excluded.owner, claimed = excluded.claimed',
        [stream, owner, new Date().toISOString()],
      );
      const [row] = await this.rows('SELECT through FROM _sluice.positions WHERE stream = $1', [stream]);
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
    this.closing ??= this.queue.then(() => {
      this.closed = true;
      this.disconnect();
    });
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
        const [claim] = await this.rows('SELECT owner FROM _sluice.stream_owners WHERE stream = $1', [options.position!.stream]);
        if (claim !== undefined && claim.owner !== owner) throw new StreamClaimedError(options.position!.stream, owner, String(claim.owner));
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
          [options.position.stream, options.position.through],
        );
      }
      await this.conn.run('UPDATE _sluice.tables SET last_import_date = $1 WHERE id = $2', [now, tableId]);
      return { inserted, duplicate: false };
    });
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
    const row = await this.tableRow(tableId);
    if (!row) throw new Error(`table "${tableId}" does not exist`);
    return row;
  }

  private async completeTable(row: Record<string, unknown>): Promise<TargetTable> {
    const bucketId = str(row.bucket_id);
    const name = str(row.name);
    return {
      id: str(row.id),
      bucketId,
      name,
      // The columns come from DuckDB's catalog, the source of truth for the table's shape.
      columns: await this.columnsOf(bucketId, name),
      created: str(row.created),
      lastImportDate: row.last_import_date === null ? null : str(row.last_import_date),
      rowsCount: await this.count(bucketId, name),
      metadata: parseMetadata(row.metadata),
    };
  }

  private async columnsOf(schema: string, table: string): Promise<string[]> {
    const rows = await this.rows(
      `SELECT column_name FROM duckdb_columns()
        WHERE database_name = current_database() AND schema_name = $1 AND table_name = $2
        ORDER BY column_index`,
      [schema, table],
    );
    return rows.map((r) => str(r.column_name));
  }

  private async count(schema: string, table: string): Promise<number> {
    const [row] = await this.rows(`SELECT count(*) AS n FROM ${qualified(schema, table)}`);
    return Number(row.n);
  }
}

/** A DuckDB identifier in double quotes (embedded quotes doubled), safe for any name. */
function ident(name: string): string {
  if (name.includes('\u0000')) throw new Error('identifiers cannot contain NUL');
  return `"${name.replaceAll('"', '""')}"`;
}

/** Throws (before anything is written) when the caller expects other columns than the table has. */
function checkColumns(tableId: string, actual: string[], options: WriteOptions): void {
  const expected = options.columns;
  if (expected === undefined) return;
  if (expected.length !== actual.length || expected.some((c, i) => c !== actual[i])) {
    throw new TableColumnsMismatchError(tableId, actual, expected);
  }
}

function qualified(schema: string, table: string): string {
  return `${ident(schema)}.${ident(table)}`;
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
