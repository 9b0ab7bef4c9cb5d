/**
 * What both Target adapters do beyond the rows' way in: the system column, exports (CSV, gzip,
 * Parquet, filters), read-only queries, and values PostgreSQL's COPY would otherwise misread.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { DuckDBInstance } from '@duckdb/node-api';
import { QueryRefusedError, type QueryOptions, type QueryRelation, type Target } from '../../../src/ports/target.js';
import { POSTGRES_START_TIMEOUT_MS } from '../../helpers/postgres.js';
import { TARGETS, targetServers } from '../../helpers/targets.js';

const servers = targetServers();

async function refusal(run: () => Promise<unknown>): Promise<QueryRefusedError> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(QueryRefusedError);
    return err as QueryRefusedError;
  }
  throw new Error('expected a QueryRefusedError');
}

describe.each(TARGETS)('%s target: system column, export and query', (kind) => {
  let dir: string;
  let target: Target;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-export-'));
    ({ target } = await servers.open(kind, dir));
    await target.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
    await target.createBucket({ id: 'in.c-secret', stage: 'in', name: 'c-secret' });
    await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['id', 'kind', 'body'] });
    await target.createTable({ id: 'in.c-secret.s', bucketId: 'in.c-secret', name: 's', columns: ['x'] });
  }, POSTGRES_START_TIMEOUT_MS);

  afterEach(async () => {
    await target.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const all = (relations: QueryRelation[]) => relations;
  const options = (over: Partial<QueryOptions> = {}): QueryOptions => ({ timeoutMs: 5000, maxRows: 100, authorize: () => undefined, ...over });

  it('keeps _timestamp out of the columns and the preview, and fills it on every write', async () => {
    await target.insertRows('in.c-b.t', [['1', 'a', 'x']]);
    const file = join(dir, 'rows.csv');
    writeFileSync(file, '2,b,y\n');
    await target.importCsv('in.c-b.t', file);
    expect((await target.getTable('in.c-b.t'))?.columns).toEqual(['id', 'kind', 'body']);
    expect(await target.preview('in.c-b.t', 10)).toEqual([['1', 'a', 'x'], ['2', 'b', 'y']]);
    const result = await target.query('SELECT id, _timestamp FROM "in.c-b".t ORDER BY id', options());
    expect(result.rows).toHaveLength(2);
    // ISO 8601 in UTC on both targets (DuckDB keeps its microseconds).
    for (const [, time] of result.rows) {
      expect(String(time)).toMatch(kind === 'duckdb' ? /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/ : /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Math.abs(Date.parse(String(time)) - Date.now())).toBeLessThan(60_000);
    }
  });

  it('reads back what PostgreSQL\'s COPY would misread: a lone \\., an empty one-column row, NUL', async () => {
    await target.createTable({ id: 'in.c-b.one', bucketId: 'in.c-b', name: 'one', columns: ['v'] });
    const file = join(dir, 'odd.csv');
    writeFileSync(file, 'a\n\\.\n\nb\n');
    expect(await target.importCsv('in.c-b.one', file, { expectedRows: 4 })).toEqual({ inserted: 4, duplicate: false });
    await target.insertRows('in.c-b.one', [['\\.'], [''], ['nul\u0000byte']]);
    const rows = (await target.preview('in.c-b.one', 10)).map((r) => r[0]);
    expect(rows.slice(0, 6)).toEqual(['a', '\\.', '', 'b', '\\.', '']);
    // PostgreSQL's text cannot hold NUL: it becomes U+FFFD there; DuckDB keeps it.
    expect(rows[6]).toBe(kind === 'postgres' ? 'nul\uFFFDbyte' : 'nul\u0000byte');
  });

  it('exports gzip CSV with a header, the chosen columns, where, limit, and progress', async () => {
    await target.insertRows('in.c-b.t', [['1', 'a', 'x,"y"\nz'], ['2', 'b', ''], ['3', 'a', 'ž'], ['4', "it's", 'q']]);
    const path = join(dir, 'out.csv.gz');
    const progress: number[] = [];
    const result = await target.exportTable('in.c-b.t', { columns: ['body', 'id'], where: { column: 'kind', operator: 'eq', values: ['a', "it's"] }, format: 'csv', gzip: true }, path, (p) => {
      progress.push(p.rows);
      expect(p.totalRows).toBe(3);
    });
    expect(result.rows).toBe(3);
    expect(result.bytes).toBe(readFileSync(path).length);
    expect(parse(gunzipSync(readFileSync(path)))).toEqual([['body', 'id'], ['x,"y"\nz', '1'], ['ž', '3'], ['q', '4']]);
    expect(progress[0]).toBe(0);
    expect(progress.at(-1)).toBe(3);

    await target.exportTable('in.c-b.t', { columns: ['id'], where: { column: 'kind', operator: 'ne', values: ['a'] }, limit: 1, format: 'csv', gzip: false }, join(dir, 'ne.csv'));
    expect(readFileSync(join(dir, 'ne.csv'), 'utf8').trim().split(/\r?\n/)).toEqual(['id', '2']);
  });

  it('exports the rows written in a time window (changedSince, changedUntil)', async () => {
    await target.insertRows('in.c-b.t', [['1', 'a', 'old']]);
    await new Promise((r) => setTimeout(r, 50));
    const between = new Date();
    await new Promise((r) => setTimeout(r, 50));
    await target.insertRows('in.c-b.t', [['2', 'a', 'new']]);
    const since = join(dir, 'since.csv');
    await target.exportTable('in.c-b.t', { columns: ['id', '_timestamp'], changedSince: between, format: 'csv', gzip: false }, since);
    const rows = parse(readFileSync(since)) as string[][];
    expect(rows.map((r) => r[0])).toEqual(['id', '2']);
    expect(rows[1][1]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(Date.parse(rows[1][1])).toBeGreaterThanOrEqual(between.getTime());
    const until = join(dir, 'until.csv');
    await target.exportTable('in.c-b.t', { columns: ['id'], changedUntil: between, format: 'csv', gzip: false }, until);
    expect(parse(readFileSync(until))).toEqual([['id'], ['1']]);
  });

  it('exports Parquet of string columns', async () => {
    await target.insertRows('in.c-b.t', [['1', 'a', ''], ['2', 'b', 'multi\nline']]);
    const path = join(dir, 'out.parquet');
    expect((await target.exportTable('in.c-b.t', { columns: ['id', 'kind', 'body'], format: 'parquet', gzip: false }, path)).rows).toBe(2);
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    const reader = await conn.runAndReadAll(`SELECT * FROM read_parquet('${path}') ORDER BY id`);
    expect(reader.columnNames()).toEqual(['id', 'kind', 'body']);
    expect(reader.getRowsJS()).toEqual([['1', 'a', ''], ['2', 'b', 'multi\nline']]);
    conn.closeSync();
    db.closeSync();
  });

  it('runs a read-only query with the relations it reads, within the row limit', async () => {
    await target.insertRows('in.c-b.t', [['1', 'a', 'x'], ['2', 'b', 'y'], ['3', 'a', 'z']]);
    let seen: QueryRelation[] = [];
    const result = await target.query(
      'WITH a AS (SELECT * FROM "in.c-b"."t" WHERE kind = \'a\') SELECT id, count(*) OVER () AS n FROM a ORDER BY id;',
      options({ maxRows: 1, authorize: (r) => void (seen = all([...r])) }),
    );
    expect(seen).toEqual([{ schema: 'in.c-b', table: 't', bucketId: 'in.c-b' }]);
    expect(result.columns.map((c) => c.name)).toEqual(['id', 'n']);
    expect(result.rows).toEqual([['1', '2']]); // 64-bit integers as strings, on both
    expect(result.truncated).toBe(true);
    const values = await target.query("SELECT 1 AS one, 'x' AS s, true AS b, NULL AS n", options());
    expect(values.rows).toEqual([[1, 'x', true, null]]);
    expect(values.truncated).toBe(false);
  });

  it('names a schema that is not a bucket without a bucket id, so the caller can refuse it', async () => {
    let seen: QueryRelation[] = [];
    const authorize = (r: readonly QueryRelation[]) => {
      seen = [...r];
      throw new Error('refused by the caller');
    };
    await expect(target.query('SELECT * FROM _sluice.tables', options({ authorize }))).rejects.toThrow('refused by the caller');
    expect(seen).toEqual([{ schema: '_sluice', table: 'tables', bucketId: undefined }]);
    await expect(target.query('SELECT x FROM "in.c-secret".s UNION ALL SELECT id FROM "in.c-b".t', options({ authorize }))).rejects.toThrow('refused');
    expect(seen.map((r) => r.bucketId).sort()).toEqual(['in.c-b', 'in.c-secret']);
  });

  it.each([
    'DELETE FROM "in.c-b".t',
    'INSERT INTO "in.c-b".t VALUES (\'9\', \'9\', \'9\')',
    'UPDATE "in.c-b".t SET body = \'changed\'',
    'DROP TABLE "in.c-b".t',
    'CREATE TABLE "in.c-b".x (a text)',
    'SELECT 1; DELETE FROM "in.c-b".t',
    '/* hi */ delete from "in.c-b".t',
  ])('refuses %j before it runs, and nothing changes', async (sql) => {
    await target.insertRows('in.c-b.t', [['1', 'a', 'x']]);
    let authorized = false;
    const err = await refusal(() => target.query(sql, options({ authorize: () => void (authorized = true) })));
    expect(['write', 'invalid']).toContain(err.kind);
    expect(authorized).toBe(false);
    expect(await target.preview('in.c-b.t', 10)).toEqual([['1', 'a', 'x']]);
    expect((await target.listTables()).map((t) => t.id)).toEqual(['in.c-b.t', 'in.c-secret.s']);
  });

  it('refuses a data-modifying CTE or a locking read on PostgreSQL, and file readers on DuckDB', async () => {
    await target.insertRows('in.c-b.t', [['1', 'a', 'x']]);
    if (kind === 'postgres') {
      expect((await refusal(() => target.query('WITH d AS (DELETE FROM "in.c-b".t RETURNING *) SELECT * FROM d', options()))).kind).toBe('write');
      expect((await refusal(() => target.query('SELECT * FROM "in.c-b".t FOR UPDATE', options()))).kind).toBe('write');
      expect((await refusal(() => target.query("SELECT pg_read_file('/etc/hostname')", options()))).kind).toBe('forbidden');
    } else {
      expect((await refusal(() => target.query("SELECT * FROM read_csv('/etc/hostname')", options()))).kind).toBe('forbidden');
      // A file named as a table is a relation outside every bucket: the caller refuses it.
      const authorize = (r: readonly QueryRelation[]) => {
        if (r.some((x) => !x.bucketId)) throw new Error('not a bucket');
      };
      await expect(target.query("SELECT * FROM '/etc/hostname'", options({ authorize }))).rejects.toThrow('not a bucket');
    }
    expect(await target.preview('in.c-b.t', 10)).toEqual([['1', 'a', 'x']]);
  });

  it('cancels a query that runs past its timeout, and says why a statement is wrong', async () => {
    const slow = kind === 'postgres' ? 'SELECT pg_sleep(5)' : 'SELECT count(*) FROM range(10000000000) a';
    const started = Date.now();
    expect((await refusal(() => target.query(slow, options({ timeoutMs: 300 })))).kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(4000);
    const wrong = await refusal(() => target.query('SELECT nope FROM "in.c-b".t', options()));
    expect(wrong.kind).toBe('invalid');
    expect(wrong.message).toMatch(/nope/);
    // The target goes on answering.
    expect((await target.query('SELECT 2 AS two', options())).rows).toEqual([[2]]);
  });
});
