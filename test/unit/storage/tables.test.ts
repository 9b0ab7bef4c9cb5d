import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { TableService, parseBucketId, parseTableId, validateColumns } from '../../../src/storage/tables.js';
import type { Target } from '../../../src/ports/target.js';
import { POSTGRES_START_TIMEOUT_MS } from '../../helpers/postgres.js';
import { TARGETS, targetServers } from '../../helpers/targets.js';
import { DomainError } from '../../../src/domain-errors.js';
import { statusOf } from '../../../src/http/errors.js';
import { csvRows } from '../../../src/pipeline/csv-rows.js';

/**
 * The DomainError a promise or function rejects with (fails the test when it does not), with
 * the status the APIs answer it with.
 */
async function apiError(run: () => unknown): Promise<{ statusCode: number; code: string; message: string }> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    const e = err as DomainError;
    return { statusCode: statusOf(e), code: e.code, message: e.message };
  }
  throw new Error('expected a DomainError');
}

describe('table and bucket ids', () => {
  it('splits valid ids', () => {
    expect(parseTableId('out.c-my_bucket.my-table')).toEqual({
      id: 'out.c-my_bucket.my-table',
      name: 'my-table',
      bucket: { id: 'out.c-my_bucket', stage: 'out', name: 'c-my_bucket', displayName: 'my_bucket' },
    });
    expect(parseBucketId('in.c-b').name).toBe('c-b');
  });

  it.each(['', 'in.c-b', 'sys.c-b.t', 'in.b.t', 'in.c-.t', 'in.c-b.', 'in.c-b.t.u', 'in.c-b.t"x', 'in.c-b c.t', `in.c-b.${'x'.repeat(97)}`])(
    'rejects table id %j with 400 storage.tables.validation',
    async (id) => {
      const err = await apiError(() => parseTableId(id));
      expect(err.statusCode).toBe(400);
      expect(err.code).toBe('storage.tables.validation');
      expect(err.message).toContain(`"${id}"`);
    },
  );

  it.each(['in', 'in.c-', 'in.c-a.b', 'x.c-a', 'in.c-a"'])('rejects bucket id %j', async (id) => {
    const err = await apiError(() => parseBucketId(id));
    expect(err.code).toBe('storage.buckets.validation');
  });

  it('rejects bad, duplicate and case-colliding column names', async () => {
    expect(() => validateColumns(['id', 'Body_2'])).not.toThrow();
    expect((await apiError(() => validateColumns([]))).message).toContain('at least one column');
    expect((await apiError(() => validateColumns(['a b']))).message).toContain('"a b"');
    expect((await apiError(() => validateColumns(['a', 'a']))).message).toContain('listed twice');
    expect((await apiError(() => validateColumns(['Id', 'id']))).message).toContain('letter case');
  });

  it('rejects the system column _timestamp, in any letter case, with a message that says why', async () => {
    for (const name of ['_timestamp', '_TIMESTAMP']) {
      const err = await apiError(() => validateColumns(['id', name]));
      expect(err.code).toBe('storage.tables.validation');
      expect(err.message).toBe(`Column name "${name}" is reserved: every table has the system column "_timestamp" (when the row was written).`);
    }
    expect(() => validateColumns(['timestamp', '_timestamp_2'])).not.toThrow();
  });
});

const servers = targetServers();

