import { DomainError } from '../domain-errors.js';
import {
  TableColumnsMismatchError,
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
   * Makes sure the table exists with exactly these columns, in this order (all string columns).
   * Creates the bucket and the table when missing, with `metadata` on the new table; an existing
   * table keeps its metadata. A table with other columns: 400 tableSchemaMismatch.
   */
  ensureTable(tableId: string, columns: string[], metadata: Record<string, string>): Promise<{ created: boolean }> {
    const ref = parseTableId(tableId);
    validateColumns(columns);
    return this.exclusive(async () => {
      const existing = await this.target.getTable(tableId);
      if (existing) {
        if (!sameColumns(existing.columns, columns)) {
          throw new DomainError('invalid', 'tableSchemaMismatch',
            `The columns of the table "${tableId}" ${JSON.stringify(existing.columns)} do not match the requested ` +
            `columns ${JSON.stringify(columns)}; the names must be equal and in the same order.`);
        }
        return { created: false };
      }
      await this.ensureBucket(ref.bucket);
      this.rejectCaseVariant(tableId, (await this.target.listTables(ref.bucket.id)).map((t) => t.id), 'table');
      await this.target.createTable({ id: tableId, bucketId: ref.bucket.id, name: ref.name, columns, metadata });
      return { created: true };
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

  /** Appends rows to an existing table; each row must have one value per column. */
  async insertRows(tableId: string, rows: readonly (readonly string[])[], options?: WriteOptions): Promise<WriteResult> {
    const table = await this.getTable(tableId);
    const bad = rows.findIndex((r) => r.length !== table.columns.length);
    if (bad >= 0) {
      throw new DomainError('invalid', 'storage.tables.validation',
        `Row ${bad} has ${rows[bad].length} values but the table "${tableId}" has ${table.columns.length} columns.`);
    }
    return this.target.insertRows(tableId, rows, options);
  }

  /**
   * Appends the rows of header-less CSV files (".gz" compressed or not) to an existing table in
   * one transaction (see Target.importCsv). With `options.columns`, a table whose columns differ
   * fails with 400 tableSchemaMismatch and nothing is written.
   */
  async importCsv(tableId: string, path: string | readonly string[], options?: WriteOptions): Promise<WriteResult> {
    const table = await this.getTable(tableId);
    if (options?.columns !== undefined && !sameColumns(table.columns, options.columns)) {
      throw columnsMismatch(tableId, table.columns, options.columns);
    }
    try {
      return await this.target.importCsv(tableId, path, options);
    } catch (err) {
      // The table may have changed between the check above and the write: the adapter checks again.
      if (err instanceof TableColumnsMismatchError) throw columnsMismatch(tableId, err.actual, err.expected);
      throw err;
    }
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

  private exclusive<R>(fn: () => Promise<R>): Promise<R> {
    const run = this.lock.then(fn);
    this.lock = run.catch(() => undefined);
    return run;
  }
}

function columnsMismatch(tableId: string, actual: readonly string[], expected: readonly string[]): DomainError {
  return new DomainError('invalid', 'tableSchemaMismatch',
    `The columns of the table "${tableId}" ${JSON.stringify(actual)} do not match the columns of the data ` +
    `${JSON.stringify(expected)}; the names must be equal and in the same order. Nothing was imported.`);
}

function sameColumns(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((c, i) => c === b[i]);
}
