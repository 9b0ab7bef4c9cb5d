/**
 * Typed columns, primary keys and mappings that grow, over HTTP on both targets: what a sink's
 * mapping asks for is what the table has (native types, a key that upserts, columns added), a
 * value that does not convert is a mapping failure that reprocessing writes once the mapping is
 * fixed, and a change the table cannot take is a 400 that changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';
import { TARGETS, targetServers } from '../helpers/targets.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '300ms'];

type Columns = Record<string, unknown>[];

async function source(name: string): Promise<string> {
  expect((await svc.task('POST', `${B()}/sources`, { json: { name, type: 'http' } })).status).toBe('success');
  return svc.ingestPath(name.toLowerCase());
}

/** A sink whose files are imported as soon as they hold `importCount` records (uploads after 1 s). */
async function sink(sourceId: string, sinkId: string, tableId: string, columns: Columns, importCount = 1): Promise<void> {
  const task = await svc.task('POST', `${B()}/sources/${sourceId}/sinks`, { json: { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId, mapping: { columns } } } });
  expect(task.status, task.error).toBe('success');
  const settings = [
    { key: 'storage.level.staging.upload.trigger.interval', value: '1s' },
    { key: 'storage.level.target.import.trigger.count', value: importCount },
  ];
  expect((await svc.task('PATCH', `${B()}/sources/${sourceId}/sinks/${sinkId}/settings`, { json: { settings } })).status).toBe('success');
}

async function post(path: string, body: string): Promise<void> {
  const res = await svc.call('POST', path, { token: null, body });
  expect(res.status).toBe(200);
}

/** One value of a read-only SQL query (the first column of the first row). */
async function sql(query: string): Promise<unknown> {
  const res = await svc.call('POST', '/v2/storage/sql', { json: { query } });
  expect(res.status, res.text).toBe(200);
  return res.json.rows[0]?.[0];
}

/** Rows of the table that pass `where`. */
async function count(table: string, where: string): Promise<number> {
  return Number(await sql(`SELECT count(*) FROM ${table} WHERE ${where}`));
}

/** Waits until the table has `n` rows (by SQL). */
async function rows(table: string, n: number): Promise<void> {
  await svc.until(`${n} rows in ${table}`, async () => ((await count(table, 'true')) >= n ? true : undefined), 20_000);
}

/** The table's columns as [name, base type or "untyped"], as the target has them. */
async function columnTypes(tableId: string): Promise<Array<[string, string]>> {
  const table = await svc.server.services.tables.getTable(tableId);
  return table.definitions.map((d) => [d.name, d.type ?? 'untyped']);
}

async function sinkTotal(sourceId: string, sinkId: string): Promise<{ total: number; imported: number }> {
  const s = (await svc.call('GET', `${B()}/sources/${sourceId}/sinks/${sinkId}/statistics/total`)).json;
  return { total: s.total.recordsCount, imported: s.levels?.target?.recordsCount ?? 0 };
}

const servers = targetServers();

