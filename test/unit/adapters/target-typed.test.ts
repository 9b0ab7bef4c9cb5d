/**
 * Typed columns, primary keys that upsert, columns added, and writes that fill some columns by
 * name, on both Target adapters (a real DuckDB file and a real PostgreSQL): what the catalog
 * says, what the rows hold, and that a write that cannot go writes nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { DuckDbTarget } from '../../../src/adapters/target/duckdb-target.js';
import { PostgresTarget } from '../../../src/adapters/target/postgres-target.js';
import { TableColumnsMismatchError, type QueryOptions, type Target } from '../../../src/ports/target.js';
import { isUntypedColumn } from '../../../src/ports/target-columns.js';
import type { BaseType } from '../../../src/model/definition.js';
import { POSTGRES_START_TIMEOUT_MS } from '../../helpers/postgres.js';
import { readRows, runOnTarget, TARGETS, targetServers, type TargetLocation } from '../../helpers/targets.js';

const servers = targetServers();

const ALL_TYPES: Record<string, BaseType> = {
  s: 'STRING', i: 'INTEGER', n: 'NUMERIC', f: 'FLOAT', b: 'BOOLEAN', d: 'DATE', ts: 'TIMESTAMP', j: 'JSON',
};
const NATIVE = {
  duckdb: { s: 'VARCHAR', i: 'BIGINT', n: 'DECIMAL(38,9)', f: 'DOUBLE', b: 'BOOLEAN', d: 'DATE', ts: 'TIMESTAMP WITH TIME ZONE', j: 'JSON', u: 'VARCHAR' },
  postgres: { s: 'text', i: 'bigint', n: 'numeric', f: 'double precision', b: 'boolean', d: 'date', ts: 'timestamp with time zone', j: 'jsonb', u: 'text' },
};

const query = (over: Partial<QueryOptions> = {}): QueryOptions => ({ timeoutMs: 10_000, maxRows: 1000, authorize: () => undefined, ...over });

describe.each(TARGETS)('%s target: typed columns and primary keys', (kind) => {
  let dir: string;
  let where: TargetLocation;
  let target: Target;

  const open = () => (where.url ? PostgresTarget.open(where.url) : DuckDbTarget.open(where.path!));
  /** A statement on the database behind Sluice's back (DuckDB: the file is closed meanwhile). */
  const behindTheBack = async (sql: string) => {
    if (kind === 'duckdb') await target.close();
    await runOnTarget(where, sql);
    if (kind === 'duckdb') target = await open();
  };
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, name.endsWith('.gz') ? gzipSync(content) : content);
    return path;
  };
  /** The table's rows as the database holds them, ordered by `order`. */
  const stored = async (table: string, columns: string[], ...order: string[]) => {
    const sql = `SELECT ${columns.map((c) => `"${c}"`).join(', ')} FROM "in.c-b"."${table}" ORDER BY ${order.map((c) => `"${c}"`).join(', ')}`;
    return (await target.query(sql, query())).rows;
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-typed-'));
    where = await servers.location(kind, dir);
    target = await open();
    await target.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
  }, POSTGRES_START_TIMEOUT_MS);

  afterEach(async () => {
    await target.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates the native type of each base type, nullable; the untyped column stays a string that is never NULL', async () => {
    const table = await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: [...Object.keys(ALL_TYPES), 'u'], types: ALL_TYPES });
    const expected = [...Object.keys(ALL_TYPES), 'u'].map((name) => ({
      name,
      ...(ALL_TYPES[name] ? { type: ALL_TYPES[name] } : {}),
      nativeType: NATIVE[kind][name as keyof (typeof NATIVE)['duckdb']],
      nullable: name !== 'u',
    }));
    expect(table.definitions).toEqual(expected);
    expect(table.primaryKey).toEqual([]);
    expect(isUntypedColumn(table.definitions.at(-1)!)).toBe(true);
    expect(isUntypedColumn(table.definitions[0])).toBe(false);
    // The same answer from the catalog, after a reopen.
    await target.close();
    target = await open();
    expect((await target.getTable('in.c-b.t'))?.definitions).toEqual(expected);
    expect((await target.listTables())[0].definitions).toEqual(expected);
  });

  it('reads the CSV text of each type: unquoted empty is NULL, "" the empty string; untyped reads both as ""', async () => {
    await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['k', ...Object.keys(ALL_TYPES), 'u'], types: { k: 'INTEGER', ...ALL_TYPES } });
    const csv = [
      '1,text,-42,-1.50,1.5e-7,true,2026-11-27,2026-11-27T01:02:03.456Z,"{""a"":[1,""x""]}",plain',
      '2,"",9007199254740993,12345678901234567890.123456789,-0.25,false,1999-01-31,2026-11-27T01:02:03.456789Z,"""s""",""',
      '3,,,,,,,,,',
    ].join('\n') + '\n';
    expect(await target.importCsv('in.c-b.t', file('typed.csv', csv), { expectedRows: 3, newlineOnly: true })).toEqual({ inserted: 3, duplicate: false });

    // The values as the database holds them, through a typed query.
    const [one, two, three] = (await target.query('SELECT s, i, n, f, b, d, ts, j, u, s IS NULL AS s_null, u IS NULL AS u_null FROM "in.c-b".t ORDER BY k', query())).rows;
    expect(one.slice(0, 2)).toEqual(['text', '-42']);
    expect(Number(one[2])).toBe(-1.5);
    expect(one[3]).toBe(1.5e-7);
    expect(one[4]).toBe(true);
    expect(String(one[5])).toMatch(/^2026-11-27/);
    expect(Date.parse(String(one[6]).replace(' ', 'T').replace(/\+00(:00)?$/, 'Z'))).toBe(Date.parse('2026-11-27T01:02:03.456Z'));
    expect(JSON.parse(typeof one[7] === 'string' ? one[7] : JSON.stringify(one[7]))).toEqual({ a: [1, 'x'] });
    expect(one[8]).toBe('plain');
    // 64-bit integers beyond 2^53 and 38-digit decimals survive.
    expect(two.slice(0, 3)).toEqual(['', '9007199254740993', expect.stringMatching(/^12345678901234567890\.123456789/)]);
    expect(two[8]).toBe('');
    expect(three).toEqual([null, null, null, null, null, null, null, null, '', true, false]);

    // The preview shows each value as text, NULL as "", a TIMESTAMP in UTC with "Z" (a NUMERIC
    // has DuckDB's 9 decimals; PostgreSQL's numeric keeps the scale it was given).
    const preview = await target.preview('in.c-b.t', 10);
    expect(preview[0]).toEqual(['1', 'text', '-42', kind === 'duckdb' ? '-1.500000000' : '-1.50', expect.stringMatching(/^1\.5e-0?7$/), 'true', '2026-11-27', '2026-11-27T01:02:03.456000Z', expect.stringMatching(/^\{"a": ?\[1, ?"x"\]\}$/), 'plain']);
    expect(preview[1][7]).toBe('2026-11-27T01:02:03.456789Z');
    expect(preview[2]).toEqual(['3', '', '', '', '', '', '', '', '', '']);
  });

  it('a value that does not convert fails the whole import, names column and value, and records no import id', async () => {
    await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['id', 'amount'], types: { amount: 'INTEGER' } });
    const good = file('good.csv', 'a,1\n');
    const bad = file('bad.csv.gz', 'b,2\nc,twelve\n');
    const err = await target.importCsv('in.c-b.t', [good, bad], { importId: 'f1' }).then(() => undefined, (e: unknown) => e as Error);
    expect(err?.message).toContain('twelve');
    expect(err?.message).toContain('amount');
    expect(await target.rowCount('in.c-b.t')).toBe(0);
    // The same import id goes through once the file is fixed: nothing of the failed one stayed.
    writeFileSync(bad, gzipSync('b,2\nc,12\n'));
    expect(await target.importCsv('in.c-b.t', [good, bad], { importId: 'f1' })).toEqual({ inserted: 3, duplicate: false });
    // insertRows casts as well; null is NULL in a typed column and '' in an untyped one.
    await expect(target.insertRows('in.c-b.t', [['d', '1'], ['e', '1.5']])).rejects.toThrow(/1\.5/);
    await target.insertRows('in.c-b.t', [[null, null]]);
    expect(await stored('t', ['id', 'amount'], 'id')).toEqual([['', null], ['a', '1'], ['b', '2'], ['c', '12']]);
  });

  it('a JSON value with \\u0000 fails the import cleanly on PostgreSQL (jsonb cannot hold it); DuckDB takes it', async () => {
    await target.createTable({ id: 'in.c-b.j', bucketId: 'in.c-b', name: 'j', columns: ['j'], types: { j: 'JSON' } });
    const write = target.importCsv('in.c-b.j', file('nul.csv', '"{""a"":""x\\u0000y""}"\n'), { importId: 'nul' });
    if (kind === 'postgres') {
      await expect(write).rejects.toThrow(/^the write to table "in.c-b.j" failed: unsupported Unicode escape sequence .*COPY.*nothing was written$/);
      expect(await target.rowCount('in.c-b.j')).toBe(0);
    } else {
      expect(await write).toEqual({ inserted: 1, duplicate: false });
    }
  });

  it('fills the columns the data names, in its order; the others get their default', async () => {
    await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a', 'n', 'b', 'old'], types: { n: 'INTEGER', old: 'DATE' } });
    const path = file('part.csv', 'x,7\n');
    expect(await target.importCsv('in.c-b.t', path, { columns: ['b', 'n'], types: { n: 'INTEGER' } })).toEqual({ inserted: 1, duplicate: false });
    await target.insertRows('in.c-b.t', [['y']], { columns: ['a'] });
    expect(await stored('t', ['a', 'n', 'b', 'old'], 'a')).toEqual([['', '7', 'x', null], ['y', null, '', null]]);

    // A column the table lacks, or has of another type: nothing written, the reason given.
    const missing = await target.importCsv('in.c-b.t', path, { columns: ['b', 'gone'] }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(TableColumnsMismatchError);
    expect((missing as TableColumnsMismatchError).reason).toBe('the table has no column "gone"');
    const retyped = await target.importCsv('in.c-b.t', path, { columns: ['b', 'n'], types: { n: 'FLOAT' } }).catch((e: unknown) => e);
    expect((retyped as TableColumnsMismatchError).reason).toBe('the column "n" is INTEGER (' + NATIVE[kind].i + ') in the table, the data was mapped as FLOAT');
    const untyped = await target.importCsv('in.c-b.t', path, { columns: ['b', 'n'], types: {} }).catch((e: unknown) => e);
    expect((untyped as TableColumnsMismatchError).reason).toContain('the data was mapped as untyped');
    await expect(target.insertRows('in.c-b.t', [['z', 'z']], { columns: ['a', 'a'] })).rejects.toThrow(/named twice/);
    expect(await target.rowCount('in.c-b.t')).toBe(2);
  });

  it('an untyped column of a table made before typed columns (no DEFAULT) gets \'\' when a write leaves it out', async () => {
    await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a', 'b'] });
    await behindTheBack(`ALTER TABLE "in.c-b".t ALTER COLUMN b DROP DEFAULT`);
    expect((await target.getTable('in.c-b.t'))?.definitions.map(isUntypedColumn)).toEqual([true, true]);
    await target.importCsv('in.c-b.t', file('a.csv', 'x\n'), { columns: ['a'], importId: 'i1' });
    expect(await stored('t', ['a', 'b'], 'a')).toEqual([['x', '']]);
  });

  it('upserts on a primary key: the last row of a key wins, within a file and across files, and replaces the table\'s row', async () => {
    const table = await target.createTable({
      id: 'in.c-b.k', bucketId: 'in.c-b', name: 'k', columns: ['id', 'tenant', 'v', 'note'], types: { id: 'INTEGER', v: 'FLOAT' }, primaryKey: ['tenant', 'id'],
    });
    expect(table.primaryKey).toEqual(['tenant', 'id']);
    expect(table.definitions.find((d) => d.name === 'id')).toMatchObject({ type: 'INTEGER', nullable: false });
    // A key column of type STRING is NOT NULL too, and still reads back as STRING.
    await target.createTable({ id: 'in.c-b.s', bucketId: 'in.c-b', name: 's', columns: ['k'], types: { k: 'STRING' }, primaryKey: ['k'] });
    expect((await target.getTable('in.c-b.s'))?.definitions).toEqual([{ name: 'k', type: 'STRING', nativeType: NATIVE[kind].s, nullable: false }]);

    const first = file('1.csv', '1,a,1.5,first\n2,a,2,x\n1,a,1.25,second\n1,b,9,other tenant\n');
    const second = file('2.csv.gz', '2,a,,"replaced, v NULL"\n1,a,1.125,third\n');
    // Rows read are counted (6), not rows left.
    expect(await target.importCsv('in.c-b.k', [first, second], { importId: 'f1', expectedRows: 6 })).toEqual({ inserted: 6, duplicate: false });
    expect(await stored('k', ['tenant', 'id', 'v', 'note'], 'note')).toEqual([
      ['b', '1', 9, 'other tenant'], ['a', '2', null, 'replaced, v NULL'], ['a', '1', 1.125, 'third'],
    ]);
    expect((await target.getTable('in.c-b.k'))?.rowsCount).toBe(3);
    // A retried import is a no-op.
    expect(await target.importCsv('in.c-b.k', [first, second], { importId: 'f1' })).toEqual({ inserted: 0, duplicate: true });

    // A later write replaces the whole row: a column it does not fill gets its default; _timestamp moves.
    const [[before]] = (await target.query(`SELECT CAST("_timestamp" AS VARCHAR) FROM "in.c-b".k WHERE tenant = 'b'`, query())).rows;
    await new Promise((r) => setTimeout(r, 20));
    expect(await target.insertRows('in.c-b.k', [['b', '1', '10'], ['c', '5', null]], { columns: ['tenant', 'id', 'v'], importId: 'r1' })).toEqual({ inserted: 2, duplicate: false });
    expect(await stored('k', ['tenant', 'id', 'v', 'note'], 'tenant', 'id')).toEqual([
      ['a', '1', 1.125, 'third'], ['a', '2', null, 'replaced, v NULL'], ['b', '1', 10, ''], ['c', '5', null, ''],
    ]);
    const [[after]] = (await target.query(`SELECT CAST("_timestamp" AS VARCHAR) FROM "in.c-b".k WHERE tenant = 'b'`, query())).rows;
    expect(after).not.toBe(before);
    expect((await target.getTable('in.c-b.k'))?.rowsCount).toBe(4);

    // A NULL key, or a write that does not fill the key: nothing written.
    await expect(target.importCsv('in.c-b.k', file('null.csv', ',a,1,no id\n'))).rejects.toThrow();
    await expect(target.insertRows('in.c-b.k', [['a', '3']], { columns: ['tenant', 'v'] })).rejects.toThrow(/primary key column "id"/);
    expect(await target.rowCount('in.c-b.k')).toBe(4);
  });

  it('a key value longer than PostgreSQL\'s btree takes fails the write with the reason; DuckDB takes it', async () => {
    await target.createTable({ id: 'in.c-b.k', bucketId: 'in.c-b', name: 'k', columns: ['k'], primaryKey: ['k'] });
    // Random text: PostgreSQL compresses a key before it measures it.
    const long = randomBytes(1500).toString('hex');
    const write = target.importCsv('in.c-b.k', file('long.csv', `short\n${long}\n`), { importId: 'long' });
    if (kind === 'postgres') {
      await expect(write).rejects.toThrow(/^the write to table "in.c-b.k" failed: index row size \d+ exceeds .* nothing was written$/);
      expect(await target.rowCount('in.c-b.k')).toBe(0);
    } else {
      expect(await write).toEqual({ inserted: 2, duplicate: false });
    }
  });

  it('adds typed and untyped columns in one transaction: old rows read NULL or \'\'', async () => {
    await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['id'], types: { id: 'INTEGER' }, primaryKey: ['id'] });
    await target.insertRows('in.c-b.t', [['1']]);
    const table = await target.addColumns('in.c-b.t', [{ name: 'n', type: 'NUMERIC' }, { name: 'u' }]);
    expect(table.columns).toEqual(['id', 'n', 'u']);
    expect(table.definitions.slice(1)).toEqual([
      { name: 'n', type: 'NUMERIC', nativeType: NATIVE[kind].n, nullable: true },
      { name: 'u', nativeType: NATIVE[kind].u, nullable: false },
    ]);
    expect(table.primaryKey).toEqual(['id']);
    expect(await stored('t', ['id', 'n', 'u'], 'id')).toEqual([['1', null, '']]);
    // The new columns take part in upserts at once.
    await target.insertRows('in.c-b.t', [['1', '2.5', 'x']], { columns: ['id', 'n', 'u'] });
    expect(await target.preview('in.c-b.t', 5)).toEqual([['1', kind === 'duckdb' ? '2.500000000' : '2.5', 'x']]);

    // A name the table has (in any letter case) fails the whole call: nothing is added.
    await expect(target.addColumns('in.c-b.t', [{ name: 'fresh' }, { name: 'N' }])).rejects.toThrow(/"N"/);
    expect((await target.getTable('in.c-b.t'))?.columns).toEqual(['id', 'n', 'u']);
    // A name longer than PostgreSQL's 63 bytes keeps its Storage name.
    const long = `long_${'x'.repeat(70)}`;
    await target.addColumns('in.c-b.t', [{ name: long, type: 'DATE' }]);
    expect((await target.getTable('in.c-b.t'))?.definitions.at(-1)).toEqual({ name: long, type: 'DATE', nativeType: kind === 'duckdb' ? 'DATE' : 'date', nullable: true });
    await target.insertRows('in.c-b.t', [['1', '2026-02-03']], { columns: ['id', long], types: { id: 'INTEGER', [long]: 'DATE' } });
    expect(await target.preview('in.c-b.t', 5)).toEqual([['1', '', '', '2026-02-03']]);
  });

  it('reads a table changed behind Sluice\'s back as it is', async () => {
    await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a'] });
    const small = kind === 'duckdb' ? 'INTEGER' : 'integer';
    await behindTheBack(`ALTER TABLE "in.c-b".t ADD COLUMN small ${small}; ALTER TABLE "in.c-b".t ADD COLUMN loose ${NATIVE[kind].s}`);
    const table = await target.getTable('in.c-b.t');
    expect(table?.definitions).toEqual([
      { name: 'a', nativeType: NATIVE[kind].u, nullable: false },
      { name: 'small', nativeType: small, nullable: true },
      { name: 'loose', type: 'STRING', nativeType: NATIVE[kind].s, nullable: true },
    ]);
    expect(isUntypedColumn(table!.definitions[1])).toBe(false);
  });

  it('exports typed columns as their text, NULL as an empty field, and filters by the text', async () => {
    await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['id', 'at', 'ok'], types: { id: 'INTEGER', at: 'TIMESTAMP', ok: 'BOOLEAN' } });
    await target.importCsv('in.c-b.t', file('rows.csv', '1,2026-01-02T03:04:05.678Z,true\n2,,false\n3,2026-01-02T00:00:00Z,\n'));
    const path = join(dir, 'out.csv');
    await target.exportTable('in.c-b.t', { columns: ['id', 'at', 'ok'], where: { column: 'ok', operator: 'ne', values: ['false'] }, format: 'csv', gzip: false }, path);
    expect(readFileSync(path, 'utf8').split('\n').slice(1, 3)).toEqual(['1,2026-01-02T03:04:05.678000Z,true', '3,2026-01-02T00:00:00.000000Z,']);
    await target.exportTable('in.c-b.t', { columns: ['id'], where: { column: 'id', operator: 'eq', values: ['2', 'x'] }, format: 'csv', gzip: false }, path);
    expect(parse(readFileSync(path))).toEqual([['id'], ['2']]);
  });

  it('reads the rows of a keyed table from the database itself: no key twice', async () => {
    await target.createTable({ id: 'in.c-b.e', bucketId: 'in.c-b', name: 'e', columns: ['id', 'n'], types: { n: 'INTEGER' }, primaryKey: ['id'] });
    const rows = Array.from({ length: 3000 }, (_, i) => `k${i % 700},${i}`).join('\n') + '\n';
    expect(await target.importCsv('in.c-b.e', [file('a.csv', rows), file('b.csv.gz', rows)], { expectedRows: 6000 })).toMatchObject({ inserted: 6000 });
    await target.close();
    const read = await readRows(where, 'in.c-b', 'e', ['id', 'n']);
    target = await open();
    expect(read).toHaveLength(700);
    // The last of each key: its last row in the second file.
    const last = new Map(read.map((r) => [r.id, Number(r.n)]));
    for (let k = 0; k < 700; k++) expect(last.get(`k${k}`)).toBe(2999 - ((2999 - k) % 700));
  });
});
