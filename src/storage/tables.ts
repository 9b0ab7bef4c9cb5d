import { DomainError } from '../domain-errors.js';
import { BASE_TYPES } from '../model/definition.js';
import {
  TableColumnsMismatchError,
  type ColumnDefinition,
  type ExportProgress,
  type ExportResult,
  type ExportSpec,
  type QueryOptions,
  type QueryResult,
  type Stage,
  type Target,
  type TargetBucket,
  type TargetTable,
  TIMESTAMP_COLUMN,
  type WriteOptions,
  type WriteResult,
} from '../ports/target.js';
import { compareToTable, describeTableType, describeType, typesOf, writeColumnsProblem } from '../ports/target-columns.js';

export type Bucket = TargetBucket;
export type Table = TargetTable;

/** Bucket and table names: Keboola's rule (letters, digits, "_", "-"), at most 96 characters. */
const NAME = /^[A-Za-z0-9_-]{1,96}$/;
/** Column names: letters, digits and "_", at most 64 characters, as Keboola Storage accepts. */
const COLUMN = /^[A-Za-z0-9_]{1,64}$/;

export interface BucketRef {
  /** "in.c-my-bucket" */
  id: string;
  stage: Stage;
  /** "c-my-bucket" */
  name: string;
  /** "my-bucket" */
  displayName: string;
}

export interface TableRef {
  /** "in.c-my-bucket.my-table" */
  id: string;
  bucket: BucketRef;
  /** "my-table" */
  name: string;
}

/** Parses "<stage>.c-<name>"; throws 400 storage.buckets.validation for anything else. */
export function parseBucketId(id: string): BucketRef {
  const m = /^(in|out)\.c-(.*)$/s.exec(id);
  if (!m || !NAME.test(m[2])) {
    throw new DomainError('invalid', 'storage.buckets.validation',
      `Invalid bucket id "${id}". A bucket id is "<stage>.c-<name>" with stage "in" or "out" and a name of ` +
      `1 to 96 letters, digits, "_" or "-", e.g. "in.c-my-bucket".`);
  }
  return { id, stage: m[1] as Stage, name: `c-${m[2]}`, displayName: m[2] };
}

/** Parses "<stage>.c-<bucket>.<table>"; throws 400 storage.tables.validation for anything else. */
export function parseTableId(id: string): TableRef {
  const m = /^((?:in|out)\.c-[^.]*)\.(.*)$/s.exec(id);
  const invalid = () => new DomainError('invalid', 'storage.tables.validation',
    `Invalid table id "${id}". A table id is "<stage>.c-<bucket>.<table>" with stage "in" or "out" and bucket and ` +
    `table names of 1 to 96 letters, digits, "_" or "-", e.g. "in.c-my-bucket.my-table".`);
  if (!m || !NAME.test(m[2])) throw invalid();
  let bucket: BucketRef;
  try {
    bucket = parseBucketId(m[1]);
  } catch {
    throw invalid();
  }
  return { id, bucket, name: m[2] };
}

/** Checks a column list for a new table; throws 400 storage.tables.validation. */
export function validateColumns(columns: readonly string[]): void {
  if (columns.length === 0) throw new DomainError('invalid', 'storage.tables.validation', 'A table needs at least one column.');
  const seen = new Map<string, string>();
  for (const c of columns) {
    if (typeof c !== 'string' || !COLUMN.test(c)) {
      throw new DomainError('invalid', 'storage.tables.validation',
        `Invalid column name "${c}". A column name has 1 to 64 letters, digits or "_".`);
    }
    // The target's own column: a table has it besides its columns (target.ts).
    if (c.toLowerCase() === TIMESTAMP_COLUMN) {
      throw new DomainError('invalid', 'storage.tables.validation',
        `Column name "${c}" is reserved: every table has the system column "${TIMESTAMP_COLUMN}" (when the row was written).`);
    }
    // The target matches identifiers without regard to case, so "Id" and "id" would collide.
    const key = c.toLowerCase();
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      throw new DomainError('invalid', 'storage.tables.validation',
        earlier === c ? `Column "${c}" is listed twice.` : `Columns "${earlier}" and "${c}" differ only in letter case.`);
    }
    seen.set(key, c);
  }
}

