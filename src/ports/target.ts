/**
 * Target port: where table rows land (docs/architecture.md "Ports and adapters"). Two adapters: one
 * embedded DuckDB file (src/adapters/target/duckdb-target.ts, the default) and a PostgreSQL
 * server (src/adapters/target/postgres-target.ts, `--target postgres://...`).
 *
 * The port knows nothing about Storage id rules: callers (TableService) validate ids and pass
 * the bucket id and table name already split. A column is untyped (the target's string type, a
 * value never NULL: a missing value is the empty string, as in Keboola Storage tables) or typed
 * with a base type (the target's native type, NULL for a missing value; the native types per
 * target are in src/adapters/target/column-types.ts). Beside its columns every table has the
 * system column `_timestamp` (when the row was written, as Keboola tables have it): it is not
 * among `columns`, filled by the target, and read by `changedSince`. The rules both sides of the
 * port share about columns (which is untyped, what a write may fill) are in target-columns.ts.
 */

import type { BaseType } from '../model/definition.js';

/** The system column of every table: when the row was written (the write's transaction time). */
export const TIMESTAMP_COLUMN = '_timestamp';

export type Stage = 'in' | 'out';

export interface TargetBucket {
  /** e.g. "in.c-my-bucket" */
  id: string;
  stage: Stage;
  /** e.g. "c-my-bucket" */
  name: string;
  /** ISO time */
  created: string;
  metadata: Record<string, string>;
}

/** A column as a table is created or extended with it. */
export interface ColumnDefinition {
  name: string;
  /** Absent: the untyped string column (never NULL; '' for rows written without it). */
  type?: BaseType;
}

/**
 * A column as the target's catalog has it (the table detail), read back from the database, so
 * that a table changed behind Sluice's back is seen as it is.
 */
export interface TargetColumn {
  name: string;
  /**
   * The base type; absent for an untyped string column, and for a column of a native type that
   * has no base type (see isUntypedColumn in target-columns.ts for which is which).
   */
  type?: BaseType;
  /** The target's own type: VARCHAR, BIGINT, DECIMAL(38,9), numeric, jsonb, ... */
  nativeType: string;
  nullable: boolean;
}

export interface TargetTable {
  /** e.g. "in.c-my-bucket.my-table" */
  id: string;
  bucketId: string;
  name: string;
  /** Column names in table order. */
  columns: string[];
  /** The same columns with their types, in table order. */
  definitions: TargetColumn[];
  /** The primary key's columns in key order; empty when the table has none. */
  primaryKey: string[];
  /** ISO time */
  created: string;
  /** ISO time of the last insert or import, null before the first. */
  lastImportDate: string | null;
  rowsCount: number;
  metadata: Record<string, string>;
}

export interface NewBucket {
  id: string;
  stage: Stage;
  name: string;
  metadata?: Record<string, string>;
}

export interface NewTable {
  id: string;
  bucketId: string;
  name: string;
  columns: string[];
  /** Base types of typed columns by name; a column not named here is untyped. */
  types?: Readonly<Record<string, BaseType>>;
  /** The primary key's columns (of `columns`), in key order: the table's writes then upsert. */
  primaryKey?: readonly string[];
  metadata?: Record<string, string>;
}

export interface WriteOptions {
  /**
   * Idempotency key of an import: it is recorded in the same transaction as the rows, and a
   * write with an import id already recorded for the table changes nothing (a retried import
   * after a crash is a no-op; docs/architecture.md "Delivery").
   */
  importId?: string;
  /**
   * importCsv: every row of the files ends with "\n" (Sluice's own slices). The reader then
   * takes a carriage return in a quoted value as data; left to detect the line ends itself (as
   * for component output, which may end rows with "\r\n"), it refuses such a value.
   */
  newlineOnly?: boolean;
  /**
   * The columns the data fills, in the data's order. When set, the write fails with
   * TableColumnsMismatchError and changes nothing unless the table has each of them (and, with
   * `types`, of that base type: the table was changed since the data was mapped). The table's
   * other columns (taken out of the mapping since it was created) get their default: NULL, or ''
   * when untyped. Without it the data fills every column of the table, by position.
   */
  columns?: readonly string[];
  /** With `columns`: the base types the data was mapped for (a column not named is untyped). */
  types?: Readonly<Record<string, BaseType>>;
  /**
   * The number of rows the caller expects the write to insert. When set, a write that would
   * insert another number of rows fails and changes nothing (e.g. a damaged file).
   */
  expectedRows?: number;
  /**
   * How far in its source's partition (by offset) a sink's rows reach (`sink`: the sink's path,
   * "<branchId>/<sourceId>/<sink instance>"): recorded in the same
   * transaction as the rows, never moved back. After a hand-over between cluster nodes, the new
   * owner of a sink reads on from there, so rows another node imported are not written twice.
   * With `owner`, the write is refused with SinkClaimedError (nothing written) when another
   * owner has claimed the sink since (Target.claimSink): the fence between cluster nodes.
   */
  position?: { sink: string; through: number; owner?: string };
}

