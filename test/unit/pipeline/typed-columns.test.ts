import { describe, expect, it } from 'vitest';
import type { Column } from '../../../src/model/definition.js';
import type { IngestRecord } from '../../../src/model/record.js';
import { SluiceTemplateEngine } from '../../../src/adapters/jsonnet/sluice-engine.js';
import { BatchRenderer } from '../../../src/pipeline/batch-render.js';
import { compileMapping, createRecordContext, MappingError, validateMapping } from '../../../src/pipeline/columns/index.js';

const RECEIVED = new Date('2026-11-27T01:02:03.456Z');
const engine = new SluiceTemplateEngine();

function record(body: string, contentType = 'application/json'): IngestRecord {
  return { receivedAt: RECEIVED, ip: '10.0.0.1', headers: { 'Content-Type': contentType, 'X-Id': 'a' }, body: Buffer.from(body), signal: '' };
}

async function row(columns: Column[], body: string, contentType?: string): Promise<Array<string | null>> {
  return (await compileMapping(columns, engine)).render(createRecordContext(record(body, contentType)));
}

async function failure(columns: Column[], body: string, contentType?: string): Promise<MappingError> {
  const err = await row(columns, body, contentType).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(MappingError);
  return err as MappingError;
}

/** The CSV the sink's slice gets for these bodies. */
async function csv(columns: Column[], bodies: string[]): Promise<{ csv: string; failures: string[] }> {
  const [rendered] = await new BatchRenderer(engine).render(bodies.map((b, i) => ({ offset: i + 1, record: record(b) })), [{ columns, after: 0 }]);
  return { csv: Buffer.from(rendered.csv).toString('utf8'), failures: rendered.failures.map((f) => f.reason) };
}

const path = (name: string, p: string, extra: Partial<Column> = {}): Column => ({ type: 'path', name, path: p, ...extra });
const template = (name: string, content: string, extra: Partial<Column> = {}): Column => ({ type: 'template', name, template: { language: 'jsonnet', content }, ...extra });

describe('typed path columns', () => {
  it('convert the value at the path, and write NULL for a missing value or a JSON null', async () => {
    const columns = [path('n', 'n', { dataType: 'INTEGER' }), path('when', 'at', { dataType: 'TIMESTAMP' }), path('ok', 'ok', { dataType: 'BOOLEAN' })];
    expect(await row(columns, '{"n":"12","at":"2026-11-27T02:00:00+01:00","ok":true}')).toEqual(['12', '2026-11-27T01:00:00.000Z', 'true']);
    expect(await row(columns, '{"n":null}')).toEqual([null, null, null]);
  });

  it('convert the default when the path is missing', async () => {
    expect(await row([path('n', 'n', { dataType: 'INTEGER', defaultValue: '0' })], '{}')).toEqual(['0']);
    expect(await row([path('s', 's', { dataType: 'STRING', defaultValue: '' })], '{}')).toEqual(['']);
  });

  it('read a form body\'s strings', async () => {
    expect(await row([path('n', 'n', { dataType: 'NUMERIC' }), path('b', 'b', { dataType: 'BOOLEAN' })], 'n=1.50&b=false', 'application/x-www-form-urlencoded')).toEqual(['1.5', 'false']);
  });

  it('STRING writes a string as it is and other values as JSON, rawString or not', async () => {
    const columns = [path('a', 'a', { dataType: 'STRING' }), path('b', 'b', { dataType: 'STRING', rawString: true }), path('c', 'c', { dataType: 'STRING' })];
    expect(await row(columns, '{"a":"x\\"y","b":"z","c":{"k":[1,2.0]}}')).toEqual(['x"y', 'z', '{"k":[1,2.0]}']);
  });

  it('fail the record with the column, the value and the type', async () => {
    const err = await failure([path('id', 'id'), path('amount', 'amount', { dataType: 'INTEGER' })], '{"id":"a","amount":"abc"}');
    expect(err.message).toBe('Invalid value for column "amount": "abc" is not an INTEGER (a whole number within 64 bits, as a number or a string).');
    expect(err.column).toBe('amount');
    expect(err.kind).toBe('conversion');
    expect((await failure([path('d', 'd', { dataType: 'DATE' })], '{"d":"2026-13-01"}')).message).toContain('"2026-13-01" is not a DATE');
    expect((await failure([path('x', 'x', { dataType: 'NUMERIC' })], '{"x":{"a":1}}')).message).toContain('{"a":1} is not a NUMERIC');
    expect((await failure([path('i', 'i', { dataType: 'INTEGER' })], '{"i":1.5}')).message).toContain('1.5 is not an INTEGER');
  });

  it('fail a body that cannot be read, as untyped columns do', async () => {
    expect((await failure([path('n', 'n', { dataType: 'INTEGER' })], '{not json')).kind).toBe('invalidBody');
  });
});

describe('typed template columns', () => {
  it('convert the template\'s result; null is NULL', async () => {
    const columns = [
      template('twice', 'Body("n") * 2', { dataType: 'INTEGER' }),
      template('half', 'Body("n") / 4', { dataType: 'FLOAT' }),
      template('obj', '{ b: Body("n"), a: [true, null] }', { dataType: 'JSON' }),
      template('none', 'null', { dataType: 'DATE' }),
      template('nothing', 'null', { dataType: 'JSON' }),
      template('text', '"n=" + Body("n")', { dataType: 'STRING' }),
    ];
    expect(await row(columns, '{"n":21}')).toEqual(['42', '5.25', '{"a":[true,null],"b":21}', null, null, 'n=21']);
  });

  it('fail the record when the result does not convert, naming the column', async () => {
    const err = await failure([template('id', '"x"'), template('ratio', 'Body("n") / 2', { dataType: 'INTEGER' })], '{"n":3}');
    expect(err.message).toBe('Invalid value for column "ratio": 1.5 is not an INTEGER (a whole number within 64 bits, as a number or a string).');
  });
});