/** Checks the types and the primary key of a table's columns; throws 400 storage.tables.validation. */
export function validateTypesAndKey(columns: readonly ColumnDefinition[], primaryKey: readonly string[]): void {
  for (const c of columns) {
    if (c.type !== undefined && !BASE_TYPES.includes(c.type)) {
      throw new DomainError('invalid', 'storage.tables.validation',
        `The type "${String(c.type)}" of the column "${c.name}" is not a base type; the base types are ${BASE_TYPES.join(', ')}.`);
    }
  }
  const names = new Set(columns.map((c) => c.name));
  const seen = new Set<string>();
  for (const k of primaryKey) {
    if (!names.has(k)) throw new DomainError('invalid', 'storage.tables.validation', `The primary key column "${k}" is not a column of the table.`);
    if (seen.has(k)) throw new DomainError('invalid', 'storage.tables.validation', `The primary key column "${k}" is listed twice.`);
    seen.add(k);
  }
}

/** What ensureTable is given besides the columns. */
export interface EnsureTableOptions {
  /** The primary key's columns, in key order; none when absent. */
  primaryKey?: readonly string[];
  /** The new table's metadata (an existing table keeps its own). */
  metadata: Record<string, string>;
}

/**
 * Buckets and tables of the project: Storage id rules, not-found errors, and the `ensureTable`
 * the stream sinks call, on top of the Target port.
 */
