import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Column } from '../../../src/model/definition.js';
import type { IngestRecord } from '../../../src/model/record.js';
import { LibjsonnetEngine } from '../../support/libjsonnet-engine.js';
import {
  JsonNumber,
  JsonObject,
  MappingError,
  bodyFormat,
  compileMapping,
  createRecordContext,
  lookupPath,
  parseBody,
  parseJson,
  parsePath,
  stringifyJson,
  strftime,
  testEndpointIp,
  normalizeIp,
  toPlain,
  DEFAULT_NOW_FORMAT,
} from '../../../src/pipeline/columns/index.js';
import { parseForm } from '../../../src/pipeline/columns/form.js';
import { compilePathColumn, renderPath, renderUuid } from '../../../src/pipeline/columns/renderers.js';
import { TEST_ENDPOINT_OMITTED_HEADERS, headersFromRaw } from '../../../src/pipeline/headers.js';
import { pathToFileURL } from 'node:url';
import { conformanceFound, conformanceMissing, sharedPath } from '../../helpers/shared-dir.js';

const RECEIVED = new Date('2024-01-02T03:04:05.678Z'); // a Tuesday

function record(body: string, contentType: string | undefined = 'application/json', extra: Record<string, string> = {}): IngestRecord {
  const headers: Record<string, string> = { ...extra };
  if (contentType !== undefined) headers['Content-Type'] = contentType;
  return { receivedAt: RECEIVED, ip: '1.2.3.4', headers, body: Buffer.from(body), signal: '' };
}

function ctxOf(body: string, contentType?: string): ReturnType<typeof createRecordContext> {
  return createRecordContext(record(body, contentType));
}

function path(body: string, p: string, opts: { defaultValue?: string; rawString?: boolean; contentType?: string } = {}): string {
  return renderPath(
    createRecordContext(record(body, opts.contentType ?? 'application/json')),
    compilePathColumn({ path: p, defaultValue: opts.defaultValue, rawString: opts.rawString }),
  );
}

function pathError(body: string, p: string, contentType = 'application/json'): MappingError {
  try {
    path(body, p, { contentType });
  } catch (e) {
    expect(e).toBeInstanceOf(MappingError);
    return e as MappingError;
  }
  throw new Error('expected a MappingError');
}

describe('JSON body values', () => {
  it('keeps key order, integer-like keys included, and the text of numbers', () => {
    const v = parseJson('{"b":1,"10":2,"a":{"x":1.0,"y":12345678901234567890,"z":-0,"w":1e5}}');
    expect(stringifyJson(v)).toBe('{"b":1,"10":2,"a":{"x":1.0,"y":12345678901234567890,"z":-0,"w":1e5}}');
  });

  it('compacts whitespace and re-escapes strings', () => {
    expect(stringifyJson(parseJson(' { "a" : [ 1 , "x\\u0041\\n\\"" , true , null ] } '))).toBe('{"a":[1,"xA\\n\\"",true,null]}');
  });

  it('decodes escapes and surrogate pairs', () => {
    expect(parseJson('"\\ud83d\\ude00 \\/ \\\\ é"')).toBe('😀 / \\ é');
  });

  it('duplicate keys: last value, first position', () => {
    expect(stringifyJson(parseJson('{"a":1,"b":2,"a":3}'))).toBe('{"a":3,"b":2}');
  });

  it('objects above the index threshold still find every key', () => {
    const o = new JsonObject();
    for (let i = 0; i < 50; i++) o.set(`k${i}`, String(i));
    o.set('k7', 'again');
    expect(o.size).toBe(50);
    expect(o.get('k7')).toBe('again');
    expect(o.get('k49')).toBe('49');
    expect(o.keys[7]).toBe('k7');
    expect(o.has('k50')).toBe(false);
  });

  it.each([
    ['', 'unexpected end of JSON input'],
    ['{', 'unexpected end of JSON input'],
    ['{bad', "invalid character 'b' looking for beginning of object key string"],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 "b":2}', `invalid character '"' after object key:value pair`],
    ['[1 2]', "invalid character '2' after array element"],
    ['{} x', "invalid character 'x' after top-level value"],
    ['tru', 'unexpected end of JSON input'],
    ['trux', "invalid character 'x' in literal true (expecting 'e')"],
    ['01', "invalid character '1' after top-level value"],
    ['"a\nb"', "invalid character '\\n' in string literal"],
    ['"\\x"', "invalid character 'x' in string escape code"],
    ['-', 'unexpected end of JSON input'],
    ["'a'", "invalid character '\\'' looking for beginning of value"],
  ])('syntax error for %j: %s', (text, message) => {
    expect(() => parseJson(text)).toThrow(message);
  });

  it('toPlain converts to plain JS values', () => {
    expect(toPlain(parseJson('{"1":[1.5,"x",null],"a":{"b":true}}'))).toEqual({ 1: [1.5, 'x', null], a: { b: true } });
    expect(new JsonNumber('2.5').valueOf()).toBe(2.5);
  });
});

