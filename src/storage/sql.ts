/**
 * Read-only SQL on the tables (`POST /v2/storage/sql`, for the CLI and the console): one
 * statement that reads, over the tables of buckets the token may read, within a time and row
 * limit. The target refuses anything that writes before it runs (QueryRefusedError); the
 * relations the statement reads are checked here, after it is planned and before it runs.
 *
 * At most `connections` queries run at once and `queueSize` wait; the wait counts in a query's
 * time. The answer comes at the deadline even when the database has not stopped the query yet
 * (DuckDB checks for an interrupt only now and then): its slot stays taken until it has.
 */
import { DomainError, type ErrorKind } from '../domain-errors.js';
import { NoQuerySlotError, QuerySlots } from './query-slots.js';
import type { TableService } from './tables.js';
import { namesMissingTable, notABucketTable, quotingHint, tablesHint } from './sql-hints.js';
import { QueryRefusedError, type QueryRelation } from '../ports/target.js';
import type { SqlAnswer } from '../contract/storage-tables.js';

export interface SqlLimits {
  /** Upper bound of the run time, the wait for a connection included; a request may ask for less. */
  timeoutMs: number;
  /** Upper bound of the rows; a request may ask for fewer. */
  maxRows: number;
  /** Queries that run at once (default 2). */
  connections?: number;
  /** Queries that may wait for a connection (default 8); beyond, SQL_BUSY_CODE. */
  queueSize?: number;
  /** The SQL the target speaks, named in answers and in the errors a query's text causes. */
  dialect?: SqlDialect;
}

export type SqlDialect = 'DuckDB' | 'PostgreSQL';

/** The code of the answer when no connection is free (503 with Retry-After). */
export const SQL_BUSY_CODE = 'storage.sql.busy';
/** Seconds a client is asked to wait after SQL_BUSY_CODE. */
export const SQL_BUSY_RETRY_AFTER_SECONDS = 1;

/**
 * How long after the deadline the answer waits for the database's own timeout error before it
 * answers alone: long enough for an interrupt that lands at once (same answer either way).
 */
const ANSWER_GRACE_MS = 100;

export interface SqlRequest {
  query: string;
  /** Rows at most (default and bound: the server's). */
  limit?: number;
  /** Seconds at most (default and bound: the server's). */
  timeoutSeconds?: number;
  /** Whether the caller may read this bucket. */
  canRead(bucketId: string): boolean;
}

/** The answer: the API contract's (src/contract/storage-tables.ts). */
export type { SqlAnswer };

// A query that ran over its time or memory limit is refused like an invalid one (400, as a
// statement that writes is): the caller asks for less.
const REFUSALS: Record<QueryRefusedError['kind'], { kind: ErrorKind; code: string }> = {
  write: { kind: 'invalid', code: 'storage.sql.notReadOnly' },
  invalid: { kind: 'invalid', code: 'storage.sql.invalid' },
  forbidden: { kind: 'forbidden', code: 'storage.sql.forbidden' },
  timeout: { kind: 'invalid', code: 'storage.sql.timeout' },
  memory: { kind: 'invalid', code: 'storage.sql.memoryLimit' },
  unavailable: { kind: 'unavailable', code: 'storage.sql.unavailable' },
};

export class SqlService {
  private readonly slots: QuerySlots;

  constructor(
    private readonly tables: Pick<TableService, 'query' | 'listTables'>,
    private readonly limits: SqlLimits,
  ) {
    this.slots = new QuerySlots(limits.connections ?? 2, limits.queueSize ?? 8);
  }

  async run(request: SqlRequest): Promise<SqlAnswer> {
    const query = request.query.trim();
    if (query === '') throw new DomainError('invalid', 'storage.sql.invalid', 'The query is empty.');
    const maxRows = Math.min(request.limit ?? this.limits.maxRows, this.limits.maxRows);
    const timeoutMs = Math.min(request.timeoutSeconds !== undefined ? request.timeoutSeconds * 1000 : this.limits.timeoutMs, this.limits.timeoutMs);
    const authorize = (relations: readonly QueryRelation[]) => {
      for (const r of relations) {
        if (r.bucketId === undefined) throw new NotABucketTable(r);
        if (!request.canRead(r.bucketId)) {
          throw new DomainError('forbidden', 'storage.sql.forbidden', r.reachable
            ? `On this target a query can reach every bucket (the database user of Sluice may not create the reader roles: docs/exports-and-sql.md, "Read-only SQL"), and the token cannot read the bucket "${r.bucketId}". Nothing was executed.`
            : `The token cannot read the bucket "${r.bucketId}" the query reads. Nothing was executed.`);
        }
      }
    };
    const started = Date.now();
    const deadline = started + timeoutMs;
    const release = await this.slots.acquire(deadline).catch((err: unknown) => {
      throw err instanceof NoQuerySlotError ? this.busy(err, timeoutMs) : err;
    });
    try {
      // Async, so that even a synchronous throw of the target gives the slot back.
      const work = (async () => this.tables.query(query, { timeoutMs: Math.max(1, deadline - Date.now()), maxRows, authorize }))();
      work.then(release, release);
      const result = await answerBy(work, deadline + ANSWER_GRACE_MS);
      return { ...result, rowsCount: result.rows.length, durationMs: Date.now() - started, ...(this.limits.dialect ? { dialect: this.limits.dialect } : {}) };
    } catch (err) {
      const readable = async () => (await this.tables.listTables().catch(() => [])).filter((t) => request.canRead(t.bucketId));
      if (err instanceof NotABucketTable) throw new DomainError('forbidden', 'storage.sql.forbidden', notABucketTable(err.relation, await readable()));
      if (!(err instanceof QueryRefusedError)) throw err;
      const { kind, code } = REFUSALS[err.kind];
      let message = err.kind === 'timeout' ? `${err.message} (limit ${timeoutMs} ms)` : err.message;
      // What the text of the query caused: say which SQL runs here, and how to name a table.
      if (err.kind === 'invalid') {
        const hint = quotingHint(query) || (namesMissingTable(message) ? tablesHint(await readable()) : '');
        const dialect = this.limits.dialect ? ` (${this.limits.dialect} SQL)` : '';
        if (hint !== '' || dialect !== '') message = `${/[.!?)]$/.test(message) ? message : `${message}.`}${hint}${dialect}`;
      }
      throw new DomainError(kind, code, message);
    }
  }

  private busy(err: NoQuerySlotError, timeoutMs: number): DomainError {
    const { size, queueSize } = this.slots;
    const message = err.reason === 'full'
      ? `The SQL endpoint is busy: ${size} queries run and ${queueSize} wait (--sql-connections, --sql-queue-size). Nothing was executed; retry in a moment.`
      : `No SQL connection became free within the query's time (${timeoutMs} ms): ${size} queries run (--sql-connections). Nothing was executed; retry in a moment.`;
    return new DomainError('unavailable', SQL_BUSY_CODE, message);
  }
}

/** A relation read that is not a table of a bucket (answered with the tables there are). */
class NotABucketTable extends Error {
  constructor(readonly relation: QueryRelation) {
    super(`not a table of a bucket: ${relation.schema}.${relation.table}`);
  }
}

/** The work's outcome, or a timeout refusal at `deadline` (epoch ms) when it has none by then. */
function answerBy<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new QueryRefusedError('timeout', 'The query ran longer than the statement timeout and was cancelled.')),
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