export class TableService {
  /** Serialises check-then-create and drops, so two sinks ensuring one table cannot race. */
  private lock: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly target: Target,
    private readonly projectId: number,
  ) {}

  listBuckets(): Promise<Bucket[]> {
    return this.target.listBuckets();
  }

  /** The bucket; 404 storage.buckets.notFound when missing. */
  async getBucket(bucketId: string): Promise<Bucket> {
    parseBucketId(bucketId);
    const bucket = await this.target.getBucket(bucketId);
    if (!bucket) throw this.bucketNotFound(bucketId);
    return bucket;
  }

  /** All tables, or those of one bucket (which must exist), ordered by id. */
  async listTables(bucketId?: string): Promise<Table[]> {
    if (bucketId !== undefined) await this.getBucket(bucketId);
    return this.target.listTables(bucketId);
  }

  /** The table, or undefined when it (or its bucket) does not exist. */
  async findTable(tableId: string): Promise<Table | undefined> {
    parseTableId(tableId);
    return this.target.getTable(tableId);
  }

  /** The table; 404 storage.tables.notFound when missing. */
  async getTable(tableId: string): Promise<Table> {
    const table = await this.findTable(tableId);
    if (!table) throw this.tableNotFound(tableId);
    return table;
  }

  /**
   * Makes sure the table exists with these columns (their types: absent for the untyped string
   * column) and primary key. Creates the bucket and the table when missing, with
   * `options.metadata` on the new table. An existing table keeps its metadata and the columns it
   * has beyond these; the columns it lacks are added at its end (`added`, in the given order).
   * A column whose type in the table differs, a column whose name differs only in letter case,
   * or another primary key: 400 tableSchemaMismatch naming it, and nothing changes.
   */
  ensureTable(tableId: string, columns: readonly ColumnDefinition[], options: EnsureTableOptions): Promise<{ created: boolean; added: string[] }> {
    const ref = parseTableId(tableId);
    validateColumns(columns.map((c) => c.name));
    const primaryKey = [...(options.primaryKey ?? [])];
    validateTypesAndKey(columns, primaryKey);
    return this.exclusive(async () => {
      const existing = await this.target.getTable(tableId);
      if (existing) {
        const missing = columnsToAdd(existing, columns, primaryKey);
        if (missing.length > 0) await this.target.addColumns(tableId, missing);
        return { created: false, added: missing.map((c) => c.name) };
      }
      await this.ensureBucket(ref.bucket);
      this.rejectCaseVariant(tableId, (await this.target.listTables(ref.bucket.id)).map((t) => t.id), 'table');
      await this.target.createTable({
        id: tableId, bucketId: ref.bucket.id, name: ref.name, columns: columns.map((c) => c.name),
        types: typesOf(columns), primaryKey, metadata: options.metadata,
      });
      return { created: true, added: [] };
    });
  }

  /** Drops the table; false when it did not exist. */
  dropTable(tableId: string): Promise<boolean> {
    parseTableId(tableId);
    return this.exclusive(() => this.target.dropTable(tableId));
  }

  /** Drops the bucket with all its tables; false when it did not exist. */
  dropBucket(bucketId: string): Promise<boolean> {
    parseBucketId(bucketId);
    return this.exclusive(() => this.target.dropBucket(bucketId));
  }

  /** The column names and the first `limit` rows of the table (404 when missing). */
  async preview(tableId: string, limit: number): Promise<{ columns: string[]; rows: string[][] }> {
    if (!Number.isInteger(limit) || limit < 0) {
      throw new DomainError('invalid', 'storage.tables.validation', `The preview limit must be a non-negative integer, got ${limit}.`);
    }
    const table = await this.getTable(tableId);
    return { columns: table.columns, rows: await this.target.preview(tableId, limit) };
  }

  /**
   * Appends rows to an existing table (upserts on a keyed one, see Target.insertRows); each row
   * must have one value per column (the table's, or `options.columns`'s). A table without the
   * columns of `options` (of their types): 400 tableSchemaMismatch, nothing written.
   */
  async insertRows(tableId: string, rows: readonly (readonly (string | null)[])[], options?: WriteOptions): Promise<WriteResult> {
    const table = await this.checkedTable(tableId, options);
    const width = options?.columns?.length ?? table.columns.length;
    const bad = rows.findIndex((r) => r.length !== width);
    if (bad >= 0) {
      throw new DomainError('invalid', 'storage.tables.validation',
        `Row ${bad} has ${rows[bad].length} values but the table "${tableId}" has ${width} columns.`);
    }
    return this.translated(() => this.target.insertRows(tableId, rows, options));
  }

  /**
   * Appends the rows of header-less CSV files (".gz" compressed or not) to an existing table in
   * one transaction (upserts on a keyed one, see Target.importCsv). With `options.columns`, a
   * table that lacks one of them (or, with `options.types`, has it of another type) fails with
   * 400 tableSchemaMismatch and nothing is written.
   */
  async importCsv(tableId: string, path: string | readonly string[], options?: WriteOptions): Promise<WriteResult> {
    await this.checkedTable(tableId, options);
    return this.translated(() => this.target.importCsv(tableId, path, options));
  }

  /** Writes the rows `spec` chooses into a local file (see Target.exportTable); 404 when the table is missing. */
  async exportRows(tableId: string, spec: ExportSpec, path: string, onProgress?: (progress: ExportProgress) => void): Promise<ExportResult> {
    await this.getTable(tableId);
    return this.target.exportTable(tableId, spec, path, onProgress);
  }

  /** See Target.query. */
  query(sql: string, options: QueryOptions): Promise<QueryResult> {
    return this.target.query(sql, options);
  }

  /** Whether the target answers now. */
  ping(): Promise<boolean> {
    return this.target.ping();
  }

  /** The target for messages ("DuckDB file ...", "PostgreSQL at host:port/db"), without secrets. */
  get targetDescription(): string {
    return this.target.description;
  }

  /** See Target.position. */
  position(sink: string): Promise<number | undefined> {
    return this.target.position(sink);
  }

  /** See Target.claimSink. */
  claimSink(sink: string, owner: string): Promise<number | undefined> {
    return this.target.claimSink(sink, owner);
  }

  forgetPositions(prefix: string): Promise<void> {
    return this.target.forgetPositions(prefix);
  }

  tableNotFound(tableId: string): DomainError {
    const bucketId = tableId.slice(0, tableId.lastIndexOf('.'));
    return new DomainError('notFound', 'storage.tables.notFound',
      `The table "${tableId}" was not found in the bucket "${bucketId}" in the project "${this.projectId}"`);
  }

  bucketNotFound(bucketId: string): DomainError {
    return new DomainError('notFound', 'storage.buckets.notFound', `The bucket "${bucketId}" was not found in the project "${this.projectId}"`);
  }

  private async ensureBucket(ref: BucketRef): Promise<void> {
    if (await this.target.getBucket(ref.id)) return;
    this.rejectCaseVariant(ref.id, (await this.target.listBuckets()).map((b) => b.id), 'bucket');
    await this.target.createBucket({ id: ref.id, stage: ref.stage, name: ref.name });
  }

  /** The target's identifiers ignore case: "in.c-A" cannot sit beside "in.c-a". */
  private rejectCaseVariant(id: string, existing: string[], kind: 'bucket' | 'table'): void {
    const other = existing.find((e) => e !== id && e.toLowerCase() === id.toLowerCase());
    if (other !== undefined) {
      // The Storage API answers 400, not 409, for an object that exists (reference).
      throw new DomainError('alreadyExists', `storage.${kind}s.alreadyExists`,
        `The ${kind} "${id}" cannot be created: the ${kind} "${other}" exists and ids differ only in letter case.`, { status: 400 });
    }
  }

  /** The table (404 when missing), checked against the columns a write names (400 tableSchemaMismatch). */
  private async checkedTable(tableId: string, options: WriteOptions | undefined): Promise<Table> {
    const table = await this.getTable(tableId);
    const problem = writeColumnsProblem(table.definitions, table.primaryKey, options ?? {});
    if (problem !== undefined) throw columnsMismatch(tableId, table.columns, options!.columns!, problem);
    return table;
  }

  /** A write, with the adapter's own check (the table may have changed since checkedTable) worded as the API's 400. */
  private async translated(write: () => Promise<WriteResult>): Promise<WriteResult> {
    try {
      return await write();
    } catch (err) {
      if (err instanceof TableColumnsMismatchError) throw columnsMismatch(err.tableId, err.actual, err.expected, err.reason);
      throw err;
    }
  }

  private exclusive<R>(fn: () => Promise<R>): Promise<R> {
    const run = this.lock.then(fn);
    this.lock = run.catch(() => undefined);
    return run;
  }
}