describe('form bodies (application/x-www-form-urlencoded)', () => {
  const form = (s: string): string => stringifyJson(parseForm(s));

  it('plain keys, empty values, + and percent escapes', () => {
    expect(form('one=two&three=four&five=&six&name=Jan+Nov%C3%A1k')).toBe(
      '{"one":"two","three":"four","five":"","six":"","name":"Jan Novák"}',
    );
  });

  it('indexed, appended and nested keys (reference url.ParseQuery)', () => {
    expect(form('seven[0]=eight&seven[1]=nine&ten[]=eleven&ten[]=twelve')).toBe(
      '{"seven":["eight","nine"],"ten":["eleven","twelve"]}',
    );
    expect(form('one[two]=three&one[four]=five')).toBe('{"one":{"two":"three","four":"five"}}');
    expect(form('k[x][0]=zero&k[x][2]=one&k[y][0]=two')).toBe('{"k":{"x":["zero",null,"one"],"y":["two"]}}');
  });

  it('a repeated plain key keeps the last value', () => {
    expect(form('a=1&b=2&a=3')).toBe('{"a":"3","b":"2"}');
  });

  it.each([
    ['a=1;b=2', 'invalid semicolon separator in query'],
    ['a=%zz', 'invalid URL escape "%zz"'],
    ['a[b=1', 'Unable to parse key "a[b"'],
    ['a[][x]=1', 'Unable to parse key "a[][x]"'],
    ['a=1&a[]=2', 'invalid square brackets in query'],
    ['a[99999999]=1', 'Unable to parse key "a[99999999]"'],
  ])('rejects %j', (text, message) => {
    expect(() => parseForm(text)).toThrow(message);
  });
});

