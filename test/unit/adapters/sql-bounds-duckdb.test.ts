/**
 * The DuckDB target's bounds for read-only SQL, on a real DuckDB file: the database is locked
 * down (tested on a query connection directly, as if the statement check had let anything
 * through), its memory is bounded, values DuckDB does not count are refused before they are
 * made, and a query is interrupted also while DuckDB prepares it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../../src/config.js';
import { DuckDbTarget } from '../../../src/adapters/target/duckdb-target.js';
import { openTarget } from '../../../src/wiring/open-target.js';
import { MAX_GROWTH, MAX_VALUE_SIZE, valueSizeProblem } from '../../../src/adapters/target/duckdb-value-sizes.js';
import { QueryRefusedError, type QueryOptions } from '../../../src/ports/target.js';

const MB = 1024 * 1024;
let dir: string;
let target: DuckDbTarget;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-sql-bounds-'));
  target = await DuckDbTarget.open(join(dir, 'tables.duckdb'), { memoryLimitBytes: 256 * MB });
  await target.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
  await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a'] });
  await target.insertRows('in.c-b.t', [['x'], ['yy']]);
});

afterEach(async () => {
  await target.close();
  rmSync(dir, { recursive: true, force: true });
});

const options = (over: Partial<QueryOptions> = {}): QueryOptions => ({ timeoutMs: 10_000, maxRows: 10, authorize: () => undefined, ...over });

async function refusal(run: Promise<unknown>): Promise<QueryRefusedError> {
  const err = await run.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(QueryRefusedError);
  return err as QueryRefusedError;
}

/** What a query connection answers to `sql`, run as is (no statement check). */
async function onQueryConnection(sql: string): Promise<string> {
  return target.withQueryConnection(async (conn) => {
    try {
      await conn.run(sql);
      return 'ran';
    } catch (err) {
      return (err as Error).message;
    }
  });
}

describe('DuckDB read connections, as if the statement check let anything through', () => {
  it.each([
    ["SELECT * FROM read_csv('/etc/passwd')", /Permission Error: Cannot access file "\/etc\/passwd"/],
    ["SELECT * FROM read_text('/etc/hostname')", /Permission Error/],
    ["SELECT * FROM glob('/*')", /Permission Error/],
    ["COPY (SELECT 1) TO '__DIR__/out.csv'", /Permission Error: Cannot access file/],
    ["COPY \"in.c-b\".t FROM '/etc/hostname'", /Permission Error/],
    ["EXPORT DATABASE '__DIR__/export'", /Permission Error/],
    ["ATTACH '__DIR__/other.duckdb' AS other", /Permission Error/],
    ['INSTALL httpfs', /Permission Error/],
    ['LOAD httpfs', /Permission Error: Loading external extensions is disabled/],
    ["SELECT * FROM read_parquet('https://example.com/x.parquet')", /Permission Error/],
    ["SET memory_limit = '10GB'", /the configuration has been locked/],
    ['SET enable_external_access = true', /the configuration has been locked/],
    ['SET lock_configuration = false', /the configuration has been locked/],
    ['RESET max_temp_directory_size', /the configuration has been locked/],
  ])('refuses %s', async (sql, message) => {
    expect(await onQueryConnection(sql.replaceAll('__DIR__', dir))).toMatch(message);
    expect(existsSync(join(dir, 'out.csv')) || existsSync(join(dir, 'export')) || existsSync(join(dir, 'other.duckdb'))).toBe(false);
  });

  it('is locked down in shared mode too (the file opened per operation)', async () => {
    const shared = await DuckDbTarget.open(join(dir, 'shared.duckdb'), { shared: true, memoryLimitBytes: 64 * MB });
    try {
      const answer = await shared.withQueryConnection(async (conn) => conn.run("SELECT * FROM read_csv('/etc/passwd')").then(() => 'ran', (err: Error) => err.message));
      expect(answer).toMatch(/Permission Error/);
      expect(await shared.withQueryConnection(async (conn) => (await conn.runAndReadAll("SELECT current_setting('memory_limit')")).getRowsJS()[0][0])).toBe('64.0 MiB');
    } finally {
      await shared.close();
    }
  });

  it('has the limits it was opened with, and still imports and exports through its own folder', async () => {
    const settings = await target.withQueryConnection(async (conn) => (await conn.runAndReadAll(
      "SELECT current_setting('memory_limit'), current_setting('max_temp_directory_size'), current_setting('enable_external_access'), current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions'), current_setting('lock_configuration')",
    )).getRowsJS()[0]);
    expect(settings).toEqual(['256.0 MiB', '256.0 MiB', false, false, false, true]);
    const csv = join(dir, 'rows.csv');
    writeFileSync(csv, 'z\n');
    expect(await target.importCsv('in.c-b.t', csv)).toEqual({ inserted: 1, duplicate: false });
    const out = join(dir, 'out.csv');
    await target.exportTable('in.c-b.t', { columns: ['a'], format: 'csv', gzip: false }, out);
    expect(readFileSync(out, 'utf8').trim().split('\n')).toEqual(['a', 'x', 'yy', 'z']);
    // Nothing is left in the folder the database may use, and the source file is untouched.
    expect(readdirSync(`${join(dir, 'tables.duckdb')}.io`)).toEqual([]);
    expect(readFileSync(csv, 'utf8')).toBe('z\n');
  });
});