describe('typed built-in columns', () => {
  it('datetime TIMESTAMP writes the receive time; headers and body JSON write JSON', async () => {
    const columns: Column[] = [
      { type: 'datetime', name: 'at', dataType: 'TIMESTAMP' },
      { type: 'headers', name: 'h', dataType: 'JSON' },
      { type: 'body', name: 'b', dataType: 'JSON' },
      { type: 'body', name: 'raw', dataType: 'STRING' },
      { type: 'ip', name: 'ip', dataType: 'STRING' },
    ];
    expect(await row(columns, '{ "z": 1, "a": [1.0] }')).toEqual([
      '2026-11-27T01:02:03.456Z', '{"Content-Type":"application/json","X-Id":"a"}', '{"z":1,"a":[1.0]}', '{ "z": 1, "a": [1.0] }', '10.0.0.1',
    ]);
  });

  it('body JSON: a form body as its object, an empty body NULL, a bad body a failure', async () => {
    const body: Column[] = [{ type: 'body', name: 'b', dataType: 'JSON' }];
    expect(await row(body, 'a=1&b=x', 'application/x-www-form-urlencoded')).toEqual(['{"a":"1","b":"x"}']);
    expect(await row(body, '')).toEqual([null]);
    expect((await failure(body, '{"a":')).kind).toBe('invalidBody');
  });
});

describe('primary key columns', () => {
  it('need a value: a missing or null key fails the record', async () => {
    const columns = [path('id', 'id', { dataType: 'INTEGER', primaryKey: true }), path('v', 'v')];
    expect(await row(columns, '{"id":7,"v":1}')).toEqual(['7', '1']);
    for (const body of ['{"v":1}', '{"id":null,"v":1}']) {
      const err = await failure(columns, body);
      expect(err.message).toBe('Invalid value for column "id": the column is part of the primary key and has no value.');
    }
    expect((await failure([template('k', 'null', { dataType: 'STRING', primaryKey: true })], '{}')).column).toBe('k');
  });

  it('an untyped key column fails on a missing path as an untyped column does', async () => {
    expect((await failure([path('id', 'id', { primaryKey: true })], '{}')).message).toBe('Invalid value for column "id": path "id" not found in the body.');
  });

  it('refuse a key value too long to be indexed, sharing the bound between the key\'s columns', async () => {
    const one = [path('id', 'id', { primaryKey: true, rawString: true })];
    expect(await row(one, JSON.stringify({ id: 'é'.repeat(1000) }))).toEqual(['é'.repeat(1000)]);
    const err = await failure(one, JSON.stringify({ id: 'é'.repeat(1001) }));
    expect(err.message).toBe('Invalid value for column "id": the column is part of the primary key and its value has 2002 bytes, more than the 2000 a key column may hold.');
    const two = [...one, path('at', 'at', { primaryKey: true, dataType: 'TIMESTAMP' })];
    expect((await failure(two, JSON.stringify({ id: 'x'.repeat(1001), at: 0 }))).message).toContain('more than the 1000 a key column may hold');
  });
});

describe('the CSV of typed rows', () => {
  it('writes NULL as an empty field and an empty string as "" in typed columns, untyped columns as before', async () => {
    const columns = [path('u', 'u', { defaultValue: '', rawString: true }), path('s', 's', { dataType: 'STRING' }), path('n', 'n', { dataType: 'INTEGER' })];
    const out = await csv(columns, ['{"s":"","n":null}', '{"u":"a,b","s":"x","n":"5"}']);
    expect(out.failures).toEqual([]);
    expect(out.csv).toBe(',"",\n"a,b",x,5\n');
  });

  it('keeps a record that does not convert out of the slice, as a failure', async () => {
    const out = await csv([path('n', 'n', { dataType: 'INTEGER' })], ['{"n":1}', '{"n":"one"}', '{"n":3}']);
    expect(out.csv).toBe('1\n3\n');
    expect(out.failures).toEqual(['Invalid value for column "n": "one" is not an INTEGER (a whole number within 64 bits, as a number or a string).']);
  });

  it('writes untyped mappings byte for byte as before', async () => {
    const columns = [path('a', 'a', { defaultValue: '', rawString: true }), path('b', 'b'), { type: 'body', name: 'body' } as Column];
    expect((await csv(columns, ['{"b":""}'])).csv).toBe(',"""""","{""b"":""""}"\n');
  });
});

describe('validateMapping', () => {
  it('refuses a typed default that does not convert, naming the column', async () => {
    expect(await validateMapping([path('n', 'n', { dataType: 'INTEGER', defaultValue: 'none' })], engine))
      .toBe('Column "n" defaultValue is invalid: "none" is not an INTEGER (a whole number within 64 bits, as a number or a string)');
    expect(await validateMapping([path('n', 'n', { dataType: 'INTEGER', defaultValue: '-1' })], engine)).toBeUndefined();
  });
});