describe.each(TARGETS)('typed tables on %s', (kind) => {
  beforeAll(async () => {
    svc = await TestService.start({ args: [...FAST, ...(await servers.location(kind)).args] });
  }, POSTGRES_START_TIMEOUT_MS);
  afterAll(async () => {
    await svc.close();
  });

  it('lands typed values with native types; a missing value or null is NULL, an empty string stays one', async () => {
    const path = await source('Typed');
    const table = '"in.c-typed"."events"';
    await sink('typed', 'events', 'in.c-typed.events', [
      { type: 'path', name: 'id', path: 'id', rawString: true },
      { type: 'path', name: 'n', path: 'n', dataType: 'INTEGER' },
      { type: 'path', name: 'price', path: 'price', dataType: 'NUMERIC' },
      { type: 'path', name: 'ratio', path: 'ratio', dataType: 'FLOAT' },
      { type: 'path', name: 'ok', path: 'ok', dataType: 'BOOLEAN' },
      { type: 'path', name: 'day', path: 'day', dataType: 'DATE' },
      { type: 'path', name: 'at', path: 'at', dataType: 'TIMESTAMP' },
      { type: 'path', name: 'doc', path: 'doc', dataType: 'JSON' },
      { type: 'path', name: 'note', path: 'note', dataType: 'STRING' },
      { type: 'datetime', name: 'received', dataType: 'TIMESTAMP' },
      { type: 'body', name: 'body', dataType: 'JSON' },
    ], 3);
    expect(await columnTypes('in.c-typed.events')).toEqual([
      ['id', 'untyped'], ['n', 'INTEGER'], ['price', 'NUMERIC'], ['ratio', 'FLOAT'], ['ok', 'BOOLEAN'], ['day', 'DATE'],
      ['at', 'TIMESTAMP'], ['doc', 'JSON'], ['note', 'STRING'], ['received', 'TIMESTAMP'], ['body', 'JSON'],
    ]);
    // 2^53 + 1 does not survive a double: the body's text reaches the BIGINT as sent.
    await post(path, '{"id":"full","n":9007199254740993,"price":"12345678901234567890.123456789","ratio":0.25,"ok":"true",' +
      '"day":"2026-11-27","at":"2026-11-27T02:02:03.456789+01:00","doc":{"a":[1,"x"]},"note":"hello, \\"world\\"\\n"}');
    await post(path, '{"id":"empty","note":""}');
    await post(path, '{"id":"nulls","n":null,"price":null,"ratio":null,"ok":null,"day":null,"at":null,"doc":null,"note":null}');
    await rows(table, 3);

    expect(await count(table, "id = 'full' AND n = 9007199254740993 AND n + 1 = 9007199254740994 AND price = 12345678901234567890.123456789" +
      " AND ratio * 4 = 1 AND ok AND day = DATE '2026-11-27' AND day + 1 = DATE '2026-11-28'" +
      // "at" is a keyword of DuckDB's grammar (AT TIME ZONE): quoted.
      ' AND "at" = CAST(\'2026-11-27 01:02:03.456789+00\' AS TIMESTAMPTZ)' +
      // The JSON operators bind loosely in DuckDB: parenthesised.
      " AND (doc->'a'->>1) = 'x' AND note = 'hello, \"world\"' || chr(10)" +
      " AND received IS NOT NULL AND (body->>'id') = 'full'")).toBe(1);
    const allNull = 'n IS NULL AND price IS NULL AND ratio IS NULL AND ok IS NULL AND day IS NULL AND "at" IS NULL AND doc IS NULL';
    expect(await count(table, `id = 'empty' AND ${allNull} AND note = ''`)).toBe(1);
    expect(await count(table, `id = 'nulls' AND ${allNull} AND note IS NULL`)).toBe(1);
    expect((await svc.call('GET', `${B()}/sources/typed/sinks/events/failures`)).json.count).toBe(0);
  });

  it('keeps a value that does not convert as a failure naming column, value and type; reprocessing after a fix writes it', async () => {
    const path = await source('Amounts');
    const table = '"in.c-amounts"."a"';
    await sink('amounts', 'a', 'in.c-amounts.a', [
      { type: 'path', name: 'id', path: 'id', rawString: true },
      { type: 'path', name: 'amount', path: 'amount', dataType: 'INTEGER' },
    ]);
    await post(path, '{"id":"bad","amount":"12.5"}');
    await post(path, '{"id":"good","amount":3}');
    await rows(table, 1);
    const failures = (await svc.call('GET', `${B()}/sources/amounts/sinks/a/failures`)).json;
    expect(failures.count).toBe(1);
    expect(failures.failures[0].reason).toBe('Invalid value for column "amount": "12.5" is not an INTEGER (a whole number within 64 bits, as a number or a string).');

    // The fix: a template that rounds what comes as a string. The column's type stays INTEGER.
    const fixed = await svc.task('PATCH', `${B()}/sources/amounts/sinks/a`, {
      json: { table: { mapping: { columns: [
        { type: 'path', name: 'id', path: 'id', rawString: true },
        { type: 'template', name: 'amount', dataType: 'INTEGER', template: { language: 'jsonnet', content: 'local a = Body("amount"); if std.isString(a) then std.round(std.parseJson(a)) else a' } },
      ] } } },
    });
    expect(fixed.status, fixed.error).toBe('success');
    const reprocessed = await svc.call('POST', `${B()}/sources/amounts/sinks/a/failures/reprocess`);
    expect(reprocessed.json).toEqual({ reprocessed: 1, failed: 0 });
    await rows(table, 2);
    expect(await count(table, "(id = 'bad' AND amount = 13) OR (id = 'good' AND amount = 3)")).toBe(2);
  });

  it('upserts by a key from the event: a client\'s retries and later versions of a record leave one row each', async () => {
    const path = await source('Orders');
    const table = '"in.c-orders"."o"';
    await sink('orders', 'o', 'in.c-orders.o', [
      { type: 'path', name: 'id', path: 'id', dataType: 'STRING', primaryKey: true },
      { type: 'path', name: 'state', path: 'state', rawString: true },
      { type: 'path', name: 'total', path: 'total', dataType: 'NUMERIC' },
    ], 4);
    expect((await svc.server.services.tables.getTable('in.c-orders.o')).primaryKey).toEqual(['id']);
    // One file of four records: a retry of o1 and a later state of o2 in the same import.
    for (const body of ['{"id":"o1","state":"new","total":10}', '{"id":"o2","state":"new","total":20}', '{"id":"o1","state":"new","total":10}', '{"id":"o2","state":"paid","total":20}']) {
      await post(path, body);
    }
    await svc.until('the first file imported', async () => ((await sinkTotal('orders', 'o')).imported === 4 ? true : undefined), 20_000);
    expect(await count(table, 'true')).toBe(2);
    // A second file: a later state across files replaces the row, a new key adds one.
    for (const body of ['{"id":"o1","state":"shipped","total":10}', '{"id":"o3","state":"new","total":5.5}', '{"id":"o3","state":"new","total":5.5}', '{"id":"o1","state":"done","total":10}']) {
      await post(path, body);
    }
    await svc.until('the second file imported', async () => ((await sinkTotal('orders', 'o')).imported === 8 ? true : undefined), 20_000);
    expect(await count(table, 'true')).toBe(3);
    expect(await count(table, "(id = 'o1' AND state = 'done') OR (id = 'o2' AND state = 'paid') OR (id = 'o3' AND total = 5.5)")).toBe(3);
  });

  it('a record without its key is a failure', async () => {
    const path = await source('Keyless');
    await sink('keyless', 'k', 'in.c-keyless.k', [{ type: 'path', name: 'id', path: 'id', dataType: 'INTEGER', primaryKey: true }, { type: 'body', name: 'body' }]);
    await post(path, '{"other":1}');
    const failures = await svc.until('a failure', async () => {
      const f = (await svc.call('GET', `${B()}/sources/keyless/sinks/k/failures`)).json;
      return f.count > 0 ? f.failures : undefined;
    });
    expect(failures[0].reason).toBe('Invalid value for column "id": the column is part of the primary key and has no value.');
  });

  it('grows the table with the mapping: new columns are added (old rows, and a file mapped before, NULL or \'\'), removed ones stay', async () => {
    const path = await source('Grow');
    const table = '"in.c-grow"."g"';
    // Files wait for 1000 records: the first one is still waiting when the mapping grows.
    await sink('grow', 'g', 'in.c-grow.g', [{ type: 'path', name: 'id', path: 'id', rawString: true }], 1000);
    await post(path, '{"id":"old","n":1,"tag":"x"}');
    await svc.until('the record written', async () => ((await sinkTotal('grow', 'g')).total === 1 ? true : undefined));

    const grown = await svc.task('PATCH', `${B()}/sources/grow/sinks/g`, {
      json: { table: { mapping: { columns: [
        { type: 'path', name: 'id', path: 'id', rawString: true },
        { type: 'path', name: 'n', path: 'n', dataType: 'INTEGER' },
        { type: 'path', name: 'tag', path: 'tag', rawString: true },
      ] } } },
    });
    expect(grown.status, grown.error).toBe('success');
    expect(await columnTypes('in.c-grow.g')).toEqual([['id', 'untyped'], ['n', 'INTEGER'], ['tag', 'untyped']]);
    // The file mapped before the change rotates and is imported into the grown table: its rows
    // read NULL and '' in the columns it does not have.
    await rows(table, 1);
    expect(await count(table, "id = 'old' AND n IS NULL AND tag = ''")).toBe(1);
    const settings = [{ key: 'storage.level.target.import.trigger.count', value: 1 }];
    expect((await svc.task('PATCH', `${B()}/sources/grow/sinks/g/settings`, { json: { settings } })).status).toBe('success');
    await post(path, '{"id":"new","n":2,"tag":"y"}');
    await rows(table, 2);
    expect(await count(table, "id = 'new' AND n = 2 AND tag = 'y'")).toBe(1);

    // Taken out of the mapping: the column stays, written '' (untyped) from then on.
    const shrunk = await svc.task('PATCH', `${B()}/sources/grow/sinks/g`, {
      json: { table: { mapping: { columns: [{ type: 'path', name: 'id', path: 'id', rawString: true }, { type: 'path', name: 'n', path: 'n', dataType: 'INTEGER' }] } } },
    });
    expect(shrunk.status, shrunk.error).toBe('success');
    await post(path, '{"id":"later","n":3,"tag":"z"}');
    await rows(table, 3);
    expect(await count(table, "id = 'later' AND n = 3 AND tag = ''")).toBe(1);
    expect(await columnTypes('in.c-grow.g')).toEqual([['id', 'untyped'], ['n', 'INTEGER'], ['tag', 'untyped']]);
  });

  it('refuses a type or key change with a 400 naming the column, and changes nothing', async () => {
    await source('Fixed');
    await sink('fixed', 'f', 'in.c-fixed.f', [{ type: 'path', name: 'id', path: 'id', rawString: true }, { type: 'path', name: 'n', path: 'n', dataType: 'INTEGER' }]);
    const before = (await svc.call('GET', `${B()}/sources/fixed/sinks/f`)).json;
    const patch = (columns: Columns) => svc.call('PATCH', `${B()}/sources/fixed/sinks/f`, { json: { table: { mapping: { columns } } } });

    const typeChange = await patch([{ type: 'path', name: 'id', path: 'id', rawString: true }, { type: 'path', name: 'n', path: 'n', dataType: 'STRING' }, { type: 'uuid', name: 'extra' }]);
    expect(typeChange.status).toBe(400);
    expect(typeChange.json.error).toBe('stream.api.tableSchemaMismatch');
    expect(typeChange.json.message).toMatch(/^The column "n" of the table "in.c-fixed.f" is INTEGER \(\w+\) and the mapping asks for STRING/);

    const keyChange = await patch([{ type: 'path', name: 'id', path: 'id', rawString: true, primaryKey: true }, { type: 'path', name: 'n', path: 'n', dataType: 'INTEGER' }]);
    expect(keyChange.status).toBe(400);
    expect(keyChange.json.message).toContain('The primary key of the table "in.c-fixed.f" is none and the mapping asks for (id) (the columns "id")');

    // Taken out earlier and brought back with another type: the table still has it.
    await svc.task('PATCH', `${B()}/sources/fixed/sinks/f`, { json: { table: { mapping: { columns: [{ type: 'path', name: 'id', path: 'id', rawString: true }] } } } });
    const back = await patch([{ type: 'path', name: 'id', path: 'id', rawString: true }, { type: 'path', name: 'n', path: 'n', dataType: 'DATE' }]);
    expect(back.status).toBe(400);
    expect(back.json.message).toContain('The column "n"');

    const after = (await svc.call('GET', `${B()}/sources/fixed/sinks/f`)).json;
    expect(after.version.number).toBe(before.version.number + 1);
    expect(await columnTypes('in.c-fixed.f')).toEqual([['id', 'untyped'], ['n', 'INTEGER']]);
    // A rollback to the version with n INTEGER is fine; the table has it so.
    expect((await svc.task('PUT', `${B()}/sources/fixed/sinks/f/versions/${before.version.number}/rollback`)).status).toBe('success');
  });

  it('refuses a type that makes no sense for the column and a key on a body, with the Stream API\'s 400', async () => {
    await source('Nonsense');
    const create = (columns: Columns) => svc.call('POST', `${B()}/sources/nonsense/sinks`, {
      json: { sinkId: 's', name: 's', type: 'table', table: { type: 'keboola', tableId: 'in.c-nonsense.s', mapping: { columns } } },
    });
    const cases: Array<[Columns, string]> = [
      [[{ type: 'uuid', name: 'id', dataType: 'INTEGER' }], 'Column "id" of type "uuid" cannot have the dataType "INTEGER": its values are STRING.'],
      [[{ type: 'body', name: 'b', primaryKey: true }], 'Column "b" of type "body" cannot be part of the primary key'],
      [[{ type: 'path', name: 'd', path: 'd', dataType: 'JSON', primaryKey: true }], 'Column "d" of dataType "JSON" cannot be part of the primary key'],
      [[{ type: 'path', name: 'n', path: 'n', dataType: 'INTEGER', defaultValue: 'zero' }], 'Column "n" defaultValue is invalid: "zero" is not an INTEGER'],
      [[{ type: 'path', name: 'n', path: 'n', dataType: 'BIGINT' }], 'Value of body.table.mapping.columns[0].dataType must be one of'],
    ];
    for (const [columns, message] of cases) {
      const res = await create(columns);
      expect(res.status).toBe(400);
      expect(res.json.message).toContain(message);
    }
    expect((await svc.call('GET', `${B()}/sources/nonsense/sinks`)).json.sinks).toEqual([]);
    expect(await svc.server.services.tables.findTable('in.c-nonsense.s')).toBeUndefined();
  });

  it('echoes dataType and primaryKey only when set', async () => {
    await source('Echo');
    await sink('echo', 'e', 'in.c-echo.e', [
      { type: 'path', name: 'id', path: 'id', dataType: 'INTEGER', primaryKey: true },
      { type: 'path', name: 'v', path: 'v', primaryKey: false },
      { type: 'datetime', name: 'at', dataType: 'TIMESTAMP' },
      { type: 'body', name: 'body' },
    ]);
    expect((await svc.call('GET', `${B()}/sources/echo/sinks/e`)).json.table.mapping.columns).toEqual([
      { type: 'path', name: 'id', path: 'id', rawString: false, dataType: 'INTEGER', primaryKey: true },
      { type: 'path', name: 'v', path: 'v', rawString: false },
      { type: 'datetime', name: 'at', dataType: 'TIMESTAMP' },
      { type: 'body', name: 'body' },
    ]);
  });

  it('fails the import with the reason when the table was changed behind Sluice\'s back, and imports once it is right', async () => {
    const path = await source('Behind');
    await sink('behind', 'b', 'in.c-behind.b', [{ type: 'path', name: 'n', path: 'n', dataType: 'INTEGER' }]);
    const tables = svc.server.services.tables;
    await tables.dropTable('in.c-behind.b');
    await tables.ensureTable('in.c-behind.b', [{ name: 'n' }], { metadata: {} });
    await post(path, '{"n":1}');
    const failed = await svc.until('a failed file', async () => {
      const files = (await svc.call('GET', `${B()}/sources/behind/sinks/b/statistics/files?failedFiles=true`)).json.files;
      return files.length > 0 ? files[0] : undefined;
    }, 20_000);
    expect(failed.retryReason).toMatch(/"n"/);
    expect(failed.retryReason).toMatch(/INTEGER/);
    await tables.dropTable('in.c-behind.b');
    await tables.ensureTable('in.c-behind.b', [{ name: 'n', type: 'INTEGER' }], { metadata: {} });
    await rows('"in.c-behind"."b"', 1);
    expect(await count('"in.c-behind"."b"', 'n = 1')).toBe(1);
  });
});