describe('DuckDB read-only query bounds', () => {
  it('refuses at once a query whose constant DuckDB would fold for a minute while preparing it', async () => {
    const started = Date.now();
    const err = await refusal(target.query('SELECT len(list_sort(list_reverse(generate_series(1, 60000000))))', options({ timeoutMs: 1000 })));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(err.kind).toBe('memory');
    expect(err.message).toContain('generate_series() would make a value of 59999999 elements');
  });

  it('counts the time DuckDB spends preparing a query: one it could not interrupt there is a timeout, never a result', async () => {
    // DuckDB folds this constant while it prepares the statement (one levenshtein of 10000
    // characters after another) and does not look at the interrupt in between: the adapter
    // returns once DuckDB has, with a timeout (SqlService answers the client at the deadline).
    const folding = `SELECT ${Array.from({ length: 4 }, (_, i) => `levenshtein(repeat('a', 10000), repeat('${'bcde'[i]}', 10000))`).join(' + ')}`;
    const err = await refusal(target.query(folding, options({ timeoutMs: 50 })));
    expect(err.kind).toBe('timeout');
    expect((await target.query('SELECT 2 AS two', options())).rows).toEqual([[2]]);
  }, 60_000);

  it('stops a query past the memory limit with an error naming the limit; the process stays within bounds', async () => {
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    try {
      const err = await refusal(target.query('SELECT len(list(x)) FROM range(400000000) t(x)', options({ timeoutMs: 60_000 })));
      expect(err.kind).toBe('memory');
      expect(err.message).toContain('SQL memory limit (256MB)');
      expect(err.message).toContain('Out of Memory Error');
    } finally {
      clearInterval(sampler);
    }
    // Loosely: the limit, DuckDB's own blocks and the sampling's coarseness, far from the gigabytes unbounded.
    expect(peak - before).toBeLessThan(1024 * MB);
    expect((await target.query('SELECT count(*) AS n FROM "in.c-b".t', options())).rows).toEqual([['2']]);
  });

  it('never answers rows cut short by the interrupt: a fetch stopped by the timeout is a timeout', async () => {
    const err = await refusal(target.query('SELECT x FROM range(10000000000) t(x) WHERE x % 1000000007 = 0', options({ timeoutMs: 300, maxRows: 1000 })));
    expect(err.kind).toBe('timeout');
  });
});

