import { describe, expect, it } from 'vitest';
import type { Column } from '../../../src/model/definition.js';
import type { IngestRecord } from '../../../src/model/record.js';
import {
  LibjsonnetEngine,
  analyzeTemplate,
  formatStaticError,
  splitJsonArray,
  validateMapping,
} from '../../support/libjsonnet-engine.js';
import { MappingError, compileMapping, createRecordContext } from '../../../src/pipeline/columns/index.js';
import { TemplateError, type RecordContext } from '../../../src/pipeline/template-engine.js';

// One engine for the file: evaluations started together share a libjsonnet run.
const engine = new LibjsonnetEngine();
const RECEIVED = new Date('2024-01-02T03:04:05.678Z');

function ctx(body: string, headers: Record<string, string> = { 'Content-Type': 'application/json' }, ip = '10.0.0.7'): RecordContext {
  const rec: IngestRecord = { receivedAt: RECEIVED, ip, headers, body: Buffer.from(body), signal: '' };
  return createRecordContext(rec);
}

const BODY = '{"key":"value","my":{"value":42,"list":[1,{"x":"y"}]},"s":"a\\"b"}';
const HEADERS = { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', 'X-Custom': 'c' };

/** Evaluates templates against one record; every evaluation starts before any is awaited. */
async function evalAll(templates: string[], c: RecordContext = ctx(BODY, HEADERS)): Promise<Array<string | TemplateError>> {
  const compiled = await Promise.all(templates.map((t) => engine.compile(t)));
  return Promise.all(compiled.map((t) => t.evaluate(c).catch((e: unknown) => e as TemplateError)));
}

async function evalOne(template: string, c?: RecordContext): Promise<string> {
  const [r] = await evalAll([template], c);
  if (r instanceof Error) throw r;
  return r;
}

describe('check: static errors as go-jsonnet prints them', () => {
  it('valid templates, globals included', async () => {
    expect(await engine.check("Body('my.value')")).toBeUndefined();
    expect(await engine.check('{ip: Ip(), h: Header(), hs: HeaderStr(), b: Body(), bs: BodyStr(), n: Now("%Y")}')).toBeUndefined();
    expect(await engine.check('local x = 1;\nstd.length([x, Body(path="a", default=null)])')).toBeUndefined();
  });

  it('unknown variable (the API example)', async () => {
    expect(await engine.check('Invalid')).toBe('1:1-8 Unknown variable: Invalid');
  });

  it('line numbers are those of the template', async () => {
    expect(await engine.check('local a = 1;\n\n  a + b')).toBe('3:7-8 Unknown variable: b');
    expect(await engine.check('{a: 1')).toMatch(/^1:6 /);
  });

  it('internal names of the adapter are not visible', async () => {
    expect(await engine.check('__R')).toBe('1:1-4 Unknown variable: __R');
    expect(await engine.check('__r.ip')).toBe('1:1-4 Unknown variable: __r');
  });

  it('imports are rejected', async () => {
    expect(await engine.check('local x = 1;\nimportstr "/etc/passwd"')).toBe('2:1-10 Imports are not supported');
    expect(await engine.check('{"import": 1, s: "import x"} // import "y"')).toBeUndefined();
  });

  it('compile rejects an invalid template with a TemplateError', async () => {
    const err = await engine.compile('Invalid').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TemplateError);
    expect((err as TemplateError).kind).toBe('invalid');
    expect((err as TemplateError).message).toBe('1:1-8 Unknown variable: Invalid');
  });

  it('validateMapping: the message of the first invalid template column', async () => {
    const columns: Column[] = [
      { type: 'path', name: 'p', path: 'a' },
      { type: 'template', name: 'ok', template: { language: 'jsonnet', content: 'Body()' } },
      { type: 'template', name: 'jsonnet', template: { language: 'jsonnet', content: 'Invalid' } },
      { type: 'template', name: 'later', template: { language: 'jsonnet', content: 'Nope' } },
    ];
    expect(await validateMapping(columns, engine)).toBe('Column "jsonnet" template is invalid: 1:1-8 Unknown variable: Invalid');
    expect(await validateMapping(columns.slice(0, 2), engine)).toBeUndefined();
  });

  it('formatStaticError handles ranges over several lines', () => {
    expect(formatStaticError('STATIC ERROR: (snippet):(3:1)-(4:2): boom\n')).toBe('(2:1)-(3:2) boom');
    expect(formatStaticError('STATIC ERROR: (snippet):2:5: unexpected end of file.\n')).toBe('1:5 unexpected end of file.');
  });
});

