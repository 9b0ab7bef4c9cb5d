/**
 * OTLP sources end to end with the real OpenTelemetry JS SDK: providers with the protobuf and
 * the JSON exporters, pointed at a running service's source URL (secret in the path, and the
 * Bearer variant), fill the default logs / metrics / traces tables.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor, type LogRecordExporter } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { TestService } from '../helpers/service.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms'];

/** The source's OTLP URLs, re-pointed from the public host to the test server. */
interface Urls {
  url: string;
  baseUrl: string;
  secret: string;
}

async function otlpSource(name: string): Promise<Urls> {
  const task = await svc.task('POST', `${B()}/sources`, { json: { name, type: 'otlp' } });
  expect(task.status).toBe('success');
  const source = (await svc.call('GET', `${B()}/sources/${task.outputs.sourceId}`)).json;
  const local = (u: string) => svc.server.address + new URL(u).pathname;
  return { url: local(source.otlp.url), baseUrl: local(source.otlp.baseUrl), secret: source.otlp.secret };
}

/** The default sinks, with triggers that import every `count` records at once. */
async function defaultSinks(sourceId: string, counts: Record<string, number>): Promise<void> {
  const res = await svc.call('POST', `${B()}/sources/${sourceId}/otlp/default-sinks`);
  if (res.status !== 202) throw new Error(res.text);
  expect(res.status).toBe(202);
  for (const s of res.json.sinks) {
    expect((await svc.waitTask(s.task.url)).status).toBe('success');
    const settings = { settings: [{ key: 'storage.level.staging.upload.trigger.interval', value: '1s' }, { key: 'storage.level.target.import.trigger.count', value: counts[s.sinkId] }] };
    expect((await svc.task('PATCH', `${B()}/sources/${sourceId}/sinks/${s.sinkId}/settings`, { json: settings })).status).toBe('success');
  }
}