describe('values DuckDB does not count (checked in the parse tree)', () => {
  /** The first statement of `sql` as json_serialize_sql gives it. */
  async function tree(sql: string): Promise<unknown> {
    return target.withQueryConnection(async (conn) => JSON.parse(String((await conn.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [sql])).getRowsJS()[0][0])));
  }

  it.each([
    'SELECT range(1, 10, 2)',
    `SELECT len(range(${MAX_VALUE_SIZE}))`,
    'SELECT count(*) FROM range(1000000000)',
    'SELECT * FROM generate_series(1, 1000000000) LIMIT 1',
    "SELECT lpad(a, 10, '0'), rpad(a, 3, ' '), repeat('-', 80), bar(3, 0, 10), printf('%05d', 3), format('{:>8}', 'x') FROM \"in.c-b\".t",
    "SELECT repeat(a, 8), replace(a, 'x', 'xy'), regexp_replace(a, '[^a-z]', '', 'g') FROM \"in.c-b\".t",
    "SELECT list_transform([1, 2], x -> lpad(x::VARCHAR, 3, '0')), [y * 2 for y in range(3)]",
  ])('lets through %s', async (sql) => {
    expect(valueSizeProblem(await tree(sql))).toBeUndefined();
  });

  it.each([
    ['SELECT len(generate_series(1, 60000000))', /generate_series\(\) would make a value of 59999999/],
    ['SELECT range(1000000000)', /range\(\) would make a value of 1000000000/],
    ['SELECT range(x) FROM range(10) t(x)', /range\(\) needs a literal number/],
    ["SELECT range(TIMESTAMP '2000-01-01', TIMESTAMP '2100-01-01', INTERVAL 1 SECOND)", /range\(\) needs a literal number/],
    ["SELECT repeat('x', 10000000000)", /repeat\(\) would make a value of 10000000000/],
    ["SELECT lpad('x', 100000000, 'y')", /lpad\(\) would make a value/],
    ['SELECT list_resize([1], 100000000)', /list_resize\(\) would make a value/],
    ["SELECT printf('%100000000d', 1)", /printf\(\) would make a value of 100000000/],
    ["SELECT printf('%*d', 100000000, 1)", /printf\(\) cannot take a width from an argument/],
    ["SELECT format('{:>{}}', 'x', 100000000)", /format\(\) cannot take a width from an argument/],
    ['SELECT bar(1, 0, 2, 100000000)', /bar\(\) would make a value/],
    ['SELECT repeat(repeat(a, 10), 10) FROM "in.c-b".t', new RegExp(`up to 100 times larger .* at most ${MAX_GROWTH} times`)],
    ["SELECT replace(replace(replace(replace(a, 'x', 'xxxx'), 'x', 'xxxx'), 'x', 'xxxx'), 'x', 'xxxx') FROM \"in.c-b\".t", /up to 256 times larger/],
    ["SELECT replace(a, '', 'x') FROM \"in.c-b\".t", /empty search string/],
    ['SELECT list_transform(range(10000), x -> range(1000))', /up to 1000 times larger/],
    ['SELECT list_reduce([1, 2], (a, b) -> a + b)', /list_reduce\(\) is not allowed/],
  ])('refuses %s', async (sql, message) => {
    expect(valueSizeProblem(await tree(sql))).toMatch(message);
  });
});

describe('libuv threads', () => {
  it('warns at start when the SQL connections, an import and an export could take every libuv thread', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    // What the warning reads (the pool itself was sized when this process started).
    const given = process.env.UV_THREADPOOL_SIZE;
    process.env.UV_THREADPOOL_SIZE = '4';
    try {
      for (const connections of ['2', '3']) {
        const config = loadConfig(['--data-dir', dir, '--target-path', join(dir, `t${connections}.duckdb`), '--sql-connections', connections], {});
        await (await openTarget(config, logger)).close();
      }
    } finally {
      if (given === undefined) delete process.env.UV_THREADPOOL_SIZE;
      else process.env.UV_THREADPOOL_SIZE = given;
    }
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({ sqlConnections: 3, uvThreadpoolSize: 4 });
    expect(lines[0]).toContain('UV_THREADPOOL_SIZE=7');
  });
});
