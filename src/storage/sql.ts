/**
 * Read-only SQL on the tables (`POST /v2/storage/sql`, for the CLI and the console): one
 * statement that reads, over the tables of buckets the token may read, within a time and row
 * limit. The target refuses anything that writes before it runs (QueryRefusedError); the
 * relations the statement reads are checked here, after it is planned and before it runs.
 */
import { DomainError, type ErrorKind } from '../domain-errors.js';
import type { TableService } from './tables.js';
import { QueryRefusedError, type QueryRelation, type QueryResult } from './target.js';

export interface SqlLimits {
  /** Upper bound of the run time; a request may ask for less. */
  timeoutMs: number;
  /** Upper bound of the rows; a request may ask for fewer. */
  maxRows: number;
}

export interface SqlRequest {
  query: string;
  /** Rows at most (default and bound: the server's). */
  limit?: number;
  /** Seconds at most (default and bound: the server's). */
  timeoutSeconds?: number;
  /** Whether the caller may read this bucket. */
  canRead(bucketId: string): boolean;
}

export interface SqlAnswer extends QueryResult {
  rowsCount: number;
  durationMs: number;
}

// A query that ran over its time limit is refused like an invalid one (400, as a statement
// that writes is): the caller asks for less.
const REFUSALS: Record<QueryRefusedError['kind'], { kind: ErrorKind; code: string }> = {
  write: { kind: 'invalid', code: 'storage.sql.notReadOnly' },
  invalid: { kind: 'invalid', code: 'storage.sql.invalid' },
  forbidden: { kind: 'forbidden', code: 'storage.sql.forbidden' },
  timeout: { kind: 'invalid', code: 'storage.sql.timeout' },
};

export class SqlService {
  constructor(
    private readonly tables: TableService,
    private readonly limits: SqlLimits,
  ) {}

  async run(request: SqlRequest): Promise<SqlAnswer> {
    const query = request.query.trim();
    if (query === '') throw new DomainError('invalid', 'storage.sql.invalid', 'The query is empty.');
    const maxRows = Math.min(request.limit ?? this.limits.maxRows, this.limits.maxRows);
    const timeoutMs = Math.min(request.timeoutSeconds !== undefined ? request.timeoutSeconds * 1000 : this.limits.timeoutMs, this.limits.timeoutMs);
    const authorize = (relations: readonly QueryRelation[]) => {
      for (const r of relations) {
        if (r.bucketId === undefined) {
          throw new DomainError('forbidden', 'storage.sql.forbidden', `The query reads "${r.schema}"."${r.table}", which is not a table of a bucket: a query reads the tables of buckets only. Nothing was executed.`);
        }
        if (!request.canRead(r.bucketId)) {
          throw new DomainError('forbidden', 'storage.sql.forbidden', `The token cannot read the bucket "${r.bucketId}" the query reads. Nothing was executed.`);
        }
      }
    };
    const started = Date.now();
    try {
      const result = await this.tables.query(query, { timeoutMs, maxRows, authorize });
      return { ...result, rowsCount: result.rows.length, durationMs: Date.now() - started };
    } catch (err) {
      if (!(err instanceof QueryRefusedError)) throw err;
      const { kind, code } = REFUSALS[err.kind];
      const message = err.kind === 'timeout' ? `${err.message} (limit ${timeoutMs} ms)` : err.message;
      throw new DomainError(kind, code, message);
    }
  }
}