export interface WriteResult {
  /**
   * Rows written by this call (0 for a duplicate import). For a table with a primary key: the
   * rows read, each of which was applied (inserted, or replacing the row of its key; among rows
   * of one write with the same key the last one wins).
   */
  inserted: number;
  /** True when the import id was already recorded and nothing was written. */
  duplicate: boolean;
}

/** A write with `WriteOptions.columns` found the table with other columns; nothing was written. */
export class TableColumnsMismatchError extends Error {
  override name = 'TableColumnsMismatchError';

  constructor(
    readonly tableId: string,
    readonly actual: readonly string[],
    readonly expected: readonly string[],
    /** What is wrong, in words: the column missing, or whose type differs (target-columns.ts). */
    readonly reason?: string,
  ) {
    super(`the columns of table "${tableId}" ${JSON.stringify(actual)} do not match the expected columns ${JSON.stringify(expected)}${reason ? `: ${reason}` : ''}`);
  }
}

/**
 * A write for a sink (WriteOptions.position.owner) by an owner that is not the sink's
 * owner any more: another node claimed it since, and reads its records again from the event
 * log. Nothing was written.
 */
export class SinkClaimedError extends Error {
  override name = 'SinkClaimedError';

  constructor(
    readonly sink: string,
    readonly owner: string,
    readonly claimedBy: string,
  ) {
    super(`the sink "${sink}" was claimed by ${claimedBy} since ${owner} took it: nothing written`);
  }
}

/**
 * The target cannot be reached (down, refusing connections, out of connections): nothing was
 * done. The management API answers 503; imports are retried with the reference backoff while
 * their staged files wait.
 */
export class TargetUnavailableError extends Error {
  override name = 'TargetUnavailableError';
}

/** What an export writes (TableService checks the names against the table first). */
export interface ExportSpec {
  /** Columns to write, in this order (the table's own names; `_timestamp` allowed). */
  columns: readonly string[];
  /** Only rows whose `column` is (eq) or is not (ne) one of `values`. */
  where?: { column: string; operator: 'eq' | 'ne'; values: readonly string[] };
  /** Only rows written at or after this time (the `_timestamp` column). */
  changedSince?: Date;
  /** Only rows written before this time. */
  changedUntil?: Date;
  /** At most this many rows (in the order the target reads them). */
  limit?: number;
  /** csv: RFC 4180 with a header row; parquet: every column a string. */
  format: 'csv' | 'parquet';
  /** csv only: gzip the file. */
  gzip: boolean;
}

export interface ExportProgress {
  /** Rows written so far. */
  rows: number;
  /** Rows the export will write, when known. */
  totalRows?: number;
}

export interface ExportResult {
  rows: number;
  /** Bytes of the written file. */
  bytes: number;
}

/** A relation a read-only query reads: the schema and the table as the target names them. */
export interface QueryRelation {
  schema: string;
  table: string;
  /** The Storage bucket of the schema, when the schema is a bucket's. */
  bucketId?: string;
  /**
   * The statement does not name it, but could reach it at run time (PostgreSQL without its
   * reader roles: a function such as query_to_xml runs SQL text the plan does not show).
   */
  reachable?: boolean;
}

export interface QueryOptions {
  /** The query is cancelled after this long (QueryRefusedError 'timeout'). */
  timeoutMs: number;
  /** At most this many rows are returned; `truncated` says there were more. */
  maxRows: number;
  /**
   * Called with every relation the statement reads, after it was parsed and planned and before
   * it runs: throws to refuse it (the caller's permission check). Nothing has run then.
   */
  authorize(relations: readonly QueryRelation[]): void;
}

export interface QueryResult {
  columns: { name: string; type: string }[];
  /** Values as JSON: strings, numbers, booleans, null (64-bit integers and decimals as strings, times ISO). */
  rows: unknown[][];
  /** More rows than `maxRows` were there. */
  truncated: boolean;
}

/**
 * A read-only query the target refused without writing anything: not a single read statement
 * (kind 'write'), a syntax or planning error ('invalid'), something it may not use (a table
 * function reading files, a privilege it lacks: 'forbidden'), it ran too long ('timeout'), it
 * needed more memory or temporary disk than the limit ('memory', the message names the limit),
 * or the target cannot run queries safely as it is set up ('unavailable', the message says why).
 */
export class QueryRefusedError extends Error {
  override name = 'QueryRefusedError';

  constructor(
    readonly kind: 'write' | 'invalid' | 'forbidden' | 'timeout' | 'memory' | 'unavailable',
    message: string,
  ) {
    super(message);
  }
}

export interface Target {
  /** A short description for logs and errors ("DuckDB file ...", "PostgreSQL at host:port/db"), no secrets. */
  readonly description: string;
  /** Whether the target answers now (health checks); never throws. */
  ping(): Promise<boolean>;

