/**
 * The read-only SQL endpoint's bounds above the target: the slots and their queue (the wait is
 * part of a query's time), the answer at the deadline while the database goes on, and the slot
 * held until the database has really stopped. The target here is a stand-in whose queries end
 * when the test says so (the DuckDB and PostgreSQL adapters are tested in sql-bounds-*.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../../src/domain-errors.js';
import { NoQuerySlotError, QuerySlots } from '../../../src/storage/query-slots.js';
import { SQL_BUSY_CODE, SqlService } from '../../../src/storage/sql.js';
import { QueryRefusedError, type QueryOptions, type QueryResult } from '../../../src/ports/target.js';

const ONE_ROW: QueryResult = { columns: [{ name: 'x', type: 'INTEGER' }], rows: [[1]], truncated: false };

/** A target whose queries run until `finish` (or at once when the query is "fast"). */
function standIn() {
  const running: { sql: string; options: QueryOptions; finish(): void }[] = [];
  return {
    running,
    tables: {
      query(sql: string, options: QueryOptions): Promise<QueryResult> {
        if (sql === 'fast') return Promise.resolve(ONE_ROW);
        return new Promise((resolve) => running.push({ sql, options, finish: () => resolve(ONE_ROW) }));
      },
      listTables: () => Promise.resolve([]),
    },
  };
}

async function failure(run: Promise<unknown>): Promise<DomainError> {
  const err = await run.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(DomainError);
  return err as DomainError;
}

const canRead = () => true;

describe('QuerySlots', () => {
  it('gives out `size` slots, queues `queueSize` more in order, and refuses beyond', async () => {
    const slots = new QuerySlots(2, 1);
    const far = Date.now() + 60_000;
    const a = await slots.acquire(far);
    await slots.acquire(far);
    const order: string[] = [];
    const queued = slots.acquire(far).then((release) => (order.push('queued'), release));
    expect(slots.queued).toBe(1);
    await expect(slots.acquire(far)).rejects.toMatchObject({ reason: 'full' });
    a();
    a(); // a second release of the same slot changes nothing
    const release = await queued;
    expect(order).toEqual(['queued']);
    expect(slots.busy).toBe(2);
    release();
    expect(slots.busy).toBe(1);
  });

  it('refuses a waiter whose deadline passes first, and forgets it', async () => {
    const slots = new QuerySlots(1, 5);
    const release = await slots.acquire(Date.now() + 60_000);
    const started = Date.now();
    const err = await slots.acquire(Date.now() + 100).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NoQuerySlotError);
    expect((err as NoQuerySlotError).reason).toBe('deadline');
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(slots.queued).toBe(0);
    release();
    expect(slots.busy).toBe(0);
  });
});

