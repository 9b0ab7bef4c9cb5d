/**
 * Target port: where table rows land (DESIGN.md "Ports and adapters"). The embedded adapter is
 * one DuckDB file (src/connectors/target/duckdb-target.ts); a warehouse server can replace it.
 *
 * The port knows nothing about Storage id rules: callers (TableService) validate ids and pass
 * the bucket id and table name already split. Every column is a string column; a value is never
 * NULL (a missing value is the empty string), as in Keboola Storage tables.
 */

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

export interface TargetTable {
  /** e.g. "in.c-my-bucket.my-table" */
  id: string;
  bucketId: string;
  name: string;
  /** Column names in table order. */
  columns: string[];
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
  metadata?: Record<string, string>;
}

export interface WriteOptions {
  /**
   * Idempotency key of an import: it is recorded in the same transaction as the rows, and a
   * write with an import id already recorded for the table changes nothing (a retried import
   * after a crash is a no-op; DESIGN.md "Delivery").
   */
  importId?: string;
  /**
   * importCsv: every row of the files ends with "\n" (Sluice's own slices). The reader then
   * takes a carriage return in a quoted value as data; left to detect the line ends itself (as
   * for component output, which may end rows with "\r\n"), it refuses such a value.
   */
  newlineOnly?: boolean;
  /**
   * The columns the caller expects the table to have, in order. When set, the write fails and
   * changes nothing unless the table's columns are exactly these (the table was changed since
   * the data was mapped).
   */
  columns?: readonly string[];
  /**
   * The number of rows the caller expects the write to insert. When set, a write that would
   * insert another number of rows fails and changes nothing (e.g. a damaged file).
   */
  expectedRows?: number;
  /**
   * How far in a stream (a sink's source topic, by offset) the rows reach: recorded in the same
   * transaction as the rows, never moved back. After a hand-over between cluster nodes, the new
   * owner of a sink reads on from there, so rows another node imported are not written twice.
   * With `owner`, the write is refused with StreamClaimedError (nothing written) when another
   * owner has claimed the stream since (Target.claimStream): the fence between cluster nodes.
   */
  position?: { stream: string; through: number; owner?: string };
}

export interface WriteResult {
  /** Rows written by this call (0 for a duplicate import). */
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
  ) {
    super(`the columns of table "${tableId}" ${JSON.stringify(actual)} do not match the expected columns ${JSON.stringify(expected)}`);
  }
}

/**
 * A write for a stream (WriteOptions.position.owner) by an owner that is not the stream's
 * owner any more: another node claimed it since, and reads its records again from the event
 * log. Nothing was written.
 */
export class StreamClaimedError extends Error {
  override name = 'StreamClaimedError';

  constructor(
    readonly stream: string,
    readonly owner: string,
    readonly claimedBy: string,
  ) {
    super(`the stream "${stream}" was claimed by ${claimedBy} since ${owner} took it: nothing written`);
  }
}

export interface Target {
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

  /** Appends rows (each exactly as long as the column list) in one transaction. */
  insertRows(tableId: string, rows: readonly (readonly string[])[], options?: WriteOptions): Promise<WriteResult>;
  /**
   * Appends the rows of local RFC 4180 CSV files without a header row (comma, double quote,
   * quotes doubled; quoted newlines allowed) in one transaction. Columns by position. A path
   * ending in ".gz" is gzip-compressed. With several paths all of them are loaded in one
   * transaction; an empty list inserts nothing (and records the import id).
   */
  importCsv(tableId: string, path: string | readonly string[], options?: WriteOptions): Promise<WriteResult>;
  /** The first `limit` rows in insertion order. */
  preview(tableId: string, limit: number): Promise<string[][]>;
  rowCount(tableId: string): Promise<number>;

  /** The recorded position of a stream (WriteOptions.position), undefined when none. */
  position(stream: string): Promise<number | undefined>;
  /**
   * Cluster mode: makes `owner` the stream's owner (writes of earlier owners are refused from
   * now on, see WriteOptions.position) and returns the stream's position at that moment,
   * atomically: whatever an earlier owner imported is within the position, whatever it had not
   * imported can never be imported by it any more.
   */
  claimStream(stream: string, owner: string): Promise<number | undefined>;
  /** Forgets the positions (and owners) of the streams whose name starts with `prefix` (their topic is gone). */
  forgetPositions(prefix: string): Promise<void>;

  close(): Promise<void>;
}
