/**
 * OTLP over gRPC against a real `sluice serve` (dist/main.js, a child process): the
 * OpenTelemetry JS SDK's gRPC exporters fill the default logs / metrics / traces tables (the
 * example of docs/otlp.md too); every bad call of a raw client gets its status, stores nothing and
 * leaves the process serving; a port in use ends the start with one line; SIGTERM drains.
 * Requires `npm run build` first.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { createGzip } from 'node:zlib';
import { Metadata } from '@grpc/grpc-js';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { LoggerProvider, SimpleLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { ChildService, freePort, until } from '../helpers/child-service.js';
import { EXPORT_PATHS, logsRequest, OtlpGrpcClient, rawCall } from '../helpers/otlp-grpc.js';
import { metricValue } from '../helpers/prometheus.js';

const B = '/v1/branches/default';
const MAX_BODY = 1024 * 1024;
const dirs: string[] = [];
let svc: ChildService;
let grpcPort: number;
let grpcAddress: string;

beforeAll(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-otlp-grpc-'));
  dirs.push(dataDir);
  grpcPort = await freePort();
  grpcAddress = `127.0.0.1:${grpcPort}`;
  svc = new ChildService({
    dataDir,
    env: {
      SLUICE_OTLP_GRPC_PORT: String(grpcPort), SLUICE_OTLP_MAX_BODY_SIZE: '1MB',
      SLUICE_CHECK_INTERVAL: '100ms', SLUICE_UPLOAD_MIN_INTERVAL: '200ms', SLUICE_IMPORT_MIN_INTERVAL: '300ms',
    },
  });
  await svc.start();
}, 60_000);

afterAll(async () => {
  await svc?.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** An OTLP source with the default sinks, importing every `counts[signal]` records; its secret. */
async function otlpSource(sourceId: string, counts: Record<string, number> = { logs: 1, metrics: 1, traces: 1 }): Promise<string> {
  await svc.task('POST', `${B}/sources`, { sourceId, name: sourceId, type: 'otlp' });
  const res = await svc.call('POST', `${B}/sources/${sourceId}/otlp/default-sinks`);
  expect(res.status, res.text).toBe(202);
  for (const s of res.json.sinks) {
    await until(`sink ${s.sinkId}`, async () => ((await svc.call('GET', new URL(s.task.url).pathname)).json.status === 'success' ? true : undefined));
    await svc.patchSinkSettings(sourceId, s.sinkId, { 'storage.level.staging.upload.trigger.interval': '1s', 'storage.level.target.import.trigger.count': counts[s.sinkId] });
  }
  return (await svc.call('GET', `${B}/sources/${sourceId}`)).json.otlp.secret;
}

