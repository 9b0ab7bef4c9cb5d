import { describe, expect, it } from 'vitest';
import { compileMapping, createRecordContext } from '../../../src/pipeline/columns/index.js';
import { findRejections, mappingCanFail, rejectionMessage } from '../../../src/sources/otlp/rejections.js';
import { templateCanFail } from '../../../src/sources/otlp/template-can-fail.js';
import { DEFAULT_COLUMNS, defaultSink } from '../../../src/sources/otlp/default-sinks.js';
import { ALWAYS_OBJECTS, ALWAYS_WRITTEN, flatten } from '../../../src/sources/otlp/flatten.js';
import { SluiceTemplateEngine } from '../../../src/adapters/jsonnet/sluice-engine.js';
import { InflightBudget } from '../../../src/sources/otlp/inflight.js';
import type { Signal } from '../../../src/model/definition.js';

const record = (body: unknown, signal: Signal = 'logs') =>
  createRecordContext({ receivedAt: new Date(0), ip: '10.0.0.1', headers: { 'Content-Type': 'application/x-protobuf' }, body: Buffer.from(JSON.stringify(body)), signal });

describe('rejections known at ingest time', () => {
  it('counts records that at least one sink cannot map, and names the first error', async () => {
    const strict = await compileMapping([{ type: 'path', name: 'user', path: 'attributes.user' }]);
    const lenient = await compileMapping([{ type: 'body', name: 'body' }]);
    const other = await compileMapping([{ type: 'path', name: 'n', path: 'n' }]);
    const ctxs = [record({ attributes: { user: 'a' }, n: 1 }), record({ attributes: {} , n: 2 }), record({ attributes: {} })];
    const r = await findRejections(ctxs, [{ sinkId: 'lenient', mapping: lenient }, { sinkId: 'strict', mapping: strict }, { sinkId: 'other', mapping: other }]);
    expect(r).toEqual({ rejected: 2, firstError: 'sink "strict": Invalid value for column "user": path "attributes.user" not found in the body.' });
    expect(rejectionMessage(r, 3)).toBe('2 of 3 records rejected; first error: sink "strict": Invalid value for column "user": path "attributes.user" not found in the body.');
    expect(await findRejections(ctxs, [{ sinkId: 'lenient', mapping: lenient }])).toEqual({ rejected: 0 });
    expect(await findRejections([], [{ sinkId: 'strict', mapping: strict }])).toEqual({ rejected: 0 });
  });

  it('knows which mappings cannot fail on a flattened record, so they need no check', () => {
    expect(mappingCanFail([{ type: 'uuid', name: 'id' }, { type: 'body', name: 'b' }, { type: 'path', name: 'p', path: 'x', defaultValue: '' }], 'logs')).toBe(false);
    expect(mappingCanFail([{ type: 'path', name: 'p', path: 'x' }], 'logs')).toBe(true);
    // Typed columns: a missing path is NULL; a value may not convert, except to STRING and JSON.
    expect(mappingCanFail([{ type: 'path', name: 'p', path: 'x', dataType: 'STRING' }, { type: 'path', name: 'j', path: 'y', dataType: 'JSON' }], 'logs')).toBe(false);
    expect(mappingCanFail([{ type: 'path', name: 'p', path: 'body', dataType: 'INTEGER' }], 'logs')).toBe(true);
    expect(mappingCanFail([{ type: 'template', name: 't', dataType: 'DATE', template: { language: 'jsonnet', content: 'Body("body")' } }], 'logs', templateCanFail)).toBe(true);
    // A key column needs a value of a bounded size.
    expect(mappingCanFail([{ type: 'path', name: 'p', path: 'body', primaryKey: true }], 'logs')).toBe(true);
    expect(mappingCanFail([{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'Body("x")' } }], 'logs')).toBe(true);
    expect(mappingCanFail([{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'Body("body") + "!"' } }], 'logs', templateCanFail)).toBe(false);
    expect(mappingCanFail([{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'Body("body") + "!"' } }], 'logs'), 'without the engine\'s judgement a template can fail').toBe(true);
    // A key every record of the signal has, or the whole body, cannot miss; a nested path can.
    expect(mappingCanFail([{ type: 'path', name: 'b', path: 'body' }, { type: 'path', name: 'a', path: 'attributes' }, { type: 'path', name: 'all', path: '' }], 'logs')).toBe(false);
    expect(mappingCanFail([{ type: 'path', name: 'u', path: 'attributes.user' }], 'logs')).toBe(true);
    expect(mappingCanFail([{ type: 'path', name: 't', path: 'trace_id' }], 'logs'), 'logs without a trace have no trace_id').toBe(true);
    expect(mappingCanFail([{ type: 'path', name: 't', path: 'trace_id' }], 'traces')).toBe(false);
    expect(mappingCanFail([{ type: 'path', name: 'v', path: 'value' }], 'metrics'), 'histograms have no value').toBe(true);
  });

  it('clears from their syntax the templates that cannot fail on a flattened record, and only those', async () => {
    const cannot = [
      'Body("severity_text") + ": " + Body("body")',
      '{ sev: Body("severity_text"), all: Body(), t: Body("trace_id", ""), h: Header("X-A", null), s: [BodyStr(), HeaderStr(), Ip(), Now()] }',
      '"n=" + std.toString(Body("attributes"))',
      '1 + "a"',
      'std.get(Body("resource", {}), "service.name", "")',
      'std.get(Body("attributes"), "user") + "!"',
      '{ v: std.get(Body("scope"), "name"), has: std.objectHas({ a: 1 }, "a") }',
    ];
    const can = [
      'Body("trace_id")', // not in every log record
      'Body("attributes.user")',
      'Body("severity_number") + 1', // arithmetic
      'Body("body") + Body("attributes")', // neither side known to be text: object + string fails
      'Header("X-A")',
      'Now("%Q")',
      'local x = Body("body"); x',
      'if true then "a" else error "b"',
      'std.length(Body("body"))',
      '{ [Body("severity_text")]: 1 }',
      '{',
      'std.get(Body("body", {}), "k")', // a log's body may be any value
      'std.get(Body("attributes.user", {}), "k")', // the value at a deeper path may be any value
      'std.get(Body("resource"), Body("severity_text"))', // a key not known to be text
      'std.objectHas(Body("resource"))',
    ];
    for (const content of cannot) expect(templateCanFail(content, 'logs'), content).toBe(false);
    for (const content of can) expect(templateCanFail(content, 'logs'), content).toBe(true);
    // What it clears maps every flattened record of an empty message without a failure.
    const ctx = createRecordContext({ receivedAt: new Date(0), ip: '10.0.0.1', headers: {}, body: Buffer.from(flatten('logs', { resourceLogs: [{ scopeLogs: [{ logRecords: [{}] }] }] } as never)[0]), signal: 'logs' });
    const engine = new SluiceTemplateEngine();
    for (const content of cannot) await expect((await engine.compile(content)).evaluate(ctx), content).resolves.toBeTypeOf('string');
    await expect((await engine.compile('Body("body") + Body("attributes")')).evaluate(ctx)).rejects.toThrow();
    await expect((await engine.compile('std.get(Body("body", {}), "k")')).evaluate(ctx), 'a body that is not an object').rejects.toThrow();
  });

  it('has every key ALWAYS_WRITTEN names in the records of empty messages, an object under each key ALWAYS_OBJECTS names', () => {
    const requests: Record<Signal, unknown> = {
      logs: { resourceLogs: [{ scopeLogs: [{ logRecords: [{}] }] }] },
      metrics: { resourceMetrics: [{ scopeMetrics: [{ metrics: ['gauge', 'sum', 'histogram', 'exponentialHistogram', 'summary'].map((kind) => ({ [kind]: { dataPoints: [{}] } })) }] }] },
      traces: { resourceSpans: [{ scopeSpans: [{ spans: [{}] }] }] },
    };
    for (const signal of ['logs', 'metrics', 'traces'] as Signal[]) {
      const records = flatten(signal, requests[signal] as never).map((r) => JSON.parse(r) as Record<string, unknown>);
      expect(records.length, signal).toBeGreaterThan(0);
      for (const r of records) {
        expect(Object.keys(r), signal).toEqual(expect.arrayContaining([...ALWAYS_WRITTEN[signal]]));
        for (const key of ALWAYS_OBJECTS[signal]) expect(r[key], `${signal} ${key}`).toEqual(expect.any(Object));
        for (const key of ALWAYS_OBJECTS[signal]) expect(Array.isArray(r[key]), `${signal} ${key}`).toBe(false);
      }
    }
  });

  it('parses an OTLP record as JSON whatever the request Content-Type was', async () => {
    const mapping = await compileMapping([{ type: 'path', name: 'sev', path: 'severity_text', rawString: true }]);
    expect(mapping.renderSync(record({ severity_text: 'WARN' }))).toEqual(['WARN']);
  });
});

