import { afterAll, describe, expect, it } from 'vitest';
import { LibjsonnetEngine } from '../../support/libjsonnet-engine.js';
import { SluiceTemplateEngine } from '../../../src/adapters/jsonnet/sluice-engine.js';
import { createRecordContext } from '../../../src/pipeline/columns/index.js';
import type { IngestRecord } from '../../../src/model/record.js';
import { TemplateError } from '../../../src/pipeline/template-engine.js';

/**
 * Differential test of the two TemplateEngine adapters: Sluice's compiler must give exactly
 * what libjsonnet (the oracle) gives, value for value and error for error, with the seed's
 * globals bound to the same records.
 */
const oracle = new LibjsonnetEngine();
const sluice = new SluiceTemplateEngine();
afterAll(() => undefined);

const record = (body: string, contentType = 'application/json', extra: Record<string, string> = {}): IngestRecord => ({
  receivedAt: new Date('2026-03-04T05:06:07.089Z'),
  ip: '10.0.0.7',
  headers: { 'Content-Type': contentType, 'User-Agent': 'test/1.0', 'X-Request-Id': 'r-1', ...extra },
  body: Buffer.from(body),
  signal: '',
});

const records = [
  record('{"user":{"id":"u1","name":"Ann","tags":["a","b"]},"total":42.5,"count":3,"big":12345678901234567890,"ok":true,"nothing":null,"unicode":"žluťoučký 😀"}'),
  record('{"user":{"id":"u2"},"total":0.1,"count":-7}'),
  record('a=1&b[]=x&b[]=y&user[id]=u3', 'application/x-www-form-urlencoded'),
  record('not json'),
  record('plain', 'text/plain'),
  record('[1,2,3]'),
  record('{"user":{"id":"first"},"user":{"id":"last"},"esc":"a\\u00e9\\ud83d\\ude00\\n","__proto__":{"id":"p"}}'),
  record('{"user": {"id": "charset"}}', 'application/json; charset=utf-8'),
];

const templates = [
  'Body("user.id")',
  'Body("user.id", "none")',
  'Body("user.missing", {fallback: true})',
  'Body("user.tags[1]", "")',
  'Body()',
  'Body("total") * 2',
  'Body("count", 0) + 1',
  'Body("big", 0)',
  '{ id: Body("user.id", null), n: std.length(std.objectFields(Body())), ip: Ip() }',
  'Header("user-agent")',
  'Header("X-Missing")',
  'Header("X-Missing", "dflt")',
  'Header()',
  'HeaderStr()',
  'BodyStr()',
  'Now()',
  'Now("%Y/%m/%d %H:%M:%S.%f")',
  'std.asciiUpper(Body("user.name", "anon")) + "!"',
  '[x * 2 for x in std.range(1, 5)]',
  'std.format("%s-%05.2f", [Body("user.id", "?"), Body("total", 0)])',
  'std.join(",", std.map(function(t) "#" + t, Body("user.tags", [])))',
  'if Body("ok", false) then "yes" else error "not ok"',
  'local f(n) = if n == 0 then 0 else f(n - 1) + 1; f(20)',
  '{ a: { b: [1, "two", null, true, 1.5e300, 0.1] }, "z key": "\\u0000\\u001f\\u007f" }',
  'std.manifestJsonMinified({ b: 1, a: [Body("count", 0)] })',
];

interface Outcome {
  ok?: string;
  error?: string;
  kind?: string;
}

async function run(engine: LibjsonnetEngine | SluiceTemplateEngine, content: string, r: IngestRecord): Promise<Outcome> {
  const compiled = await engine.compile(content);
  try {
    return { ok: await compiled.evaluate(createRecordContext(r)) };
  } catch (err) {
    if (err instanceof TemplateError) return { error: err.message, kind: err.kind };
    throw err;
  }
}

describe('Sluice compiler vs libjsonnet as template engines', () => {
  it('agree on static checks', async () => {
    for (const content of ['Invalid', 'Body(', '{a: 1,, }', 'local x = 1; y', 'Body("a") +', '"unterminated', ...templates]) {
      expect({ content, error: await sluice.check(content) }).toEqual({ content, error: await oracle.check(content) });
    }
  });

  it('agree on every value and error, for every record', async () => {
    const results = await Promise.all(
      templates.flatMap((t) => records.map(async (r, i) => ({ t, i, sluice: await run(sluice, t, r), oracle: await run(oracle, t, r) }))),
    );
    for (const { t, i, sluice: s, oracle: o } of results) expect({ t, i, ...s }).toEqual({ t, i, ...o });
  });

  it('fails a record whose JSON body holds a number beyond the double range (libjsonnet aborts the process on it)', async () => {
    const compiled = await sluice.compile('Body("ok")');
    const ctx = createRecordContext(record('{"huge":1e400,"ok":1}'));
    await expect(compiled.evaluate(ctx)).rejects.toMatchObject({ kind: 'invalidBody', message: expect.stringMatching(/out of range/) });
    expect(await compiled.evaluate(createRecordContext(record('{"small":1e-400,"big":1e300,"ok":1}')))).toBe('1');
  });

  it('never reads files: an import fails the record', async () => {
    for (const content of ['import "/etc/hostname"', 'importstr "/etc/hostname"', '(import "lib.libsonnet").x']) {
      const compiled = await sluice.compile(content);
      await expect(compiled.evaluate(createRecordContext(records[0]))).rejects.toBeInstanceOf(TemplateError);
    }
  });

  it('fails a runaway template for its record only', async () => {
    const compiled = await sluice.compile('local f(n) = f(n + 1) + 1; f(0)');
    await expect(compiled.evaluate(createRecordContext(records[0]))).rejects.toThrow(/max stack frames exceeded/);
    const slow = await new SluiceTemplateEngine({ timeoutMs: 50 }).compile('std.foldl(function(a, b) a + b, std.range(1, 100000000), 0)');
    await expect(slow.evaluate(createRecordContext(records[0]))).rejects.toBeInstanceOf(TemplateError);
    expect(await (await sluice.compile('Body("user.id")')).evaluate(createRecordContext(records[0]))).toBe('"u1"');
  });
});