/** The table's rows by column name, once it has at least `n`. */
async function rows(tableId: string, n: number): Promise<Array<Record<string, string>>> {
  return until(`${n} rows in ${tableId}`, async () => {
    const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=1000`);
    if (res.status !== 200) return undefined;
    const table = parse(res.text, { columns: true }) as Array<Record<string, string>>;
    return table.length >= n ? table : undefined;
  }, 30_000);
}

/** How many records the source's log holds (the recent-records endpoint: up to 20). */
async function stored(sourceId: string): Promise<number> {
  const res = await svc.call('GET', `${B}/sources/${sourceId}/records?limit=20`);
  if (res.status !== 200) throw new Error(res.text);
  return res.json.records.length;
}

function bearer(secret: string): Metadata {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${secret}`);
  return metadata;
}

/** Runs `send` with the exporter wrapped so that every export's result is kept. */
async function exportsOf<E extends { export(items: any, done: (r: ExportResult) => void): void }>(exporter: E, send: (e: E) => Promise<void>): Promise<ExportResult[]> {
  const results: ExportResult[] = [];
  const original = exporter.export.bind(exporter);
  exporter.export = (items: any, done: (r: ExportResult) => void) => original(items, (r) => {
    results.push(r);
    done(r);
  });
  await send(exporter);
  expect(results.length).toBeGreaterThan(0);
  for (const r of results) expect(r.code, String(r.error)).toBe(ExportResultCode.SUCCESS);
  return results;
}

describe('OTLP/gRPC with the OpenTelemetry SDK', () => {
  it('fills the default logs, metrics and traces tables through the gRPC exporters (gzip and not)', async () => {
    const secret = await otlpSource('grpc-app', { logs: 3, metrics: 3, traces: 1 });
    const resource = resourceFromAttributes({ 'service.name': 'grpc-svc' });
    const url = `http://${grpcAddress}`;

    await exportsOf(new OTLPLogExporter({ url, metadata: bearer(secret), compression: 'gzip' as never }), async (exporter) => {
      const provider = new LoggerProvider({ resource, processors: [new SimpleLogRecordProcessor({ exporter })] });
      const logger = provider.getLogger('checkout', '1.2.3');
      for (let i = 0; i < 3; i++) logger.emit({ severityText: 'WARN', severityNumber: 13, body: `payment ${i} slow`, attributes: { 'order.id': `o-${i}` } });
      await provider.forceFlush();
      await provider.shutdown();
    });
    await exportsOf(new OTLPMetricExporter({ url, metadata: bearer(secret) }), async (exporter) => {
      const provider = new MeterProvider({ resource, readers: [new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })] });
      const meter = provider.getMeter('shop', '2.0');
      meter.createCounter('orders').add(3, { region: 'eu' });
      meter.createHistogram('latency', { unit: 'ms' }).record(12.5);
      meter.createGauge('queue.depth').record(7);
      await provider.shutdown();
    });
    await exportsOf(new OTLPTraceExporter({ url, metadata: bearer(secret), compression: 'gzip' as never }), async (exporter) => {
      const provider = new BasicTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(exporter)] });
      const span = provider.getTracer('http', '0.9').startSpan('GET /orders', { kind: 1 });
      span.setStatus({ code: 2, message: 'upstream timeout' });
      span.end();
      await provider.forceFlush();
      await provider.shutdown();
    });

    const logs = await rows('in.c-grpc-app.logs', 3);
    expect(logs.map((r) => r.body).sort()).toEqual(['payment 0 slow', 'payment 1 slow', 'payment 2 slow']);
    expect(logs[0]).toMatchObject({ service_name: 'grpc-svc', severity_text: 'WARN', severity_number: '13', scope_name: 'checkout', scope_version: '1.2.3' });
    const metrics = await rows('in.c-grpc-app.metrics', 3);
    expect(metrics.find((r) => r.metric_name === 'orders')).toMatchObject({ metric_type: 'sum', value: '3', service_name: 'grpc-svc' });
    expect(metrics.find((r) => r.metric_name === 'latency')).toMatchObject({ metric_type: 'histogram', count: '1', sum: '12.5' });
    expect(metrics.find((r) => r.metric_name === 'queue.depth')).toMatchObject({ metric_type: 'gauge', value: '7' });
    const [span] = await rows('in.c-grpc-app.traces', 1);
    expect(span).toMatchObject({ name: 'GET /orders', kind: 'Server', status_code: 'Error', status_message: 'upstream timeout', service_name: 'grpc-svc' });
    expect(span.trace_id).toMatch(/^[0-9a-f]{32}$/);
    // The records carry the call's metadata as headers, never the secret.
    const recent = (await svc.call('GET', `${B}/sources/grpc-app/records?limit=1`)).json.records[0];
    expect(JSON.stringify(recent.headers)).not.toContain(secret);
    expect(Object.keys(recent.headers).map((h: string) => h.toLowerCase())).not.toContain('authorization');
  }, 90_000);

  it("runs the gRPC example of docs/otlp.md as written", async () => {
    const secret = await otlpSource('readme-grpc');
    const readme = readFileSync(resolve('docs/otlp.md'), 'utf8');
    const after = readme.indexOf('**The same application over gRPC**');
    expect(after).toBeGreaterThan(0);
    const code = /```js\n([\s\S]*?)```/.exec(readme.slice(after))![1];
    const dir = mkdtempSync(join(resolve('node_modules'), '.readme-otel-grpc-'));
    try {
      writeFileSync(join(dir, 'example.mjs'), code);
      const run = await promisify(execFile)(process.execPath, [join(dir, 'example.mjs')], {
        env: { ...process.env, OTLP_GRPC_URL: `http://${grpcAddress}`, OTLP_SECRET: secret }, encoding: 'utf8', timeout: 30_000,
      });
      expect(run.stderr).toBe('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await rows('in.c-readme-grpc.logs', 1))[0]).toMatchObject({ body: 'order placed', service_name: 'checkout', severity_text: 'INFO' });
    expect((await rows('in.c-readme-grpc.metrics', 1))[0]).toMatchObject({ metric_name: 'orders', value: '1', service_name: 'checkout' });
    expect((await rows('in.c-readme-grpc.traces', 1))[0]).toMatchObject({ name: 'POST /orders', service_name: 'checkout', kind: 'Internal' });
  }, 90_000);
});