describe('body parsing by content type', () => {
  it.each([
    ['application/json', 'json'],
    ['application/json; charset=utf-8', 'json'],
    ['Application/JSON', 'json'],
    ['application/vnd.api+json', 'json'],
    ['application/foo.api+json;charset=UTF-8', 'json'],
    ['application/x-www-form-urlencoded', 'form'],
    ['application/x-www-form-urlencoded; charset=utf-8', 'form'],
    ['text/plain', undefined],
    ['application/jsonx', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('%s -> %s', (ct, expected) => {
    expect(bodyFormat(ct)).toBe(expected);
  });

  it('unsupported content type: 415-kind error with the reference message', () => {
    const err = (() => {
      try {
        parseBody('text/plain', 'hello');
      } catch (e) {
        return e as MappingError;
      }
    })();
    expect(err).toBeInstanceOf(MappingError);
    expect(err!.kind).toBe('unsupportedMediaType');
    expect(err!.ingestStatus).toBe(415);
    expect(err!.message).toBe(
      'cannot parse request body: unsupported content type "text/plain", supported types: application/json and application/x-www-form-urlencoded',
    );
  });

  it('invalid JSON and invalid form data: 400-kind errors', () => {
    expect(() => parseBody('application/json', '{bad')).toThrow(
      "cannot parse request body: invalid JSON: invalid character 'b' looking for beginning of object key string",
    );
    expect(() => parseBody('application/x-www-form-urlencoded', 'a=%')).toThrow(
      'cannot parse request body: invalid form data: invalid URL escape "%"',
    );
    try {
      parseBody('application/json', '');
    } catch (e) {
      expect((e as MappingError).kind).toBe('invalidBody');
      expect((e as MappingError).ingestStatus).toBe(400);
    }
  });

  it('the record context parses the body once and shares the value', () => {
    const ctx = ctxOf('{"a":{"b":1}}');
    const first = ctx.parsedBody();
    expect(ctx.parsedBody()).toBe(first);
    // A failed parse is remembered too (same error object).
    const bad = ctxOf('{bad');
    let e1: unknown;
    let e2: unknown;
    try {
      bad.parsedBody();
    } catch (e) {
      e1 = e;
    }
    try {
      bad.parsedBody();
    } catch (e) {
      e2 = e;
    }
    expect(e1).toBeInstanceOf(MappingError);
    expect(e2).toBe(e1);
  });
});

describe('path column', () => {
  const body = '{"key":"value","my":{"value":42,"list":[10,{"x":"y"},null]},"n":1.50,"big":12345678901234567890,"arr":[[1,2],[3]],"t":true}';

  it('parses a.b[0] paths as the reference does', () => {
    expect(parsePath('a.b[0].c').map((s) => s.key)).toEqual(['a', 'b', '0', 'c']);
    expect(parsePath('')).toEqual([]);
    expect(parsePath('.')).toEqual([]);
    expect(parsePath('[1][2]').map((s) => s.index)).toEqual([1, 2]);
    expect(parsePath('a[b]').map((s) => s.key)).toEqual(['a', 'b]']);
  });

  it('JSON-encodes the value: quoted strings, bare numbers, objects, arrays', () => {
    expect(path(body, 'key')).toBe('"value"');
    expect(path(body, 'my.value')).toBe('42');
    expect(path(body, 'my')).toBe('{"value":42,"list":[10,{"x":"y"},null]}');
    expect(path(body, 'my.list')).toBe('[10,{"x":"y"},null]');
    expect(path(body, 't')).toBe('true');
  });

  it('keeps number text (no float rounding)', () => {
    expect(path(body, 'n')).toBe('1.50');
    expect(path(body, 'big')).toBe('12345678901234567890');
  });

  it('array indexes, nested arrays, and a.0 == a[0]', () => {
    expect(path(body, 'my.list[1].x')).toBe('"y"');
    expect(path(body, 'my.list.1.x')).toBe('"y"');
    expect(path(body, 'arr[0][1]')).toBe('2');
    expect(path(body, 'arr[1][0]')).toBe('3');
    expect(path(body, 'my.list[2]')).toBe('null');
  });

  it('a top-level array body', () => {
    expect(path('[{"a":1},{"a":2}]', '[1].a')).toBe('2');
  });

  it('whole body for "" (re-encoded compactly, order kept)', () => {
    expect(path('{ "z": 1, "a": [ 1, 2 ] }', '')).toBe('{"z":1,"a":[1,2]}');
  });

  it('rawString: strings without quotes, other values unchanged', () => {
    expect(path(body, 'key', { rawString: true })).toBe('value');
    expect(path('{"s":"a\\"b\\nc"}', 's', { rawString: true })).toBe('a"b\nc');
    expect(path(body, 'my.value', { rawString: true })).toBe('42');
    expect(path(body, 'my', { rawString: true })).toBe('{"value":42,"list":[10,{"x":"y"},null]}');
  });

  it('missing path: the default, JSON-encoded unless rawString', () => {
    expect(path(body, 'missing', { defaultValue: 'undefined' })).toBe('"undefined"');
    expect(path(body, 'missing', { defaultValue: 'undefined', rawString: true })).toBe('undefined');
    expect(path(body, 'my.list[9]', { defaultValue: '' })).toBe('""');
    expect(path(body, 'key.deeper', { defaultValue: 'd', rawString: true })).toBe('d');
  });

  it('missing path without default: notFound error with the reference reason', () => {
    const e = pathError('{"my":{"value":42}}', 'key');
    expect(e.kind).toBe('notFound');
    expect(e.reason).toBe('path "key" not found in the body');
    expect(e.forColumn('path').message).toBe('Invalid value for column "path": path "key" not found in the body.');
    expect(e.ingestStatus).toBe(422);
    expect(pathError(body, 'my.list[3]').reason).toBe('path "my.list[3]" not found in the body');
    expect(pathError(body, 'my.value.x').reason).toBe('path "my.value.x" not found in the body');
  });

  it('says a body was read as form data when a path is not in it (JSON sent with curl -d)', () => {
    const e = pathError('{"user":"ann"}', 'user', 'application/x-www-form-urlencoded');
    expect(e.kind).toBe('notFound');
    expect(e.reason).toBe('path "user" not found in the body (it was read as form data, as its Content-Type "application/x-www-form-urlencoded" says, '
      + 'which curl -d sends; send JSON with the header Content-Type: application/json)');
  });

  it('a body that cannot be parsed fails even with a default', () => {
    expect(() => path('{bad', 'a', { defaultValue: 'x' })).toThrow('cannot parse request body: invalid JSON');
    expect(pathError('a=1', 'a', 'text/plain').kind).toBe('unsupportedMediaType');
  });

  it('JSON with a charset parameter is accepted', () => {
    expect(path('{"a":"b"}', 'a', { contentType: 'application/json; charset=utf-8' })).toBe('"b"');
  });

  it('form bodies', () => {
    const form = 'name=Jane&tags[]=a&tags[]=b&user[id]=7';
    const ct = 'application/x-www-form-urlencoded';
    expect(path(form, 'name', { contentType: ct })).toBe('"Jane"');
    expect(path(form, 'tags[1]', { contentType: ct, rawString: true })).toBe('b');
    expect(path(form, 'user.id', { contentType: ct })).toBe('"7"');
    expect(path(form, '', { contentType: ct })).toBe('{"name":"Jane","tags":["a","b"],"user":{"id":"7"}}');
  });

  it('lookupPath returns undefined for steps into scalars', () => {
    expect(lookupPath(parseJson('{"a":"str"}'), parsePath('a.b'))).toBeUndefined();
    expect(lookupPath(parseJson('{"a":[1]}'), parsePath('a.x'))).toBeUndefined();
    expect(lookupPath(parseJson('{"a":[1]}'), parsePath('a[-1]'))).toBeUndefined();
  });
});

describe('other renderers', () => {
  it('uuid: a new UUID v7 for each row', () => {
    const a = renderUuid();
    const b = renderUuid();
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(b).not.toBe(a);
  });

  it('uuid: ids in order, all distinct, their time the time they were made, across many pools of random bytes', () => {
    const before = Date.now();
    const ids = Array.from({ length: 20_000 }, () => renderUuid());
    const after = Date.now();
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of [ids[0], ids[ids.length - 1]]) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
      expect(ms).toBeGreaterThanOrEqual(before);
      expect(ms).toBeLessThanOrEqual(after + 1);
    }
  });

  it('datetime, ip, body, headers', async () => {
    const rec = record('{"a": 1}\n', 'application/json', { 'User-Agent': 'curl/8', Accept: '*/*' });
    const m = await compileMapping([
      { type: 'datetime', name: 'dt' },
      { type: 'ip', name: 'ip' },
      { type: 'body', name: 'body' },
      { type: 'headers', name: 'headers' },
    ]);
    expect(m.renderSync(createRecordContext(rec))).toEqual([
      '2024-01-02T03:04:05.678Z',
      '1.2.3.4',
      '{"a": 1}\n',
      '{"Accept":"*/*","Content-Type":"application/json","User-Agent":"curl/8"}',
    ]);
  });

  it('datetime has a fixed length (milliseconds always printed)', async () => {
    const m = await compileMapping([{ type: 'datetime', name: 'dt' }]);
    const rec = { ...record('{}'), receivedAt: new Date('2024-05-06T07:08:09.000Z') };
    expect(m.renderSync(createRecordContext(rec))).toEqual(['2024-05-06T07:08:09.000Z']);
  });
});

describe('compiled mappings', () => {
  it('path-only mappings are synchronous', async () => {
    const m = await compileMapping([
      { type: 'path', name: 'a', path: 'a' },
      { type: 'uuid', name: 'id' },
    ]);
    expect(m.isSync).toBe(true);
    expect(m.columnNames).toEqual(['a', 'id']);
    const row = m.renderSync(ctxOf('{"a":[1]}'));
    expect(row[0]).toBe('[1]');
    expect(await m.render(ctxOf('{"a":"x"}'))).toEqual(['"x"', expect.stringMatching(/^[0-9a-f-]{36}$/)]);
  });

  it('the first failing column (in column order) names the error', async () => {
    const m = await compileMapping([
      { type: 'path', name: 'ok', path: 'a' },
      { type: 'path', name: 'first', path: 'missing1' },
      { type: 'path', name: 'second', path: 'missing2' },
    ]);
    await expect(m.render(ctxOf('{"a":1}'))).rejects.toThrow(
      'Invalid value for column "first": path "missing1" not found in the body.',
    );
    expect(() => m.renderSync(ctxOf('{"a":1}'))).toThrow(MappingError);
  });

  it('renderMany isolates failures per record', async () => {
    const m = await compileMapping([{ type: 'path', name: 'v', path: 'v', rawString: true }]);
    const out = await m.renderMany([ctxOf('{"v":"a"}'), ctxOf('{}'), ctxOf('{bad'), ctxOf('{"v":"d"}')]);
    expect(out[0]).toEqual(['a']);
    expect(out[1]).toBeInstanceOf(MappingError);
    expect((out[1] as MappingError).column).toBe('v');
    expect((out[2] as MappingError).kind).toBe('invalidBody');
    expect(out[3]).toEqual(['d']);
  });

  it('template columns need an engine', async () => {
    await expect(
      compileMapping([{ type: 'template', name: 't', template: { language: 'jsonnet', content: '1' } }]),
    ).rejects.toThrow('no TemplateEngine');
  });

  const fixtureDir = pathToFileURL(sharedPath('conformance/stream-api/cases/source/test-mapping') + '/');
  // The conformance cases are read in place (test/helpers/shared-dir.ts). In a clone without
  // them these two tests do not run, and say so in their names.
  const withSuite = conformanceFound('stream-api') ? it : it.skip;
  const suiteNote = conformanceFound('stream-api') ? '' : ` (${conformanceMissing('stream-api')})`;

  /** The sink of fixture 003, rendered for the request of a test-mapping case. */
  async function renderFixture(caseDir: string): Promise<Array<string | null>> {
    const sink = JSON.parse(readFileSync(new URL('003-create-sink/request.json', fixtureDir), 'utf8'));
    const request = JSON.parse(readFileSync(new URL(`${caseDir}/request.json`, fixtureDir), 'utf8'));
    // Go's client sends the body map with sorted keys, compact.
    const sortKeys = (v: unknown): unknown =>
      v !== null && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]))
        : v;
    const body = JSON.stringify(sortKeys(request.body));
    const raw = ['Host', 'localhost', 'User-Agent', 'go-resty/2.16.5 (https://github.com/go-resty/resty)',
      'Content-Length', String(Buffer.byteLength(body)), 'Accept', 'application/json', 'Accept-Encoding', 'gzip'];
    for (const [k, v] of Object.entries(request.headers as Record<string, string>)) raw.push(k, v);
    const rec: IngestRecord = {
      receivedAt: new Date(),
      ip: testEndpointIp(headersFromRaw(raw), '127.0.0.1'),
      headers: headersFromRaw(raw, TEST_ENDPOINT_OMITTED_HEADERS),
      body: Buffer.from(body),
      signal: '',
    };
    const mapping = await compileMapping(sink.body.table.mapping.columns as Column[], new LibjsonnetEngine());
    return mapping.render(createRecordContext(rec));
  }

  withSuite(`conformance fixture 006: the row the test endpoint returns${suiteNote}`, async () => {
    const expected = readFileSync(new URL('006-test-mapping/expected-response.json', fixtureDir), 'utf8');
    const columns = JSON.parse(expected.replace(/%%[A-Z_]+%%/g, '1')).tables[0].rows[0].columns as Array<{ name: string; value: string }>;
    const row = await renderFixture('006-test-mapping');
    const wildcard = (pattern: string): RegExp =>
      new RegExp(`^${pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/%s/g, '.*').replace(/%x/g, '[0-9a-f]+').replace(/%d/g, '\\d+')}$`);
    expect(row).toHaveLength(columns.length);
    columns.forEach((c, i) => expect(row[i]).toMatch(wildcard(c.value)));
    expect(row[0]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(row.slice(2)).toEqual(['{"key":"value","my":{"value":42}}', '"value"', '42']);
  });

  withSuite(`conformance fixture 005: the mapping error the test endpoint returns${suiteNote}`, async () => {
    const expected = JSON.parse(readFileSync(new URL('005-test-mapping/expected-response.json', fixtureDir), 'utf8'));
    const err = await renderFixture('005-test-mapping').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MappingError);
    expect((err as MappingError).message).toBe(expected.message);
  });
});