  listBuckets(): Promise<TargetBucket[]>;
  getBucket(bucketId: string): Promise<TargetBucket | undefined>;
  /** Creates the bucket; returns the existing one unchanged when it already exists. */
  createBucket(bucket: NewBucket): Promise<TargetBucket>;
  /** Drops the bucket with all its tables; false when it did not exist. */
  dropBucket(bucketId: string): Promise<boolean>;

  /** All tables, or the tables of one bucket, ordered by id. */
  listTables(bucketId?: string): Promise<TargetTable[]>;
  getTable(tableId: string): Promise<TargetTable | undefined>;
  /** Creates the table (its bucket must exist); throws when the table already exists. */
  createTable(table: NewTable): Promise<TargetTable>;
  /** False when the table did not exist. */
  dropTable(tableId: string): Promise<boolean>;
  /**
   * Adds columns at the end of the table (ALTER TABLE ... ADD COLUMN), in one transaction: rows
   * already there read NULL in a typed column and '' in an untyped one.
   */
  addColumns(tableId: string, columns: readonly ColumnDefinition[]): Promise<TargetTable>;

  /**
   * Appends rows (each exactly as long as the column list: the table's, or `options.columns`) in
   * one transaction; upserts on a table with a primary key, as importCsv does. A value is the text
   * importCsv reads for it, unquoted: null is NULL in a typed column and '' in an untyped one.
   */
  insertRows(tableId: string, rows: readonly (readonly (string | null)[])[], options?: WriteOptions): Promise<WriteResult>;
  /**
   * Appends the rows of local RFC 4180 CSV files without a header row (comma, double quote,
   * quotes doubled; quoted newlines allowed) in one transaction. Columns by position (of the
   * table, or of `options.columns`). A path ending in ".gz" is gzip-compressed. With several
   * paths all of them are loaded in one transaction; an empty list inserts nothing (and records
   * the import id).
   *
   * Values: an unquoted empty field is NULL in a typed column, a quoted one ("") the empty
   * string; an untyped column reads both as the empty string. A typed column's text is the
   * renderer's (INTEGER "-42", NUMERIC "-1.50", FLOAT "1.5e-7", BOOLEAN "true", DATE
   * "2026-11-27", TIMESTAMP "2026-11-27T01:02:03.456Z", JSON compact JSON, STRING the text), cast
   * to the native type: text that does not convert fails the whole write (nothing written) with
   * an error naming the column and the value.
   *
   * A table with a primary key upserts: among the rows of one write with the same key the last
   * one (file order, then row order) wins, and it replaces the table's row of that key (its
   * columns the data does not fill get their default). `expectedRows` and `inserted` count the
   * rows read.
   */
  importCsv(tableId: string, path: string | readonly string[], options?: WriteOptions): Promise<WriteResult>;
  /** The first `limit` rows in insertion order. */
  preview(tableId: string, limit: number): Promise<string[][]>;
  rowCount(tableId: string): Promise<number>;
  /**
   * Writes the table's rows chosen by `spec` into a new file at `path` (a local file of this
   * node), streaming: the table is never held in memory. `onProgress` is called now and then.
   */
  exportTable(tableId: string, spec: ExportSpec, path: string, onProgress?: (progress: ExportProgress) => void): Promise<ExportResult>;
  /**
   * Runs one read-only SQL statement (PostgreSQL: in a read-only transaction as a role that
   * may read only the buckets the statement reads; DuckDB: on a locked-down read connection)
   * after `options.authorize` accepted the relations it reads. A statement that writes, or more
   * than one statement, is refused before it runs (QueryRefusedError). The timeout covers
   * planning, running and fetching; the promise settles when the database has stopped working
   * on the query, which for DuckDB can be after the timeout (its interrupt is checked now and then).
   */
  query(sql: string, options: QueryOptions): Promise<QueryResult>;

  /** The recorded position of a sink (WriteOptions.position), undefined when none. */
  position(sink: string): Promise<number | undefined>;
  /**
   * Cluster mode: makes `owner` the sink's owner (writes of earlier owners are refused from
   * now on, see WriteOptions.position) and returns the sink's position at that moment,
   * atomically: whatever an earlier owner imported is within the position, whatever it had not
   * imported can never be imported by it any more.
   */
  claimSink(sink: string, owner: string): Promise<number | undefined>;
  /** Forgets the positions (and owners) of the sinks whose path starts with `prefix` (their topic is gone). */
  forgetPositions(prefix: string): Promise<void>;

  close(): Promise<void>;
}

/**
 * The one call the target level makes (levels/import.ts): a file's staged slices into its table,
 * in one transaction. The Storage API's TableService provides it, checking the table's columns
 * first and wording a mismatch as the API's 400; the levels need nothing else of the Storage API.
 */
export interface TableImporter {
  importCsv(tableId: string, path: string | readonly string[], options?: WriteOptions): Promise<WriteResult>;
}
