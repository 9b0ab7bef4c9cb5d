/**
 * The read-only SQL endpoint's bounds through the HTTP API, on the default DuckDB target: the
 * queries of issue 21 (a constant DuckDB folds for a minute, a list of 400 million values), a
 * query DuckDB cannot interrupt answered at its deadline while another connection answers
 * `SELECT 1`, and the busy answer (503 with Retry-After) when no connection is free.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';

/**
 * A query DuckDB works on for seconds inside one value (a lambda over 20 elements, each a
 * levenshtein of 10000 characters), where it does not look at the interrupt: the answer must
 * not wait for it.
 */
const UNINTERRUPTIBLE = `WITH s AS (SELECT repeat('a', 10000) AS a, repeat('b', 10000) AS b)
  SELECT len(list_filter(range(20), x -> levenshtein(a || x::VARCHAR, b) > 0)) FROM s`;

async function sql(svc: TestService, query: string, timeout?: number) {
  const started = Date.now();
  const res = await svc.call('POST', '/v2/storage/sql', { json: { query, ...(timeout !== undefined ? { timeout } : {}) } });
  return { ...res, ms: Date.now() - started };
}

describe('read-only SQL bounds (DuckDB, two connections)', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await TestService.start({ args: ['--sql-memory-limit', '256MB', '--sql-connections', '2'] });
    await svc.server.services.tables.ensureTable('in.c-events.clicks', [{ name: 'id' }], { metadata: {} });
    await svc.server.services.tables.insertRows('in.c-events.clicks', [['1'], ['2']]);
  });

  afterAll(async () => svc?.close(), 120_000);

  it('answers the constant DuckDB would fold for 68 s within twice its 1 s timeout', async () => {
    const res = await sql(svc, 'SELECT len(list_sort(list_reverse(generate_series(1, 60000000))))', 1);
    expect(res.ms).toBeLessThan(2000);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ code: 'storage.sql.memoryLimit', status: 'error' });
    expect(res.json.error).toContain('generate_series()');
  });

  it('stops the 400-million-value list at the memory limit, naming it, and the process stays within bounds', async () => {
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    let res;
    try {
      res = await sql(svc, 'SELECT len(list(x)) FROM range(400000000) t(x)', 60);
    } finally {
      clearInterval(sampler);
    }
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('storage.sql.memoryLimit');
    expect(res.json.error).toContain('SQL memory limit (256MB)');
    // Loosely: 256MB and DuckDB's own blocks, not the gigabytes it took unbounded.
    expect(peak - before).toBeLessThan(1024 * 1024 * 1024);
    expect((await sql(svc, 'SELECT count(*) AS n FROM "in.c-events".clicks')).json.rows).toEqual([['2']]);
  }, 90_000);

  it('answers a query DuckDB cannot interrupt at its deadline, and SELECT 1 at once on the other connection', async () => {
    const slow = sql(svc, UNINTERRUPTIBLE, 0.5);
    await new Promise((r) => setTimeout(r, 100));
    const one = await sql(svc, 'SELECT 1 AS one', 5);
    expect(one.status).toBe(200);
    expect(one.json.rows).toEqual([[1]]);
    expect(one.ms).toBeLessThan(1500);
    const answered = await slow;
    expect(answered.status).toBe(400);
    expect(answered.json.code).toBe('storage.sql.timeout');
    expect(answered.ms).toBeLessThan(2500);
  }, 60_000);
});

describe('read-only SQL bounds (DuckDB, one connection, no queue)', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await TestService.start({ args: ['--sql-connections', '1', '--sql-queue-size', '0'] });
  });

  afterAll(async () => svc?.close(), 120_000);

  it('answers 503 storage.sql.busy with Retry-After while the only connection works, then runs again', async () => {
    const slow = await sql(svc, UNINTERRUPTIBLE, 0.3);
    expect(slow.json.code).toBe('storage.sql.timeout');
    // DuckDB is still at it: its connection is not free.
    const busy = await sql(svc, 'SELECT 1 AS one', 1);
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('1');
    expect(busy.json).toMatchObject({ code: 'storage.sql.busy', status: 'error' });
    expect(busy.json.error).toContain('--sql-connections');
    // Once DuckDB has stopped, the connection is free again.
    const one = await svc.until('a free SQL connection', async () => {
      const res = await sql(svc, 'SELECT 1 AS one', 1);
      return res.status === 200 ? res : undefined;
    }, 90_000);
    expect(one.json.rows).toEqual([[1]]);
  }, 120_000);
});