function columnsMismatch(tableId: string, actual: readonly string[], expected: readonly string[], reason?: string): DomainError {
  return new DomainError('invalid', 'tableSchemaMismatch',
    `The columns of the table "${tableId}" ${JSON.stringify(actual)} do not match the columns of the data ` +
    `${JSON.stringify(expected)}${reason ? `: ${reason}` : ''}. Nothing was imported.`);
}

/**
 * The columns an existing table lacks, to be added at its end; throws 400 tableSchemaMismatch
 * (before anything changes) for a conflict (compareToTable: a column whose type differs, a name
 * that differs only in letter case, another primary key).
 */
function columnsToAdd(table: Table, columns: readonly ColumnDefinition[], primaryKey: readonly string[]): ColumnDefinition[] {
  const compared = compareToTable(table, columns, primaryKey);
  if ('missing' in compared) return compared.missing;
  const conflict = compared.conflict;
  const message = conflict.kind === 'case'
    ? `The table "${table.id}" has the column "${conflict.variant}", which differs from "${conflict.column}" only in letter case; the target cannot hold both.`
    : conflict.kind === 'type'
      ? `The column "${conflict.column}" of the table "${table.id}" is ${describeTableType(conflict.there)}, the requested type is ` +
        `${describeType(conflict.wanted)}; a column's type cannot be changed in place (a new column, or a new table, can have it).`
      : `The primary key of the table "${table.id}" is ${JSON.stringify(conflict.key)}, the requested one is ` +
        `${JSON.stringify(conflict.wanted)}; a table's primary key cannot be changed in place.`;
  throw new DomainError('invalid', 'tableSchemaMismatch', `${message} Nothing was changed.`);
}
