/**
 * The OTLP/HTTP endpoint's protocol behaviour against a running service: authentication
 * (path secret, Bearer, transport-namespaced secrets), encodings, gzip and the size limit
 * after decompression, answers in the request's encoding (empty, partial_success, errors),
 * one log append per request, backpressure answers, CORS, and the test endpoint's signal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deflateSync, gzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { otlpTypes } from '../../src/sources/otlp/schema.js';
import type { IngestRecord } from '../../src/model/record.js';
import { TestService } from '../helpers/service.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--otlp-max-body-size', '64KB'];
const TRACE_ID = '5b8efff798038103d269b633813fc60c';
const SPAN_ID = 'eee19b7ec3c1b174';

let otlp: { path: string; basePath: string; secret: string };
let httpPath: string;

/** An OTLP/JSON logs request with `n` records; record i has attribute user = "u<i>" unless i is in `withoutUser`. */
function logsJson(n: number, withoutUser: number[] = []): Record<string, unknown> {
  const logRecords = Array.from({ length: n }, (_, i) => ({
    timeUnixNano: String(1_700_000_000_123_456_789n + BigInt(i)),
    severityNumber: 9,
    severityText: 'INFO',
    body: { stringValue: `line ${i}` },
    traceId: TRACE_ID,
    spanId: SPAN_ID,
    attributes: withoutUser.includes(i) ? [] : [{ key: 'user', value: { stringValue: `u${i}` } }],
  }));
  return { resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'api' } }] }, scopeLogs: [{ scope: { name: 'lib', version: '1' }, logRecords }] }] };
}

function logsProto(n: number, withoutUser: number[] = []): Buffer {
  const t = otlpTypes().logsRequest;
  const json = logsJson(n, withoutUser) as any;
  for (const lr of json.resourceLogs[0].scopeLogs[0].logRecords) {
    lr.traceId = Buffer.from(lr.traceId, 'hex');
    lr.spanId = Buffer.from(lr.spanId, 'hex');
  }
  return Buffer.from(t.encode(t.fromObject(json)).finish());
}

async function post(path: string, body: Buffer | string, headers: Record<string, string>): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(svc.server.address + path, { method: 'POST', headers, body });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}
const JSON_CT = { 'content-type': 'application/json' };
const PROTO_CT = { 'content-type': 'application/x-protobuf' };