describe.each(TARGETS)('TableService on %s', (kind) => {
  let dir: string;
  let target: Target;
  let reopen: () => Promise<Target>;
  let tables: TableService;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-tables-'));
    ({ target, reopen } = await servers.open(kind, dir));
    tables = new TableService(target, 7);
  }, POSTGRES_START_TIMEOUT_MS);

  afterEach(async () => {
    await target.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('ensureTable creates the bucket and the table with string columns and metadata', async () => {
    const meta = { 'KBC.stream.sink.id': 'my-sink', 'KBC.stream.source.id': 'my-source' };
    expect(await tables.ensureTable('in.c-events.raw', [{ name: 'id' }, { name: 'body' }, { name: 'ip' }], { metadata: meta })).toEqual({ created: true, added: [] });

    const bucket = await tables.getBucket('in.c-events');
    expect(bucket).toMatchObject({ id: 'in.c-events', stage: 'in', name: 'c-events' });
    const table = await tables.getTable('in.c-events.raw');
    expect(table).toMatchObject({
      id: 'in.c-events.raw', bucketId: 'in.c-events', name: 'raw', columns: ['id', 'body', 'ip'],
      rowsCount: 0, lastImportDate: null, metadata: meta, primaryKey: [],
    });
    expect(table.definitions.map((d) => [d.name, d.type, d.nullable])).toEqual([['id', undefined, false], ['body', undefined, false], ['ip', undefined, false]]);
    expect(Date.parse(table.created)).not.toBeNaN();
    expect((await tables.listTables()).map((t) => t.id)).toEqual(['in.c-events.raw']);
  });

  it('ensureTable on a table with the same columns creates nothing, whatever their order', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'a' }, { name: 'b' }], { metadata: { k: 'first' } });
    expect(await tables.ensureTable('in.c-b.t', [{ name: 'a' }, { name: 'b' }], { metadata: { k: 'second' } })).toEqual({ created: false, added: [] });
    expect(await tables.ensureTable('in.c-b.t', [{ name: 'b' }, { name: 'a' }], { metadata: {} })).toEqual({ created: false, added: [] });
    // A column the mapping no longer has stays in the table.
    expect(await tables.ensureTable('in.c-b.t', [{ name: 'b' }], { metadata: {} })).toEqual({ created: false, added: [] });
    expect((await tables.getTable('in.c-b.t')).columns).toEqual(['a', 'b']);
    // An existing table keeps its metadata.
    expect((await tables.getTable('in.c-b.t')).metadata).toEqual({ k: 'first' });
    expect(await tables.listTables()).toHaveLength(1);
  });

  it.each([
    [[{ name: 'a' }, { name: 'B' }], [], '"b", which differs from "B" only in letter case'],
    [[{ name: 'a', type: 'INTEGER' as const }, { name: 'c' }], [], 'The column "a" of the table "in.c-b.t" is untyped, the requested type is INTEGER'],
    [[{ name: 'a' }, { name: 'c' }], ['a'], 'The primary key of the table "in.c-b.t" is [], the requested one is ["a"]'],
  ])(
    'ensureTable with columns %j and key %j on a table (a, b) fails with tableSchemaMismatch and changes nothing',
    async (columns, primaryKey, message) => {
      await tables.ensureTable('in.c-b.t', [{ name: 'a' }, { name: 'b' }], { metadata: {} });
      const err = await apiError(() => tables.ensureTable('in.c-b.t', columns, { primaryKey, metadata: {} }));
      expect(err.statusCode).toBe(400);
      expect(err.code).toBe('tableSchemaMismatch');
      expect(err.message).toContain(message);
      expect(err.message).toContain('Nothing was changed.');
      // Not even the new column "c" was added.
      expect((await tables.getTable('in.c-b.t')).columns).toEqual(['a', 'b']);
    },
  );

  it('ensureTable creates typed columns and the primary key, and adds the columns a mapping gains at the end', async () => {
    const columns = [{ name: 'id', type: 'INTEGER' as const }, { name: 'path' }, { name: 'at', type: 'TIMESTAMP' as const }];
    expect(await tables.ensureTable('in.c-b.t', columns, { primaryKey: ['path', 'id'], metadata: {} })).toEqual({ created: true, added: [] });
    const table = await tables.getTable('in.c-b.t');
    expect(table.primaryKey).toEqual(['path', 'id']);
    expect(table.definitions.map((d) => [d.name, d.type])).toEqual([['id', 'INTEGER'], ['path', undefined], ['at', 'TIMESTAMP']]);
    await tables.insertRows('in.c-b.t', [['1', 'a', '2026-01-01T00:00:00Z']]);

    // The same mapping: nothing to do. A grown one: its new columns at the end, old rows NULL or ''.
    expect(await tables.ensureTable('in.c-b.t', columns, { primaryKey: ['path', 'id'], metadata: {} })).toEqual({ created: false, added: [] });
    const grown = [{ name: 'ok', type: 'BOOLEAN' as const }, ...columns.slice(1), { name: 'note' }];
    expect(await tables.ensureTable('in.c-b.t', [columns[0], ...grown], { primaryKey: ['path', 'id'], metadata: {} })).toEqual({ created: false, added: ['ok', 'note'] });
    expect((await tables.getTable('in.c-b.t')).columns).toEqual(['id', 'path', 'at', 'ok', 'note']);
    expect((await tables.preview('in.c-b.t', 5)).rows).toEqual([['1', 'a', '2026-01-01T00:00:00.000000Z', '', '']]);
    expect(await target.query('SELECT ok IS NULL, note FROM "in.c-b".t', { timeoutMs: 5000, maxRows: 5, authorize: () => undefined })).toMatchObject({ rows: [[true, '']] });

    // A type change, or a key change: 400 naming the column and both types, nothing changed.
    const retyped = await apiError(() => tables.ensureTable('in.c-b.t', [{ name: 'id', type: 'STRING' }, { name: 'new' }], { primaryKey: ['id'], metadata: {} }));
    expect(retyped.code).toBe('tableSchemaMismatch');
    expect(retyped.message).toMatch(/^The column "id" of the table "in.c-b.t" is INTEGER \((BIGINT|bigint)\), the requested type is STRING;/);
    const rekeyed = await apiError(() => tables.ensureTable('in.c-b.t', columns, { primaryKey: ['id'], metadata: {} }));
    expect(rekeyed.message).toContain('The primary key of the table "in.c-b.t" is ["path","id"], the requested one is ["id"]');
    expect((await tables.getTable('in.c-b.t')).columns).toEqual(['id', 'path', 'at', 'ok', 'note']);
  });

  it('ensureTable refuses a type that is not a base type and a key that is not a column, before anything is created', async () => {
    const badType = await apiError(() => tables.ensureTable('in.c-b.t', [{ name: 'a', type: 'TEXT' as never }], { metadata: {} }));
    expect(badType).toMatchObject({ statusCode: 400, code: 'storage.tables.validation' });
    expect(badType.message).toContain('"TEXT"');
    expect((await apiError(() => tables.ensureTable('in.c-b.t', [{ name: 'a' }], { primaryKey: ['b'], metadata: {} }))).message).toContain('"b" is not a column');
    expect((await apiError(() => tables.ensureTable('in.c-b.t', [{ name: 'a' }], { primaryKey: ['a', 'a'], metadata: {} }))).message).toContain('listed twice');
    expect(await tables.listBuckets()).toEqual([]);
  });

  it('importCsv checks the columns it fills by name and type before it writes', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'id' }, { name: 'n', type: 'INTEGER' }], { metadata: {} });
    const file = join(dir, 'n.csv');
    writeFileSync(file, '5,x\n');
    const retyped = await apiError(() => tables.importCsv('in.c-b.t', file, { columns: ['n', 'id'], types: { n: 'NUMERIC' } }));
    expect(retyped).toMatchObject({ statusCode: 400, code: 'tableSchemaMismatch' });
    expect(retyped.message).toContain('the column "n" is INTEGER');
    expect(retyped.message).toContain('the data was mapped as NUMERIC. Nothing was imported.');
    expect((await apiError(() => tables.importCsv('in.c-b.t', file, { columns: ['n', 'gone'] }))).message).toContain('the table has no column "gone"');
    expect(await tables.importCsv('in.c-b.t', file, { columns: ['n', 'id'], types: { n: 'INTEGER' } })).toEqual({ inserted: 1, duplicate: false });
    expect((await tables.preview('in.c-b.t', 5)).rows).toEqual([['x', '5']]);
  });

  it('two concurrent ensureTable calls create the table once', async () => {
    const results = await Promise.all([
      tables.ensureTable('in.c-b.t', [{ name: 'a' }], { metadata: {} }),
      tables.ensureTable('in.c-b.t', [{ name: 'a' }], { metadata: {} }),
    ]);
    expect(results.map((r) => r.created).sort()).toEqual([false, true]);
  });

  it('rejects a bucket or table whose id differs from an existing one only in case', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'a' }], { metadata: {} });
    expect((await apiError(() => tables.ensureTable('in.c-B.x', [{ name: 'a' }], { metadata: {} }))).code).toBe('storage.buckets.alreadyExists');
    expect((await apiError(() => tables.ensureTable('in.c-b.T', [{ name: 'a' }], { metadata: {} }))).code).toBe('storage.tables.alreadyExists');
    expect((await tables.listBuckets()).map((b) => b.id)).toEqual(['in.c-b']);
    expect((await tables.listTables()).map((t) => t.id)).toEqual(['in.c-b.t']);
  });

  it('bad ids and columns are rejected before anything is created', async () => {
    expect((await apiError(() => tables.ensureTable('in.c-b', [{ name: 'a' }], { metadata: {} }))).code).toBe('storage.tables.validation');
    expect((await apiError(() => tables.ensureTable('in.c-b.t', [{ name: 'a' }, { name: 'a' }], { metadata: {} }))).code).toBe('storage.tables.validation');
    expect((await apiError(() => tables.ensureTable('in.c-b.t', [{ name: 'a' }, { name: '_timestamp' }], { metadata: {} }))).code).toBe('storage.tables.validation');
    expect(await tables.listBuckets()).toEqual([]);
  });

  it('insertRows appends rows that preview returns in insertion order, up to the limit', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'id' }, { name: 'text' }], { metadata: {} });
    await tables.insertRows('in.c-b.t', [['1', 'a,"quoted"\nline'], ['2', '']]);
    await tables.insertRows('in.c-b.t', [['3', 'ž']]);

    expect(await tables.preview('in.c-b.t', 10)).toEqual({
      columns: ['id', 'text'],
      rows: [['1', 'a,"quoted"\nline'], ['2', ''], ['3', 'ž']],
    });
    expect((await tables.preview('in.c-b.t', 2)).rows.map((r) => r[0])).toEqual(['1', '2']);
    const table = await tables.getTable('in.c-b.t');
    expect(table.rowsCount).toBe(3);
    expect(table.lastImportDate).not.toBeNull();
  });

  it('insertRows with a known import id writes nothing', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'id' }], { metadata: {} });
    expect(await tables.insertRows('in.c-b.t', [['1'], ['2']], { importId: 'imp-1' })).toEqual({ inserted: 2, duplicate: false });
    expect(await tables.insertRows('in.c-b.t', [['1'], ['2']], { importId: 'imp-1' })).toEqual({ inserted: 0, duplicate: true });
    expect(await target.rowCount('in.c-b.t')).toBe(2);
  });

  it('a row of the wrong length fails the whole insert', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'a' }, { name: 'b' }], { metadata: {} });
    const err = await apiError(() => tables.insertRows('in.c-b.t', [['1', '2'], ['3']]));
    expect(err.message).toContain('Row 1 has 1 values');
    expect(await target.rowCount('in.c-b.t')).toBe(0);
    // The adapter checks too, for callers that use the port directly.
    await expect(target.insertRows('in.c-b.t', [['1', '2'], ['3']])).rejects.toThrow(/row 1/);
    expect(await target.rowCount('in.c-b.t')).toBe(0);
  });

  it('importCsv loads a header-less CSV in one transaction, idempotently by import id', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'id' }, { name: 'body' }], { metadata: {} });
    const file = join(dir, 'slice.csv');
    writeFileSync(file, '"1","multi\nline"\n"2",""\n3,\n"4","say ""hi"""\n');
    expect(await tables.importCsv('in.c-b.t', file, { importId: 'file-1' })).toEqual({ inserted: 4, duplicate: false });
    expect(await tables.importCsv('in.c-b.t', file, { importId: 'file-1' })).toEqual({ inserted: 0, duplicate: true });
    expect((await tables.preview('in.c-b.t', 100)).rows).toEqual([
      ['1', 'multi\nline'], ['2', ''], ['3', ''], ['4', 'say "hi"'],
    ]);

    // A malformed file (a row with three fields) imports nothing and records no import id.
    const bad = join(dir, 'bad.csv');
    writeFileSync(bad, '"5","x"\n"6","y","z"\n');
    await expect(tables.importCsv('in.c-b.t', bad, { importId: 'file-2' })).rejects.toThrow();
    expect(await target.rowCount('in.c-b.t')).toBe(4);
    writeFileSync(bad, '"5","x"\n');
    expect(await tables.importCsv('in.c-b.t', bad, { importId: 'file-2' })).toEqual({ inserted: 1, duplicate: false });
  });

  it('importCsv keeps carriage returns inside values of files with "\\n" line ends (the slices)', async () => {
    await tables.ensureTable('in.c-b.cr', [{ name: 'id' }, { name: 'body' }], { metadata: {} });
    const file = join(dir, 'cr.csv');
    const rows = [['1', 'a\rb'], ['2', 'windows\r\nline'], ['3', 'ends\r'], ['4', 'plain']];
    writeFileSync(file, csvRows(rows));
    expect(await tables.importCsv('in.c-b.cr', file, { importId: 'cr', newlineOnly: true })).toEqual({ inserted: 4, duplicate: false });
    expect((await tables.preview('in.c-b.cr', 100)).rows).toEqual(rows);
  });

  it('importCsv reads rows ending in "\\r\\n" too (component output), unless told the files end rows with "\\n"', async () => {
    await tables.ensureTable('in.c-b.crlf', [{ name: 'id' }, { name: 'body' }], { metadata: {} });
    const file = join(dir, 'crlf.csv');
    writeFileSync(file, '1,a\r\n2,"b\r\nc"\r\n');
    expect(await tables.importCsv('in.c-b.crlf', file, { importId: 'crlf' })).toEqual({ inserted: 2, duplicate: false });
    expect((await tables.preview('in.c-b.crlf', 100)).rows).toEqual([['1', 'a'], ['2', 'b\r\nc']]);
  });

  it('importCsv loads a list of plain and gzipped files in one transaction', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'id' }, { name: 'body' }], { metadata: {} });
    const plain = join(dir, 'a.csv');
    const gz = join(dir, 'b.csv.gz');
    writeFileSync(plain, '"1","x"\n');
    writeFileSync(gz, gzipSync('2,"multi\nline"\n3,\n'));
    expect(await tables.importCsv('in.c-b.t', [plain, gz], { importId: 'f', expectedRows: 3 })).toEqual({ inserted: 3, duplicate: false });
    expect(await tables.importCsv('in.c-b.t', [plain, gz], { importId: 'f' })).toEqual({ inserted: 0, duplicate: true });
    expect((await tables.preview('in.c-b.t', 10)).rows).toEqual([['1', 'x'], ['2', 'multi\nline'], ['3', '']]);

    // One bad file of the list fails the whole import.
    const bad = join(dir, 'bad.csv.gz');
    writeFileSync(bad, gzipSync('4,a,b\n'));
    await expect(tables.importCsv('in.c-b.t', [plain, bad], { importId: 'g' })).rejects.toThrow();
    // Another row count than expected, or other columns than expected: nothing is written.
    await expect(tables.importCsv('in.c-b.t', [plain, gz], { importId: 'h', expectedRows: 2 })).rejects.toThrow(/3 rows, 2 were expected/);
    const mismatch = await apiError(() => tables.importCsv('in.c-b.t', [plain], { importId: 'i', columns: ['id', 'text'] }));
    expect(mismatch.code).toBe('tableSchemaMismatch');
    await expect(target.importCsv('in.c-b.t', [plain], { importId: 'i', columns: ['id', 'text'] })).rejects.toThrow(/do not match/);
    expect(await target.rowCount('in.c-b.t')).toBe(3);
    expect(await tables.importCsv('in.c-b.t', [plain], { importId: 'i', columns: ['id', 'body'] })).toEqual({ inserted: 1, duplicate: false });
    // An empty list writes nothing but records the import id.
    expect(await tables.importCsv('in.c-b.t', [], { importId: 'j' })).toEqual({ inserted: 0, duplicate: false });
    expect(await target.rowCount('in.c-b.t')).toBe(4);
  });

  it('getTable and preview of a missing table are 404 with the reference message', async () => {
    const err = await apiError(() => tables.getTable('in.c-x.y'));
    expect(err.statusCode).toBe(404);
    expect(err.code).toBe('storage.tables.notFound');
    expect(err.message).toBe('The table "in.c-x.y" was not found in the bucket "in.c-x" in the project "7"');
    expect((await apiError(() => tables.preview('in.c-x.y', 1))).code).toBe('storage.tables.notFound');
    expect((await apiError(() => tables.getBucket('in.c-x'))).code).toBe('storage.buckets.notFound');
  });

  it('dropTable removes the table and its rows; a new table of that id starts empty', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'a' }], { metadata: {} });
    await tables.insertRows('in.c-b.t', [['1']], { importId: 'i' });
    expect(await tables.dropTable('in.c-b.t')).toBe(true);
    expect(await tables.dropTable('in.c-b.t')).toBe(false);
    expect(await tables.findTable('in.c-b.t')).toBeUndefined();
    // The bucket stays.
    expect((await tables.listBuckets()).map((b) => b.id)).toEqual(['in.c-b']);

    await tables.ensureTable('in.c-b.t', [{ name: 'x' }, { name: 'y' }], { metadata: {} });
    expect((await tables.getTable('in.c-b.t')).columns).toEqual(['x', 'y']);
    expect((await tables.preview('in.c-b.t', 10)).rows).toEqual([]);
    // Import ids of the dropped table are forgotten with it.
    expect(await tables.insertRows('in.c-b.t', [['1', '2']], { importId: 'i' })).toEqual({ inserted: 1, duplicate: false });
  });

  it('dropBucket removes the bucket with its tables and leaves other buckets alone', async () => {
    await tables.ensureTable('in.c-a.t1', [{ name: 'a' }], { metadata: {} });
    await tables.ensureTable('in.c-a.t2', [{ name: 'a' }], { metadata: {} });
    await tables.ensureTable('out.c-keep.t', [{ name: 'a' }], { metadata: {} });
    expect(await tables.dropBucket('in.c-a')).toBe(true);
    expect(await tables.dropBucket('in.c-a')).toBe(false);
    expect((await tables.listBuckets()).map((b) => b.id)).toEqual(['out.c-keep']);
    expect((await tables.listTables()).map((t) => t.id)).toEqual(['out.c-keep.t']);
    expect((await apiError(() => tables.listTables('in.c-a'))).code).toBe('storage.buckets.notFound');
  });

  it('keeps buckets, tables, rows and metadata across a reopen', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'a' }], { metadata: { key: 'value' } });
    await tables.insertRows('in.c-b.t', [['1']]);
    await target.close();
    target = await reopen();
    tables = new TableService(target, 7);
    expect(await tables.getTable('in.c-b.t')).toMatchObject({ columns: ['a'], rowsCount: 1, metadata: { key: 'value' } });
  });
});