describe('client IP', () => {
  it('test endpoint: X-Real-Ip, then the first parsable X-Forwarded-For entry, then the socket', () => {
    expect(testEndpointIp({ 'X-Real-Ip': '1.1.1.2', 'X-Forwarded-For': '9.9.9.9' }, '1.1.1.1')).toBe('1.1.1.2');
    expect(testEndpointIp({ 'X-Real-Ip': 'garbage', 'X-Forwarded-For': 'unknown, 10.0.0.2, 10.0.0.3' }, '1.1.1.1')).toBe('10.0.0.2');
    expect(testEndpointIp({ 'X-Forwarded-For': 'unknown' }, '::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(testEndpointIp({}, '::1')).toBe('::1');
    expect(testEndpointIp({}, undefined)).toBe('');
  });

  it('prints addresses as Go does', () => {
    expect(normalizeIp('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(normalizeIp('0:0:0:0:0:0:0:1')).toBe('::1');
    expect(normalizeIp('2001:DB8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1');
    expect(normalizeIp('2001:db8:0:1:1:1:1:1')).toBe('2001:db8:0:1:1:1:1:1');
    expect(normalizeIp('[fe80::1]')).toBe('fe80::1');
    expect(normalizeIp(' 192.168.0.1 ')).toBe('192.168.0.1');
    expect(normalizeIp('fe80::1%eth0')).toBeUndefined();
    expect(normalizeIp('1.2.3')).toBeUndefined();
  });
});

describe('strftime (Now(format))', () => {
  it('the default format is the datetime column format', () => {
    expect(strftime(DEFAULT_NOW_FORMAT, RECEIVED)).toBe('2024-01-02T03:04:05.678Z');
  });

  it.each([
    ['%Y-%m-%d %H:%M:%S.%f', '2024-01-02 03:04:05.678'],
    ['%A %a %B %b %h', 'Tuesday Tue January Jan Jan'],
    ['%C %y %j %e|%k|%l', '20 24 002  2| 3| 3'],
    ['%I %p %r %R %T', '03 AM 03:04:05 AM 03:04 03:04:05'],
    ['%D %F %x %X', '01/02/24 2024-01-02 01/02/24 03:04:05'],
    ['%c', 'Tue Jan  2 03:04:05 2024'],
    ['%v', ' 2-Jan-2024'],
    ['%u %w %U %W %V %G %g', '2 2 00 01 01 2024 24'],
    ['%Z %z %% %n%t', 'UTC +0000 % \n\t'],
    ['plain text', 'plain text'],
  ])('%j', (format, expected) => {
    expect(strftime(format, RECEIVED)).toBe(expected);
  });

  it('afternoon and year-boundary weeks', () => {
    const t = new Date('2021-01-03T15:00:00.007Z'); // Sunday, ISO week 53 of 2020
    expect(strftime('%I %l %p %f %V %G %u %w %U %W', t)).toBe('03  3 PM 007 53 2020 7 0 01 00');
  });

  it('rejects unknown conversions and a trailing %', () => {
    expect(() => strftime('%Q', RECEIVED)).toThrow(
      `datetime format "%Q" is invalid: failed to compile format: pattern compilation failed: lookup failed: '%Q' was not found in specification set`,
    );
    expect(() => strftime('abc%', RECEIVED)).toThrow('datetime format "abc%" is invalid: failed to compile format: stray % at the end of pattern');
  });
});