async function rows(tableId: string, expected: number): Promise<Array<Record<string, string>>> {
  return svc.until(`${expected} rows in ${tableId}`, async () => {
    const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=1000`);
    const table = parse(res.text, { columns: true }) as Array<Record<string, string>>;
    return table.length >= expected ? table : undefined;
  }, 30_000);
}

beforeAll(async () => {
  svc = await TestService.start({ args: FAST });
  const created = await svc.task('POST', `${B()}/sources`, { json: { name: 'Tel', type: 'otlp' } });
  expect(created.status).toBe('success');
  const source = (await svc.call('GET', `${B()}/sources/tel`)).json;
  otlp = { path: new URL(source.otlp.url).pathname, basePath: new URL(source.otlp.baseUrl).pathname, secret: source.otlp.secret };
  await svc.task('POST', `${B()}/sources`, { json: { name: 'Plain', type: 'http' } });
  httpPath = await svc.ingestPath('plain');
  // A strict logs sink (the user attribute must exist) and a lenient one for every signal.
  const strict = [{ type: 'path', name: 'user', path: 'attributes.user', rawString: true }, { type: 'path', name: 'body', path: 'body', rawString: true }, { type: 'headers', name: 'headers' }];
  const sink = (sinkId: string, columns: unknown[], allowedSignals?: string[]) =>
    svc.task('POST', `${B()}/sources/tel/sinks`, { json: { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId: `in.c-tel.${sinkId}`, mapping: { columns } }, ...(allowedSignals ? { allowedSignals } : {}) } });
  expect((await sink('strict', strict, ['logs'])).status).toBe('success');
  // The first four records (the first two tests) are imported together.
  const fast = { settings: [{ key: 'storage.level.staging.upload.trigger.interval', value: '1s' }, { key: 'storage.level.target.import.trigger.count', value: 4 }] };
  expect((await svc.task('PATCH', `${B()}/sources/tel/sinks/strict/settings`, { json: fast })).status).toBe('success');
  expect((await sink('all', [{ type: 'body', name: 'body' }])).status).toBe('success');
});
afterAll(async () => {
  await svc?.close();
});

describe('OTLP/HTTP endpoint', () => {
  it('answers an empty ExportLogsServiceResponse in the request encoding and lands the records', async () => {
    const proto = await post(`${otlp.path}/v1/logs`, logsProto(2), PROTO_CT);
    expect(proto.status).toBe(200);
    expect(proto.headers.get('content-type')).toMatch(/^application\/x-protobuf/);
    expect(proto.bytes.length).toBe(0);
    const json = await post(`${otlp.path}/v1/logs`, JSON.stringify(logsJson(1)), { 'content-type': 'application/json; charset=utf-8' });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(json.bytes.toString())).toEqual({});
  });

  it('accepts the Bearer variant (scheme in any case) and keeps Authorization away from mappings', async () => {
    const res = await post(`${otlp.basePath}/v1/logs`, gzipSync(logsProto(1)), { ...PROTO_CT, 'content-encoding': 'gzip', authorization: `bEaReR ${otlp.secret}` });
    expect(res.status).toBe(200);
    const res2 = await post(`${otlp.basePath}/v1/logs`, logsProto(1), { ...PROTO_CT, authorization: 'Bearer wrong' });
    expect(res2.status).toBe(404);
    const missing = await post(`${otlp.basePath}/v1/logs`, logsProto(1), PROTO_CT);
    expect(missing.status).toBe(404);
    const table = await rows('in.c-tel.strict', 4);
    expect(table.map((r) => r.body).sort()).toEqual(['line 0', 'line 0', 'line 0', 'line 1']);
    expect(table.map((r) => r.user).sort()).toEqual(['u0', 'u0', 'u0', 'u1']);
    for (const r of table) expect(Object.keys(JSON.parse(r.headers))).not.toContain('Authorization');
  });

  it('appends the records of one request to the log as one batch', async () => {
    const log = svc.server.services.eventLog;
    const batches: number[] = [];
    const original = log.append.bind(log);
    log.append = (topic: string, records: IngestRecord[]) => {
      batches.push(records.length);
      return original(topic, records);
    };
    try {
      expect((await post(`${otlp.path}/v1/logs`, logsProto(37), PROTO_CT)).status).toBe(200);
    } finally {
      log.append = original;
    }
    expect(batches).toEqual([37]);
  });

  it('reports records a sink cannot map as partial_success, in JSON and in protobuf', async () => {
    const json = await post(`${otlp.path}/v1/logs`, JSON.stringify(logsJson(4, [1, 3])), JSON_CT);
    expect(json.status).toBe(200);
    expect(JSON.parse(json.bytes.toString())).toEqual({
      partialSuccess: {
        rejectedLogRecords: '2',
        errorMessage: '2 of 4 records rejected; first error: sink "strict": Invalid value for column "user": path "attributes.user" not found in the body.',
      },
    });
    const proto = await post(`${otlp.path}/v1/logs`, logsProto(3, [0, 1, 2]), PROTO_CT);
    expect(proto.status).toBe(200);
    const t = otlpTypes().logsResponse;
    const decoded = t.toObject(t.decode(proto.bytes), { longs: Number }) as any;
    expect(decoded.partialSuccess.rejectedLogRecords).toBe(3);
    expect(decoded.partialSuccess.errorMessage).toMatch(/^3 of 3 records rejected; first error: sink "strict"/);
    // Metrics do not go to the logs-only sink: nothing to reject.
    const metrics = { resourceMetrics: [{ scopeMetrics: [{ metrics: [{ name: 'm', gauge: { dataPoints: [{ asInt: '5', timeUnixNano: '1' }] } }] }] }] };
    const m = await post(`${otlp.path}/v1/metrics`, JSON.stringify(metrics), JSON_CT);
    expect(JSON.parse(m.bytes.toString())).toEqual({});
    // The rejected records are kept as the strict sink's mapping failures, with their signal.
    const failures = await svc.until('failures', async () => {
      const f = (await svc.call('GET', `${B()}/sources/tel/sinks/strict/failures`)).json;
      return f.count >= 5 ? f : undefined;
    });
    expect(failures.failures[0].record.signal).toBe('logs');
  });

  it('answers an empty request with 200', async () => {
    const res = await post(`${otlp.path}/v1/traces`, Buffer.alloc(0), PROTO_CT);
    expect(res.status).toBe(200);
    expect(res.bytes.length).toBe(0);
    expect((await post(`${otlp.path}/v1/metrics`, '{}', JSON_CT)).status).toBe(200);
  });

  it('refuses what it cannot decode with 400 and a google.rpc.Status', async () => {
    const garbage = await post(`${otlp.path}/v1/logs`, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]), PROTO_CT);
    expect(garbage.status).toBe(400);
    const status = otlpTypes().rpcStatus.toObject(otlpTypes().rpcStatus.decode(garbage.bytes)) as any;
    expect(status.code).toBe(3);
    expect(status.message).toMatch(/^Cannot decode the protobuf logs export request/);
    const badJson = await post(`${otlp.path}/v1/logs`, '{"resourceLogs":[', JSON_CT);
    expect(badJson.status).toBe(400);
    expect(JSON.parse(badJson.bytes.toString())).toMatchObject({ code: 3, statusCode: 400, error: 'stream.in.badRequest' });
    const badId = JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'xyz', name: 'a' }] }] }] });
    expect((await post(`${otlp.path}/v1/traces`, badId, JSON_CT)).status).toBe(400);
    const badGzip = await post(`${otlp.path}/v1/logs`, Buffer.from('not gzip'), { ...PROTO_CT, 'content-encoding': 'gzip' });
    expect(badGzip.status).toBe(400);
    const deep = '{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":' + '{"arrayValue":{"values":['.repeat(1000) + ']}}'.repeat(1000) + '}]}]}]}';
    expect((await post(`${otlp.path}/v1/logs`, deep, JSON_CT)).status).toBe(400);
  });

  it('answers 415 for other content types and encodings', async () => {
    const text = await post(`${otlp.path}/v1/logs`, 'x', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
    expect(JSON.parse(text.bytes.toString())).toMatchObject({ error: 'stream.in.unsupportedMediaType' });
    const br = await post(`${otlp.path}/v1/logs`, JSON.stringify(logsJson(1)), { ...JSON_CT, 'content-encoding': 'br' });
    expect(br.status).toBe(415);
    expect(JSON.parse(br.bytes.toString()).message).toMatch(/^Unsupported Content-Encoding "br": use gzip, deflate(, zstd)? or identity/);
  });

  it('inflates deflate bodies as it does gzip ones', async () => {
    const res = await post(`${otlp.path}/v1/logs`, deflateSync(logsProto(2)), { ...PROTO_CT, 'content-encoding': 'deflate' });
    expect(res.status).toBe(200);
    expect(otlpTypes().logsResponse.decode(res.bytes).partialSuccess ?? null).toBeNull();
  });

  it('limits the body after decompression too (413)', async () => {
    const big = Buffer.from(JSON.stringify(logsJson(600)));
    expect(big.length).toBeGreaterThan(64 * 1024);
    const zipped = gzipSync(big);
    expect(zipped.length).toBeLessThan(64 * 1024);
    const res = await post(`${otlp.path}/v1/logs`, zipped, { ...JSON_CT, 'content-encoding': 'gzip' });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.bytes.toString())).toMatchObject({ error: 'stream.in.bodyTooLarge' });
    expect((await post(`${otlp.path}/v1/logs`, big, JSON_CT)).status).toBe(413);
  });

  it('authenticates before decoding and namespaces secrets by transport', async () => {
    const wrong = otlp.path.replace(otlp.secret, 'x'.repeat(48));
    const res = await post(`${wrong}/v1/logs`, 'not even protobuf', PROTO_CT);
    expect(res.status).toBe(404);
    expect(otlpTypes().rpcStatus.toObject(otlpTypes().rpcStatus.decode(res.bytes))).toMatchObject({ code: 5 });
    // The HTTP source's secret on /otlp, and the OTLP secret on /stream.
    const httpSecretOnOtlp = httpPath.replace('/stream/', '/otlp/') + '/v1/logs';
    expect((await post(httpSecretOnOtlp, logsProto(1), PROTO_CT)).status).toBe(404);
    expect((await post(otlp.path.replace('/otlp/', '/stream/'), '{}', JSON_CT)).status).toBe(404);
    expect((await post(`${otlp.path}/v1/profiles`, logsProto(1), PROTO_CT)).status).toBe(404);
    expect((await post(`/otlp/999/tel/${otlp.secret}/v1/logs`, logsProto(1), PROTO_CT)).status).toBe(404);
  });

  it('answers 404 disabledSource for a disabled source, and the CORS preflight', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Off', type: 'otlp' } });
    const url = new URL((await svc.call('GET', `${B()}/sources/off`)).json.otlp.url).pathname;
    await svc.task('PUT', `${B()}/sources/off/disable`);
    const res = await post(`${url}/v1/logs`, '{}', JSON_CT);
    expect(res.status).toBe(404);
    expect(JSON.parse(res.bytes.toString())).toMatchObject({ error: 'stream.in.disabledSource' });
    const pre = await fetch(`${svc.server.address}${url}/v1/logs`, { method: 'OPTIONS', headers: { origin: 'https://x.test', 'access-control-request-method': 'POST' } });
    expect(pre.status).toBe(200);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('renders a flattened record through the sinks that take the test endpoint\'s signal', async () => {
    const record = JSON.stringify({ body: 'hello', attributes: { user: 'ann' } });
    const logs = await svc.call('POST', `${B()}/sources/tel/test?signal=logs`, { body: record, contentType: 'application/x-protobuf' });
    expect(logs.status).toBe(200);
    expect(logs.json.tables.map((t: any) => t.sinkId).sort()).toEqual(['all', 'strict']);
    expect(logs.json.tables.find((t: any) => t.sinkId === 'strict').rows[0].columns[0]).toEqual({ name: 'user', value: 'ann' });
    const traces = await svc.call('POST', `${B()}/sources/tel/test?signal=traces`, { body: record });
    expect(traces.json.tables.map((t: any) => t.sinkId)).toEqual(['all']);
  });

  it('validates allowedSignals on sinks: values, PATCH omitted = unchanged, [] clears, omitted when empty', async () => {
    const base = { name: 'Sig', type: 'table', table: { type: 'keboola', tableId: 'in.c-tel.sig', mapping: { columns: [{ type: 'body', name: 'body' }] } } };
    const bad = await svc.call('POST', `${B()}/sources/tel/sinks`, { json: { ...base, allowedSignals: ['logs', 'profiles'] } });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(/^stream\.api\./);
    expect((await svc.task('POST', `${B()}/sources/tel/sinks`, { json: { ...base, allowedSignals: ['metrics', 'traces'] } })).status).toBe('success');
    expect((await svc.call('GET', `${B()}/sources/tel/sinks/sig`)).json.allowedSignals).toEqual(['metrics', 'traces']);
    await svc.task('PATCH', `${B()}/sources/tel/sinks/sig`, { json: { description: 'x' } });
    expect((await svc.call('GET', `${B()}/sources/tel/sinks/sig`)).json.allowedSignals).toEqual(['metrics', 'traces']);
    await svc.task('PATCH', `${B()}/sources/tel/sinks/sig`, { json: { allowedSignals: [] } });
    expect((await svc.call('GET', `${B()}/sources/tel/sinks/sig`)).json).not.toHaveProperty('allowedSignals');
    await svc.task('DELETE', `${B()}/sources/tel/sinks/sig`);
  });

  it('creates the default sinks once, and reports existing ones', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Defaults', type: 'otlp' } });
    const first = await svc.call('POST', `${B()}/sources/defaults/otlp/default-sinks`, { json: { bucket: 'in.c-otel', signals: ['logs', 'traces'] } });
    expect(first.status).toBe(202);
    expect(first.json.sinks.map((s: any) => [s.sinkId, s.tableId])).toEqual([['logs', 'in.c-otel.logs'], ['traces', 'in.c-otel.traces']]);
    for (const s of first.json.sinks) expect((await svc.waitTask(s.task.url)).status).toBe('success');
    const sink = (await svc.call('GET', `${B()}/sources/defaults/sinks/traces`)).json;
    expect(sink.allowedSignals).toEqual(['traces']);
    const again = await svc.call('POST', `${B()}/sources/defaults/otlp/default-sinks`, { json: { bucket: 'in.c-otel' } });
    expect(again.status).toBe(202);
    expect(again.json.sinks.map((s: any) => [s.sinkId, s.error === undefined])).toEqual([['logs', false], ['metrics', true], ['traces', false]]);
    expect((await svc.call('POST', `${B()}/sources/defaults/otlp/default-sinks`, { json: { bucket: 'in.c-otel' } })).status).toBe(409);
    expect((await svc.call('POST', `${B()}/sources/plain/otlp/default-sinks`)).status).toBe(400);
  });
});

describe('OTLP backpressure', () => {
  it('answers 503 with Retry-After when the log cannot keep the records', async () => {
    const full = await TestService.start({ args: ['--log-max-size', '1KB'] });
    try {
      await full.task('POST', `/v1/branches/${full.branchId}/sources`, { json: { name: 'Tel', type: 'otlp' } });
      const path = new URL((await full.call('GET', `/v1/branches/${full.branchId}/sources/tel`)).json.otlp.url).pathname;
      const res = await fetch(`${full.server.address}${path}/v1/logs`, { method: 'POST', headers: PROTO_CT, body: logsProto(50) });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      const status = otlpTypes().rpcStatus.toObject(otlpTypes().rpcStatus.decode(Buffer.from(await res.arrayBuffer()))) as any;
      expect(status.code).toBe(14);
    } finally {
      await full.close();
    }
  });
});