describe('SqlService bounds', () => {
  it('answers a query the database has not stopped at its deadline, and keeps its slot until it has', async () => {
    const target = standIn();
    const sql = new SqlService(target.tables, { timeoutMs: 30_000, maxRows: 10, connections: 1, queueSize: 0 });
    const started = Date.now();
    const err = await failure(sql.run({ query: 'slow', timeoutSeconds: 0.2, canRead }));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(err).toMatchObject({ kind: 'invalid', code: 'storage.sql.timeout' });
    expect(err.message).toContain('limit 200 ms');
    expect(target.running[0].options.timeoutMs).toBeLessThanOrEqual(200);
    // Still running in the database: the only slot is taken, and the queue holds none.
    const busy = await failure(sql.run({ query: 'fast', canRead }));
    expect(busy).toMatchObject({ kind: 'unavailable', code: SQL_BUSY_CODE });
    expect(busy.message).toContain('--sql-connections');
    target.running[0].finish();
    await new Promise((r) => setTimeout(r, 10));
    expect((await sql.run({ query: 'fast', canRead })).rows).toEqual([[1]]);
  });

  it('lets a query wait for a slot within its own time: the target gets what is left of it', async () => {
    const target = standIn();
    const sql = new SqlService(target.tables, { timeoutMs: 30_000, maxRows: 10, connections: 1, queueSize: 1 });
    const first = sql.run({ query: 'slow', canRead });
    const second = sql.run({ query: 'slow', timeoutSeconds: 5, canRead });
    await new Promise((r) => setTimeout(r, 300));
    expect(target.running).toHaveLength(1);
    target.running[0].finish();
    await first;
    await new Promise((r) => setTimeout(r, 10));
    expect(target.running).toHaveLength(2);
    expect(target.running[1].options.timeoutMs).toBeLessThanOrEqual(4700);
    target.running[1].finish();
    expect((await second).rows).toEqual([[1]]);
  });

  it('answers busy when no slot frees within the query\'s time, without running it', async () => {
    const target = standIn();
    const sql = new SqlService(target.tables, { timeoutMs: 30_000, maxRows: 10, connections: 1, queueSize: 4 });
    void sql.run({ query: 'slow', canRead }).catch(() => undefined);
    const started = Date.now();
    const err = await failure(sql.run({ query: 'slow', timeoutSeconds: 0.2, canRead }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(err).toMatchObject({ kind: 'unavailable', code: SQL_BUSY_CODE });
    expect(err.message).toContain('within the query\'s time (200 ms)');
    expect(target.running).toHaveLength(1);
    target.running[0].finish();
  });

  it('gives the slot back when the target refuses at once, also by throwing synchronously', async () => {
    const sql = new SqlService({
      query: (sql: string) => {
        if (sql === 'sync') throw new QueryRefusedError('invalid', 'no');
        return Promise.reject(new QueryRefusedError('memory', 'The query needed more memory than the SQL memory limit (1MB) allows.'));
      },
      listTables: () => Promise.resolve([]),
    }, { timeoutMs: 1000, maxRows: 10, connections: 1, queueSize: 0 });
    for (let i = 0; i < 3; i++) {
      expect(await failure(sql.run({ query: 'sync', canRead }))).toMatchObject({ code: 'storage.sql.invalid' });
      const memory = await failure(sql.run({ query: 'big', canRead }));
      expect(memory).toMatchObject({ kind: 'invalid', code: 'storage.sql.memoryLimit' });
      expect(memory.message).toContain('SQL memory limit (1MB)');
    }
  });
});

describe('SqlService answers that help the next try', () => {
  const table = (bucketId: string, name: string) => ({ bucketId, name }) as never;
  const tables = [table('in.c-events', 'raw'), table('in.c-otel', 'logs'), table('in.c-secret', 'keys')];
  /** A target that reads the relation `read` (found in a bucket or not) or fails with `invalid`. */
  const target = (read: { schema: string; table: string; bucketId?: string }, invalid?: string) => ({
    query: async (_sql: string, options: QueryOptions): Promise<QueryResult> => {
      if (invalid) throw new QueryRefusedError('invalid', invalid);
      options.authorize([{ ...read }]);
      return ONE_ROW;
    },
    listTables: () => Promise.resolve(tables),
  });
  const onlyEventsAndOtel = (bucketId: string) => bucketId !== 'in.c-secret';

  it('names the tables the token can read, quoted, when the query reads no table of a bucket', async () => {
    const sql = new SqlService(target({ schema: '', table: 'raw' }), { timeoutMs: 1000, maxRows: 10, dialect: 'DuckDB' });
    const err = await failure(sql.run({ query: 'SELECT * FROM raw', canRead: onlyEventsAndOtel }));
    expect(err).toMatchObject({ kind: 'forbidden', code: 'storage.sql.forbidden' });
    expect(err.message).toBe('The query reads "raw", which is not a table of a bucket. Name a table by its bucket and its name, each in double quotes, '
      + 'as in SELECT * FROM "in.c-events"."raw". Tables the token can read: "in.c-events"."raw", "in.c-otel"."logs". Nothing was executed.');
  });

  it('says how to quote a bucket written without quotes, and which SQL runs, on a syntax error', async () => {
    const sql = new SqlService(target({ schema: '', table: 'x' }, 'Parser Error: syntax error at or near "-"'), { timeoutMs: 1000, maxRows: 10, dialect: 'PostgreSQL' });
    const err = await failure(sql.run({ query: 'SELECT * FROM in.c-events.raw', canRead }));
    expect(err).toMatchObject({ kind: 'invalid', code: 'storage.sql.invalid' });
    expect(err.message).toBe('Parser Error: syntax error at or near "-". Bucket and table names hold dots and dashes: write in.c-events.raw as "in.c-events"."raw". (PostgreSQL SQL)');
    // Quoted names get no hint.
    const quoted = await failure(sql.run({ query: 'SELECT * FROM "in.c-events"."raw" WHERE', canRead }));
    expect(quoted.message).toBe('Parser Error: syntax error at or near "-". (PostgreSQL SQL)');
  });

  it('names the dialect in the answer', async () => {
    const sql = new SqlService(target({ schema: 'in.c-events', table: 'raw', bucketId: 'in.c-events' }), { timeoutMs: 1000, maxRows: 10, dialect: 'DuckDB' });
    expect(await sql.run({ query: 'SELECT 1', canRead })).toMatchObject({ dialect: 'DuckDB', rowsCount: 1 });
  });
});

describe('SqlService on a table that does not exist (PostgreSQL names it in its error)', () => {
  it('lists the tables the token can read', async () => {
    const sql = new SqlService({
      query: () => Promise.reject(new QueryRefusedError('invalid', 'relation "raw" does not exist')),
      listTables: () => Promise.resolve([{ bucketId: 'in.c-events', name: 'raw' }] as never),
    }, { timeoutMs: 1000, maxRows: 10, dialect: 'PostgreSQL' });
    const err = await failure(sql.run({ query: 'SELECT * FROM raw', canRead }));
    expect(err.message).toBe('relation "raw" does not exist. Name a table by its bucket and its name, each in double quotes, as in SELECT * FROM "in.c-events"."raw". '
      + 'Tables the token can read: "in.c-events"."raw". (PostgreSQL SQL)');
  });
});