describe.each(TARGETS)('%s identifiers', (kind) => {
  it('quotes schema, table and column names that contain quotes, dots, unicode and SQL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-target-'));
    const { target } = await servers.open(kind, dir);
    try {
      await target.createBucket({ id: 'in.c-we"ird', stage: 'in', name: 'c-we"ird' });
      await target.createTable({ id: 'in.c-we"ird.t"; DROP', bucketId: 'in.c-we"ird', name: 't"; DROP', columns: ['a"b', 'c.d'] });
      await target.insertRows('in.c-we"ird.t"; DROP', [['1', '2']]);
      expect((await target.getTable('in.c-we"ird.t"; DROP'))?.columns).toEqual(['a"b', 'c.d']);
      expect(await target.preview('in.c-we"ird.t"; DROP', 5)).toEqual([['1', '2']]);
      // Unicode, and names longer than PostgreSQL's 63 bytes: two of them differ only at the end.
      const long = 'ř'.repeat(40);
      await target.createBucket({ id: `in.c-${long}`, stage: 'in', name: `c-${long}` });
      for (const suffix of ['1', '2']) {
        await target.createTable({ id: `in.c-${long}.${long}${suffix}`, bucketId: `in.c-${long}`, name: `${long}${suffix}`, columns: [`${long}a`, `${long}b`] });
        await target.insertRows(`in.c-${long}.${long}${suffix}`, [[suffix, 'ž']]);
      }
      expect((await target.getTable(`in.c-${long}.${long}2`))?.columns).toEqual([`${long}a`, `${long}b`]);
      expect(await target.preview(`in.c-${long}.${long}1`, 5)).toEqual([['1', 'ž']]);
      expect(await target.preview(`in.c-${long}.${long}2`, 5)).toEqual([['2', 'ž']]);
      expect(await target.dropBucket('in.c-we"ird')).toBe(true);
      expect(await target.dropBucket(`in.c-${long}`)).toBe(true);
      expect(await target.listTables()).toEqual([]);
    } finally {
      await target.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