describe('globals', () => {
  it('Body(), Body(path), Body(path, default), BodyStr()', async () => {
    const out = await evalAll([
      "Body('my.value')",
      "Body('key')",
      "Body('my.list[1]')",
      "Body('my.list.1.x')",
      "Body('missing', 'dflt')",
      "Body('missing', {a: [1]})",
      "Body('missing', null)",
      'Body()',
      "Body('')",
      'BodyStr()',
      "Body(path='s')",
    ]);
    expect(out).toEqual([
      '42',
      '"value"',
      '{"x":"y"}',
      '"y"',
      '"dflt"',
      '{"a":[1]}',
      'null',
      '{"key":"value","my":{"list":[1,{"x":"y"}],"value":42},"s":"a\\"b"}',
      '{"key":"value","my":{"list":[1,{"x":"y"}],"value":42},"s":"a\\"b"}',
      JSON.stringify(BODY),
      '"a\\"b"',
    ]);
  });

  it('Body(path) with a computed path (native fallback) behaves the same', async () => {
    const out = await evalAll([
      "local p = std.join('.', ['my', 'value']); Body(p)",
      "local p = 'my' + '.list[0]'; Body(p)",
      "local p = 'no' + 'pe'; Body(p, 'd')",
      "local p = 'no' + 'pe'; Body(p)",
    ]);
    expect(out.slice(0, 3)).toEqual(['42', '1', '"d"']);
    expect(out[3]).toBeInstanceOf(TemplateError);
    expect((out[3] as TemplateError).message).toBe('path "nope" not found in the body');
    expect((out[3] as TemplateError).kind).toBe('notFound');
  });

  it('missing Body path without default: the reference error', async () => {
    const [err] = await evalAll(["Body('a.b')"]);
    expect(err).toBeInstanceOf(TemplateError);
    expect((err as TemplateError).message).toBe('path "a.b" not found in the body');
  });

  it('Header(), Header(name) case-insensitively, Header(name, default), HeaderStr()', async () => {
    const out = await evalAll([
      "Header('Content-Encoding')",
      "Header('CONTENT-ENCODING')",
      "Header('x-custom')",
      "Header('Invalid-KEY', 'abc')",
      'Header()',
      'HeaderStr()',
      "local n = 'x-' + 'custom'; Header(n)",
    ]);
    expect(out).toEqual([
      '"gzip"',
      '"gzip"',
      '"c"',
      '"abc"',
      '{"Content-Encoding":"gzip","Content-Type":"application/json","X-Custom":"c"}',
      '"Content-Encoding: gzip\\nContent-Type: application/json\\nX-Custom: c\\n"',
      '"c"',
    ]);
  });

  it('missing header without default: the reference error, name canonicalised', async () => {
    const out = await evalAll(["Header('x-foo')", "local n = 'invalid-' + 'KEY'; Header(n)"]);
    expect((out[0] as TemplateError).message).toBe('header "X-Foo" not found');
    expect((out[1] as TemplateError).message).toBe('header "Invalid-Key" not found');
  });

  it('Ip()', async () => {
    expect(await evalOne('Ip()', ctx('{}', {}, '192.168.1.5'))).toBe('"192.168.1.5"');
  });

  it('Now() and Now(format) use the receive time', async () => {
    const out = await evalAll([
      'Now()',
      "Now('%Y-%m-%d %H:%M:%S.%f')",
      "Now(format='%d.%m.%Y')",
      "local f = '%' + 'H'; Now(f)",
      "Now('%Q')",
    ]);
    expect(out.slice(0, 4)).toEqual(['"2024-01-02T03:04:05.678Z"', '"2024-01-02 03:04:05.678"', '"02.01.2024"', '"03"']);
    expect((out[4] as TemplateError).message).toBe(
      `datetime format "%Q" is invalid: failed to compile format: pattern compilation failed: lookup failed: '%Q' was not found in specification set`,
    );
  });

  it('form bodies through Body()', async () => {
    const c = ctx('key1=bar1&key2[]=bar2&key2[]=bar3', { 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(await evalAll(['Body()', "Body('key2[1]')"], c)).toEqual(['{"key1":"bar1","key2":["bar2","bar3"]}', '"bar3"']);
  });

  it('bad bodies: every Body() call fails with the parse error and its kind', async () => {
    const bad = await evalAll(["Body('a', 'default')", 'Body()'], ctx('{bad'));
    expect((bad[0] as TemplateError).message).toBe(
      "cannot parse request body: invalid JSON: invalid character 'b' looking for beginning of object key string",
    );
    expect((bad[0] as TemplateError).kind).toBe('invalidBody');
    expect((bad[1] as TemplateError).kind).toBe('invalidBody');
    const [unsupported] = await evalAll(['Body()'], ctx('hello', { 'Content-Type': 'text/plain' }));
    expect((unsupported as TemplateError).kind).toBe('unsupportedMediaType');
    // A template that does not read the body does not care.
    expect(await evalOne('BodyStr()', ctx('hello', { 'Content-Type': 'text/plain' }))).toBe('"hello"');
  });
});

describe('output and errors', () => {
  it('compact JSON output; numbers as go-jsonnet prints them', async () => {
    expect(await evalAll(['{b: [1, 2], a: {c: "x"}}', '1.5', '0.1', '100', 'true', '"s"'])).toEqual([
      '{"a":{"c":"x"},"b":[1,2]}',
      '1.5',
      '0.10000000000000001',
      '100',
      'true',
      '"s"',
    ]);
  });

  it('runtime errors: the message only, no prefix or stack trace', async () => {
    const out = await evalAll(['error "custom failure"', '{a: 1}.b', 'local f(n) = f(n + 1); f(0)']);
    expect((out[0] as TemplateError).message).toBe('custom failure');
    expect((out[1] as TemplateError).message).toBe('field does not exist: b');
    expect((out[2] as TemplateError).message).toBe('max stack frames exceeded.');
    expect((out[0] as TemplateError).kind).toBe('template');
  });

  it('templates cannot read the batch data of other records', async () => {
    const out = await evalAll(['std.extVar("__r")', 'std["ext" + "Var"]("__r")', 'std.native("_bodyPath")(0, "key")']);
    expect((out[0] as TemplateError).message).toBe('Undefined external variable: __r');
    expect((out[1] as TemplateError).message).toBe('Undefined external variable: __r');
    expect((out[2] as TemplateError).message).toBe('only functions can be called, got null');
  });

  it('std still works inside templates', async () => {
    expect(await evalOne("std.join('-', std.map(function(x) std.toString(x * 2), [1, 2]))")).toBe('"2-4"');
  });
});

describe('batching: one libjsonnet run for many records, failures isolated per record', () => {
  it('mixed outcomes in one batch land on the right records', async () => {
    const t = await engine.compile("{a: Body('v') * 2}");
    const bodies = ['{"v":1}', '{"v":"str"}', '{}', '{"v":4}', '{bad', '{"v":6}'];
    const contexts = bodies.map((b) => ctx(b));
    const out = await Promise.all(contexts.map((c) => t.evaluate(c).catch((e: unknown) => e as TemplateError)));
    expect(out[0]).toBe('{"a":2}');
    expect((out[1] as TemplateError).message).toBe('binary operator * requires matching types, got string and number.');
    expect((out[2] as TemplateError).message).toBe('path "v" not found in the body');
    expect((out[2] as TemplateError).kind).toBe('notFound');
    expect(out[3]).toBe('{"a":8}');
    expect((out[4] as TemplateError).kind).toBe('invalidBody');
    expect(out[5]).toBe('{"a":12}');
  });

  it('templates of different sinks share a run and keep their own results', async () => {
    const [t1, t2] = await Promise.all([engine.compile("Body('v')"), engine.compile("Header('X-Id')")]);
    const contexts = [1, 2, 3].map((i) => ctx(`{"v":${i}}`, { 'Content-Type': 'application/json', 'X-Id': `id-${i}` }));
    const out = await Promise.all(contexts.flatMap((c) => [t1.evaluate(c), t2.evaluate(c)]));
    expect(out).toEqual(['1', '"id-1"', '2', '"id-2"', '3', '"id-3"']);
  });

  it("a template's error message cannot pose as another evaluation's failure", async () => {
    const [good, forger] = await Promise.all([
      engine.compile("Body('v')"),
      engine.compile('error "<<~~sluice:0:0:notFound~~>>forged\n\t(snippet):1:1-2\tthunk <array_element>"'),
    ]);
    const c = ctx('{"v":1}');
    const [a, b] = await Promise.all([good.evaluate(c), forger.evaluate(c).catch((e: unknown) => e as TemplateError)]);
    expect(a).toBe('1');
    expect(b).toBeInstanceOf(TemplateError);
    expect((b as TemplateError).kind).toBe('template');
  });

  it('a mapping with template columns: rawString, column order of errors, renderMany', async () => {
    const columns: Column[] = [
      { type: 'path', name: 'id', path: 'id' },
      { type: 'template', name: 'level', template: { language: 'jsonnet', content: "Body('level')" }, rawString: true },
      { type: 'template', name: 'quoted', template: { language: 'jsonnet', content: "Body('level')" } },
      { type: 'template', name: 'obj', template: { language: 'jsonnet', content: "{n: Body('n', 0)}" }, rawString: true },
    ];
    const m = await compileMapping(columns, engine);
    expect(m.isSync).toBe(false);
    const rows = await m.renderMany([
      ctx('{"id":1,"level":"WARN","n":5}'),
      ctx('{"id":2}'),
      ctx('{"level":"INFO"}'),
    ]);
    expect(rows[0]).toEqual(['1', 'WARN', '"WARN"', '{"n":5}']);
    expect(rows[1]).toBeInstanceOf(MappingError);
    expect((rows[1] as MappingError).message).toBe('Invalid value for column "level": path "level" not found in the body.');
    // The path column fails before any template column.
    expect((rows[2] as MappingError).message).toBe('Invalid value for column "id": path "id" not found in the body.');
    await expect(m.render(ctx('{"id":3,"level":"E"}'))).resolves.toEqual(['3', 'E', '"E"', '{"n":0}']);
    expect(() => m.renderSync(ctx('{}'))).toThrow('renderSync() on a mapping with template columns');
  });

  it('a compile failure names the column', async () => {
    const err = await compileMapping(
      [{ type: 'template', name: 'bad', template: { language: 'jsonnet', content: 'Invalid' } }],
      engine,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MappingError);
    expect((err as MappingError).message).toBe(
      'Invalid value for column "bad": template is invalid: 1:1-8 Unknown variable: Invalid.',
    );
  });
});

describe('helpers', () => {
  it('splitJsonArray splits libjsonnet output into compact elements', () => {
    const text = '[\n   {\n      "a": "x, ]}\\"[{"\n   },\n   [ ],\n   1,\n   "s p"\n]\n';
    expect(splitJsonArray(text)).toEqual(['{"a":"x, ]}\\"[{"}', '[]', '1', '"s p"']);
    expect(splitJsonArray('[ ]\n')).toEqual([]);
  });

  it('analyzeTemplate finds the globals and literal arguments a template uses', () => {
    const n = analyzeTemplate("{a: Body('x.y'), b: Header('accept'), c: Now('%Y'), d: x.Body} // Ip()");
    expect(n.body && n.headers && n.now).toBe(true);
    expect(n.ip).toBe(false);
    expect(n.wholeBody).toBe(false);
    expect(n.paths).toContain('x.y');
    expect(n.formats).toEqual(['%Y']);
    expect(n.headerNames.get('accept')).toBe('Accept');
    expect(analyzeTemplate('Body()').wholeBody).toBe(true);
    expect(analyzeTemplate("local p = 'a'; Body(p)").wholeBody).toBe(true);
    expect(analyzeTemplate('"Body"').body).toBe(false);
  });
});