describe('default sinks', () => {
  it('map every flattened record of their signal, including sparse ones', async () => {
    const engine = new SluiceTemplateEngine();
    const samples: Record<Signal, unknown[]> = {
      logs: [{ timestamp: '', body: 'x', attributes: {}, resource: { 'service.name': 'api' }, scope: { name: 'l', version: '' } }, {}],
      metrics: [{ metric_name: 'm', metric_type: 'histogram', count: 1, bucket_counts: [1], explicit_bounds: [], resource: {}, scope: { name: '', version: '' } }, {}],
      traces: [{ name: 'GET /', kind: 'Server', events: [], links: [], resource: { 'service.name': 'web' }, scope: { name: 's', version: '1' } }],
    };
    for (const signal of ['logs', 'metrics', 'traces'] as Signal[]) {
      const d = defaultSink(signal, 'in.c-otel');
      expect(mappingCanFail(d.columns, signal, templateCanFail), `${signal}: the ingestion-time rejection check skips the default sinks`).toBe(false);
      expect(d).toMatchObject({ sinkId: signal, tableId: `in.c-otel.${signal}`, allowedSignals: [signal] });
      expect(new Set(d.columns.map((c) => c.name)).size).toBe(d.columns.length);
      const mapping = await compileMapping(DEFAULT_COLUMNS[signal], engine);
      const rows = await mapping.renderMany(samples[signal].map((s) => record(s, signal)));
      for (const row of rows) expect(row).toBeInstanceOf(Array);
    }
    const mapping = await compileMapping(DEFAULT_COLUMNS.traces, engine);
    const [row] = (await mapping.renderMany([record(samples.traces[0], 'traces')])) as string[][];
    const byName = Object.fromEntries(mapping.columnNames.map((n, i) => [n, row[i]]));
    expect(byName).toMatchObject({ name: 'GET /', kind: 'Server', events: '[]', service_name: 'web', scope_name: 's', parent_span_id: '' });
  });
});

describe('in-flight byte budget', () => {
  it('refuses what does not fit while others are in flight, and frees on release', () => {
    const b = new InflightBudget(100);
    expect(b.tryReserve(80)).toBe(true);
    expect(b.tryReserve(30)).toBe(false);
    expect(b.tryReserve(20)).toBe(true);
    b.release(80);
    b.release(20);
    expect(b.inUse).toBe(0);
    // A single request larger than the budget passes when it is alone.
    expect(b.tryReserve(500)).toBe(true);
    expect(b.tryReserve(1)).toBe(false);
    // ... and may grow while it is alone.
    expect(b.tryReserve(300, 500)).toBe(true);
    b.release(800);
    expect(b.tryReserve(50)).toBe(true);
    expect(b.tryReserve(100, 0)).toBe(false);
    expect(b.tryReserve(40, 50)).toBe(true);
  });
});