/** The table's rows as objects by column name, once it holds at least `expected` rows. */
async function rows(tableId: string, expected: number): Promise<Array<Record<string, string>>> {
  return svc.until(`${expected} rows in ${tableId}`, async () => {
    const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=1000`);
    if (res.status !== 200) return undefined;
    const table = parse(res.text, { columns: true }) as Array<Record<string, string>>;
    return table.length >= expected ? table : undefined;
  }, 30_000);
}

/** Wraps an exporter and keeps the result of every export, so a test sees the server's verdict. */
function recording<T extends { export(items: any, cb: (r: ExportResult) => void): void }>(exporter: T, results: ExportResult[]): T {
  const original = exporter.export.bind(exporter);
  exporter.export = (items: any, cb: (r: ExportResult) => void) => original(items, (r: ExportResult) => {
    results.push(r);
    cb(r);
  });
  return exporter;
}

const resource = (service: string) => resourceFromAttributes({ 'service.name': service, 'deployment.environment': 'test' });

async function sendLogs(exporter: LogRecordExporter, service: string, n: number): Promise<ExportResult[]> {
  const results: ExportResult[] = [];
  const provider = new LoggerProvider({ resource: resource(service), processors: [new SimpleLogRecordProcessor({ exporter: recording(exporter, results) } as never)] });
  const logger = provider.getLogger('checkout', '1.2.3');
  for (let i = 0; i < n; i++) {
    logger.emit({ severityNumber: SeverityNumber.WARN, severityText: 'WARN', body: `payment ${i} slow`, attributes: { 'order.id': `o-${i}`, attempt: i } });
  }
  await provider.forceFlush();
  await provider.shutdown();
  return results;
}

async function sendMetrics(exporter: PushMetricExporter, service: string): Promise<ExportResult[]> {
  const results: ExportResult[] = [];
  const reader = new PeriodicExportingMetricReader({ exporter: recording(exporter, results), exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ resource: resource(service), readers: [reader] });
  const meter = provider.getMeter('shop', '2.0');
  meter.createCounter('orders', { unit: '{order}', description: 'orders placed' }).add(3, { region: 'eu' });
  meter.createHistogram('latency', { unit: 'ms' }).record(12.5, { route: '/pay' });
  meter.createGauge('queue.depth').record(7);
  // shutdown() exports once more (cumulative); it alone flushes exactly one export.
  await provider.shutdown();
  return results;
}

async function sendSpans(exporter: SpanExporter, service: string): Promise<ExportResult[]> {
  const results: ExportResult[] = [];
  const provider = new BasicTracerProvider({ resource: resource(service), spanProcessors: [new SimpleSpanProcessor(recording(exporter, results))] });
  const tracer = provider.getTracer('http', '0.9');
  const span = tracer.startSpan('GET /orders', { kind: 1, attributes: { 'http.status_code': 200 } });
  span.addEvent('cache miss', { key: 'orders:1' });
  span.setStatus({ code: 2, message: 'upstream timeout' });
  span.end();
  await provider.forceFlush();
  await provider.shutdown();
  return results;
}

const ok = (results: ExportResult[]) => {
  expect(results.length).toBeGreaterThan(0);
  for (const r of results) expect(r.code, String(r.error)).toBe(ExportResultCode.SUCCESS);
};

beforeAll(async () => {
  svc = await TestService.start({ args: FAST });
});
afterAll(async () => {
  await svc?.close();
});

describe('OTLP source with the OpenTelemetry SDK', () => {
  it('fills the default logs, metrics and traces tables from protobuf and JSON exporters', async () => {
    const urls = await otlpSource('Otel App');
    // logs: 3 (proto, gzip) + 2 (JSON); metrics: 3 data points per export, two exports; traces: 1 + 1.
    await defaultSinks('otel-app', { logs: 5, metrics: 6, traces: 2 });

    ok(await sendLogs(new ProtoLogExporter({ url: `${urls.url}/v1/logs`, compression: 'gzip' as never }), 'proto-svc', 3));
    ok(await sendLogs(new JsonLogExporter({ url: `${urls.url}/v1/logs` }), 'json-svc', 2));
    ok(await sendMetrics(new ProtoMetricExporter({ url: `${urls.url}/v1/metrics` }), 'proto-svc'));
    ok(await sendMetrics(new JsonMetricExporter({ url: `${urls.url}/v1/metrics` }), 'json-svc'));
    // The Bearer variant: base URL plus the secret in Authorization.
    const bearer = { Authorization: `Bearer ${urls.secret}` };
    ok(await sendSpans(new ProtoTraceExporter({ url: `${urls.baseUrl}/v1/traces`, headers: bearer }), 'proto-svc'));
    ok(await sendSpans(new JsonTraceExporter({ url: `${urls.baseUrl}/v1/traces`, headers: bearer }), 'json-svc'));

    const logs = await rows('in.c-otel-app.logs', 5);
    expect(logs).toHaveLength(5);
    expect(logs.map((r) => r.service_name).sort()).toEqual(['json-svc', 'json-svc', 'proto-svc', 'proto-svc', 'proto-svc']);
    const first = logs.find((r) => r.body === 'payment 0 slow' && r.service_name === 'proto-svc')!;
    expect(first).toMatchObject({ severity_number: '13', severity_text: 'WARN', scope_name: 'checkout', scope_version: '1.2.3', trace_id: '', flags: '0' });
    expect(JSON.parse(first.attributes)).toEqual({ 'order.id': 'o-0', attempt: 0 });
    expect(JSON.parse(first.resource)).toMatchObject({ 'service.name': 'proto-svc', 'deployment.environment': 'test' });
    expect(first.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

    const metrics = await rows('in.c-otel-app.metrics', 6);
    expect(metrics).toHaveLength(6);
    const counter = metrics.find((r) => r.metric_name === 'orders' && r.service_name === 'json-svc')!;
    expect(counter).toMatchObject({ metric_type: 'sum', value: '3', is_monotonic: 'true', aggregation_temporality: 'Cumulative', metric_unit: '{order}', metric_description: 'orders placed', scope_name: 'shop' });
    expect(JSON.parse(counter.attributes)).toEqual({ region: 'eu' });
    const histogram = metrics.find((r) => r.metric_name === 'latency' && r.service_name === 'proto-svc')!;
    expect(histogram).toMatchObject({ metric_type: 'histogram', count: '1', sum: '12.5', min: '12.5', max: '12.5', value: '' });
    expect(JSON.parse(histogram.bucket_counts).reduce((a: number, b: number) => a + b, 0)).toBe(1);
    expect(JSON.parse(histogram.explicit_bounds).length).toBeGreaterThan(0);
    expect(metrics.find((r) => r.metric_name === 'queue.depth')).toMatchObject({ metric_type: 'gauge', value: '7' });

    const spans = await rows('in.c-otel-app.traces', 2);
    expect(spans).toHaveLength(2);
    for (const span of spans) {
      expect(span).toMatchObject({ name: 'GET /orders', kind: 'Server', status_code: 'Error', status_message: 'upstream timeout', scope_name: 'http', parent_span_id: '' });
      expect(span.trace_id).toMatch(/^[0-9a-f]{32}$/);
      expect(span.span_id).toMatch(/^[0-9a-f]{16}$/);
      expect(JSON.parse(span.events)).toMatchObject([{ name: 'cache miss', attributes: { key: 'orders:1' } }]);
      expect(JSON.parse(span.attributes)).toEqual({ 'http.status_code': 200 });
    }
    expect(spans.map((s) => s.service_name).sort()).toEqual(['json-svc', 'proto-svc']);
  }, 60_000);
});

describe("the example of docs/otlp.md", () => {
  it('runs as written: the SDK with the protobuf exporters at the source URL fills the three tables', async () => {
    const { url } = await otlpSource('Readme');
    await defaultSinks('readme', { logs: 1, metrics: 1, traces: 1 });

    // The page's code block itself, run by node with OTLP_URL set: it must flush on its own.
    const readme = readFileSync(resolve('docs/otlp.md'), 'utf8');
    const after = readme.indexOf('**An application instrumented with the OpenTelemetry JS SDK**');
    const code = /```js\n([\s\S]*?)```/.exec(readme.slice(after))![1];
    expect(code).toContain('shutdown()');
    // Inside the project, so that its imports resolve from node_modules.
    const dir = mkdtempSync(join(resolve('node_modules'), '.readme-otel-'));
    try {
      writeFileSync(join(dir, 'example.mjs'), code);
      // Asynchronously: the service runs in this process and must answer meanwhile.
      const run = await promisify(execFile)(process.execPath, [join(dir, 'example.mjs')], { env: { ...process.env, OTLP_URL: url }, encoding: 'utf8', timeout: 30_000 });
      expect(run.stderr).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    expect((await rows('in.c-readme.logs', 1))[0]).toMatchObject({ body: 'order placed', service_name: 'checkout', severity_text: 'INFO' });
    expect((await rows('in.c-readme.metrics', 1))[0]).toMatchObject({ metric_name: 'orders', value: '1', service_name: 'checkout' });
    expect((await rows('in.c-readme.traces', 1))[0]).toMatchObject({ name: 'POST /orders', service_name: 'checkout', kind: 'Internal' });
  }, 60_000);
});