describe('OTLP/gRPC bad calls against the running service', () => {
  it('answers each with its status and a message, stores nothing, and keeps serving', async () => {
    const secret = await otlpSource('guarded');
    await svc.task('POST', `${B}/sources`, { sourceId: 'paused', name: 'paused', type: 'otlp' });
    const pausedSecret = (await svc.call('GET', `${B}/sources/paused`)).json.otlp.secret;
    expect((await svc.task('PUT', `${B}/sources/paused/disable`)).status).toBe('success');
    const client = new OtlpGrpcClient(grpcAddress);
    try {
      const before = await stored('guarded');
      expect(await client.export('logs', logsRequest(1), null)).toMatchObject({ codeName: 'UNAUTHENTICATED' });
      expect(await client.export('logs', logsRequest(1), 'wrong')).toMatchObject({ codeName: 'UNAUTHENTICATED', details: 'No OTLP source has this secret.' });
      expect(await client.export('logs', logsRequest(1), pausedSecret)).toMatchObject({ codeName: 'PERMISSION_DENIED', details: 'The source "paused" is disabled.' });
      const bad = await client.export('logs', Buffer.from([0x0a, 0xff, 0xff]), secret);
      expect(bad.codeName).toBe('INVALID_ARGUMENT');
      expect(bad.details).toMatch(/^Cannot decode the protobuf logs export request/);
      const big = await client.export('logs', Buffer.alloc(MAX_BODY + 1, 0x20), secret);
      expect(big).toMatchObject({ codeName: 'RESOURCE_EXHAUSTED' });
      expect(big.details).toMatch(/larger than max/);
      const corrupt = await rawCall(grpcAddress, EXPORT_PATHS.logs, Buffer.from('no gzip here'), { compressed: true, encoding: 'gzip', secret });
      expect(corrupt).toMatchObject({ codeName: 'INTERNAL', details: 'Failed to decompress message' });

      // A gzip bomb: 256 MiB of zeros in about 256 KB, refused at the limit while grpc-js inflates it.
      const bomb = await gzipOfZeros(256 * 1024 * 1024);
      expect(bomb.length).toBeLessThan(MAX_BODY);
      const rssBefore = await serviceRss();
      const started = Date.now();
      const exploded = await rawCall(grpcAddress, EXPORT_PATHS.logs, bomb, { compressed: true, encoding: 'gzip', secret });
      expect(exploded.codeName).toBe('RESOURCE_EXHAUSTED');
      expect(exploded.details).toMatch(/decompresses to a size larger than 1048576/);
      // Milliseconds on an idle machine; a wide margin for a loaded one.
      expect(Date.now() - started).toBeLessThan(5_000);
      // Memory grew by far less than the bomb's 256 MiB.
      expect((await serviceRss()) - rssBefore).toBeLessThan(64 * 1024 * 1024);

      expect(await stored('guarded')).toBe(before);
      expect(await stored('paused')).toBe(0);
      expect(await svc.healthy()).toBe(true);
      expect((await client.export('logs', logsRequest(2), secret)).codeName).toBe('OK');
      expect(await stored('guarded')).toBe(before + 2);
    } finally {
      client.close();
    }
    const metrics = (await svc.call('GET', '/metrics')).text;
    // Also the calls grpc-js answers below Sluice's interceptor (too large, not inflating).
    for (const status of ['OK', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'INVALID_ARGUMENT', 'RESOURCE_EXHAUSTED', 'INTERNAL']) {
      expect(metrics).toMatch(new RegExp(`sluice_ingest_requests_total\\{route="otlp-grpc",status="${status}"\\} [1-9]`));
    }
    expect(metrics).toMatch(/sluice_ingest_request_duration_seconds_count\{route="otlp-grpc"\} [1-9]/);
  }, 60_000);

  it('says where it listens in the start log, and stops cleanly on SIGTERM', async () => {
    expect(svc.output()).toMatch(new RegExp(`"address":"127\\.0\\.0\\.1:${grpcPort}","msg":"OTLP/gRPC listening"`));
    expect(svc.output()).toMatch(new RegExp(`"otlpGrpcAddress":"127\\.0\\.0\\.1:${grpcPort}"[^\\n]*"msg":"sluice is ready`));
    expect(await svc.stop()).toEqual({ code: 0, signal: null });
    expect(svc.output()).toMatch(/"msg":"sluice stopped"/);
  });
});

describe('OTLP/gRPC connection limits of a running node', () => {
  it('resets a connection over --otlp-grpc-max-connections, counts it in the metrics, and serves the open one', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-otlp-grpc-cap-'));
    dirs.push(dataDir);
    const port = await freePort();
    const capped = new ChildService({ dataDir, env: { SLUICE_OTLP_GRPC_PORT: String(port), SLUICE_OTLP_GRPC_MAX_CONNECTIONS: '1', SLUICE_OTLP_GRPC_MIN_PING_INTERVAL: '1m' } });
    const first = new OtlpGrpcClient(`127.0.0.1:${port}`, { ownConnection: true });
    const second = new OtlpGrpcClient(`127.0.0.1:${port}`, { ownConnection: true });
    try {
      await capped.start();
      expect((await first.export('logs', logsRequest(1), 'nobody')).codeName).toBe('UNAUTHENTICATED');
      expect((await second.export('logs', logsRequest(1), 'nobody')).codeName).toBe('UNAVAILABLE');
      expect((await first.export('logs', logsRequest(1), 'nobody')).codeName).toBe('UNAUTHENTICATED');
      const metrics = (await capped.call('GET', '/metrics')).text;
      expect(metricValue(metrics, 'sluice_otlp_grpc_connections_refused_total', { limit: 'otlp-grpc' })).toBeGreaterThanOrEqual(1);
      expect(metricValue(metrics, 'sluice_otlp_grpc_connections')).toBe(1);
      expect(capped.output()).toMatch(/"maxConnections":1,[^\n]*"msg":"OTLP\/gRPC listening"/);
      expect(await capped.healthy()).toBe(true);
    } finally {
      first.close();
      second.close();
      await capped.dispose();
    }
  }, 60_000);
});

describe('OTLP/gRPC port', () => {
  it('ends the start with one clear line when the port is in use', async () => {
    const taken: Server = createServer();
    await new Promise<void>((res) => taken.listen(0, '127.0.0.1', res));
    const port = (taken.address() as { port: number }).port;
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-otlp-grpc-busy-'));
    dirs.push(dataDir);
    const busy = new ChildService({ dataDir, env: { SLUICE_OTLP_GRPC_PORT: String(port) } });
    try {
      await expect(busy.start()).rejects.toThrow(/exited while starting/);
      const lines = busy.output().split('\n').filter((l) => l.startsWith('Cannot start'));
      expect(lines).toEqual([expect.stringMatching(new RegExp(`^Cannot start: OTLP/gRPC cannot listen on 127\\.0\\.0\\.1:${port} \\(--otlp-grpc-port, SLUICE_OTLP_GRPC_PORT; 0 turns it off\\): .*`))]);
      expect(await busy.kill()).toMatchObject({ code: 1 });
    } finally {
      await busy.dispose();
      await new Promise<void>((res) => taken.close(() => res()));
    }
  });
});

/** gzip of `size` zero bytes, made in 1 MiB steps (the test never holds the inflated bytes). */
async function gzipOfZeros(size: number): Promise<Buffer> {
  const gzip = createGzip({ level: 9 });
  const out: Buffer[] = [];
  gzip.on('data', (d: Buffer) => out.push(d));
  const done = new Promise<void>((res, rej) => gzip.on('end', res).on('error', rej));
  const chunk = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < size; written += chunk.length) {
    if (!gzip.write(chunk)) await new Promise((r) => gzip.once('drain', r));
  }
  gzip.end();
  await done;
  return Buffer.concat(out);
}

/** The service's resident memory, from /proc. */
async function serviceRss(): Promise<number> {
  const status = readFileSync(`/proc/${svc.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}
