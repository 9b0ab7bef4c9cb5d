/**
 * See it run: `GET /metrics` after real traffic (HTTP records, a connector batch, OTLP, an
 * import, a job), with the values asserted, not only the names; the metrics port and token;
 * liveness and readiness, which flips to 503 while the PostgreSQL target is down.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { POSTGRES_START_TIMEOUT_MS, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';
import { hasMetric, metricValue } from '../helpers/prometheus.js';
import { VERSION } from '../../src/version.js';

const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '300ms'];

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;

async function scrape(base = svc.server.address, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${base}/metrics`, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

async function rows(tableId: string, n: number): Promise<string[][]> {
  return svc.until(`${n} rows in ${tableId}`, async () => {
    const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=1000`);
    const all = res.status === 200 ? (parse(res.text) as string[][]).slice(1) : [];
    return all.length >= n ? all : undefined;
  }, 20_000);
}

describe('metrics after real traffic', () => {
  beforeAll(async () => {
    svc = await TestService.start({ args: [...FAST, '--metrics-port', '0'] });
  });
  afterAll(async () => svc?.close());

  it('counts ingestion, imports, jobs and the process, with the values of the traffic sent', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Shop', type: 'http' } });
    const sink = await svc.task('POST', `${B()}/sources/shop/sinks`, {
      json: { sinkId: 'orders', name: 'orders', type: 'table', table: { type: 'keboola', tableId: 'in.c-shop.orders', mapping: { columns: [{ type: 'path', name: 'id', path: 'id', rawString: true }] } } },
    });
    expect(sink.status).toBe('success');
    await svc.task('PATCH', `${B()}/sources/shop/sinks/orders/settings`, {
      json: { settings: [{ key: 'storage.level.staging.upload.trigger.interval', value: '1s' }, { key: 'storage.level.target.import.trigger.count', value: 8 }] },
    });
    const path = await svc.ingestPath('shop');
    let bytes = 0;
    for (let i = 1; i <= 5; i++) {
      const body = JSON.stringify({ id: `o${i}` });
      bytes += Buffer.byteLength(body);
      expect((await svc.call('POST', path, { token: null, body })).status).toBe(200);
    }
    const batch = '{"id":"b1"}\n{"id":"b2"}\n{"id":"b3"}';
    bytes += 3 * '{"id":"b1"}'.length;
    expect((await svc.call('POST', `${path}/batch`, { token: null, body: batch })).status).toBe(200);
    // A wrong secret: a 4xx of the record route, nothing appended.
    expect((await svc.call('POST', path.replace(/\/[^/]+$/, '/wrong-secret'), { token: null, body: '{}' })).status).toBe(404);

    // OTLP: one log record through an OTLP source.
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Otel', type: 'otlp' } });
    const otel = (await svc.call('GET', `${B()}/sources/otel`)).json;
    const otlpPath = new URL(otel.otlp.url).pathname;
    const logs = { resourceLogs: [{ resource: { attributes: [] }, scopeLogs: [{ scope: {}, logRecords: [{ timeUnixNano: '1700000000000000000', body: { stringValue: 'hello' } }] }] }] };
    expect((await svc.call('POST', `${otlpPath}/v1/logs`, { token: null, json: logs })).status).toBe(200);

    await rows('in.c-shop.orders', 8);

    // A job of the echo component.
    const job = await svc.call('POST', '/jobs', { json: { component: 'sluice.echo', configData: { parameters: { destination: 'in.c-echo.params', a: '1' } } } });
    expect(job.status).toBe(201);
    await svc.until('the job', async () => ((await svc.call('GET', `/jobs/${job.json.id}`)).json.isFinished ? true : undefined), 20_000);

    const text = await svc.until('the gauges after the import', async () => {
      const t = await scrape();
      return metricValue(t, 'sluice_sink_files', { source: 'shop', sink: 'orders', state: 'imported' }) >= 1 ? t : undefined;
    });
    expect(metricValue(text, 'sluice_build_info', { version: VERSION, target: 'duckdb', event_log: 'lmdb' })).toBe(1);
    expect(metricValue(text, 'sluice_ingest_requests_total', { route: 'record', status: '2xx' })).toBe(5);
    expect(metricValue(text, 'sluice_ingest_requests_total', { route: 'record', status: '4xx' })).toBe(1);
    expect(metricValue(text, 'sluice_ingest_requests_total', { route: 'batch', status: '2xx' })).toBe(1);
    expect(metricValue(text, 'sluice_ingest_requests_total', { route: 'otlp', status: '2xx' })).toBe(1);
    expect(metricValue(text, 'sluice_ingest_request_duration_seconds_count', { route: 'record' })).toBe(6);
    expect(metricValue(text, 'sluice_ingest_records_total', { source: 'shop', signal: 'http' })).toBe(8);
    expect(metricValue(text, 'sluice_ingest_records_total', { source: 'otel', signal: 'logs' })).toBe(1);
    expect(metricValue(text, 'sluice_ingest_bytes_total', { source: 'shop' })).toBe(bytes);
    expect(metricValue(text, 'sluice_log_records_appended_total', { source: 'shop' })).toBe(8);
    expect(metricValue(text, 'sluice_log_bytes', { source: 'shop' })).toBeGreaterThan(bytes);
    expect(metricValue(text, 'sluice_table_rows_imported_total', { table: 'in.c-shop.orders' })).toBe(8);
    expect(metricValue(text, 'sluice_import_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, 'sluice_upload_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(metricValue(text, 'sluice_sink_lag_records', { source: 'shop', sink: 'orders' })).toBe(0);
    expect(metricValue(text, 'sluice_sink_lag_seconds', { source: 'shop', sink: 'orders' })).toBe(0);
    expect(metricValue(text, 'sluice_imports_failed_total')).toBe(0);
    expect(metricValue(text, 'sluice_jobs_total', { component: 'sluice.echo', status: 'success' })).toBe(1);
    expect(metricValue(text, 'sluice_job_duration_seconds_count', { component: 'sluice.echo' })).toBe(1);
    expect(metricValue(text, 'sluice_table_rows_imported_total', { table: 'in.c-echo.params' })).toBe(0); // job output is not a sink's import
    expect(hasMetric(text, 'nodejs_eventloop_lag_seconds')).toBe(true);
    expect(hasMetric(text, 'process_resident_memory_bytes')).toBe(true);
    // Never a label of unbounded values: no record ids, addresses or secrets.
    expect(text).not.toMatch(/o1|b2|127\.0\.0\.1|wrong-secret/);

    // The same on the metrics port.
    const onPort = await scrape(svc.server.metricsAddress!);
    expect(metricValue(onPort, 'sluice_ingest_records_total', { source: 'shop', signal: 'http' })).toBe(8);
    const other = await fetch(`${svc.server.metricsAddress}/v1`);
    expect(other.status).toBe(404);
  });

  it('has a series at 0 for every counter of a known sink, component and reason, before anything counts', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Quiet', type: 'http' } });
    await svc.task('POST', `${B()}/sources/quiet/sinks`, {
      json: { sinkId: 'calm', name: 'calm', type: 'table', table: { type: 'keboola', tableId: 'in.c-quiet.calm', mapping: { columns: [{ type: 'body', name: 'body' }] } } },
    });
    const sink = { source: 'quiet', sink: 'calm' };
    const text = await svc.until('the new sink\'s series', async () => {
      const t = await scrape();
      return hasMetric(t, 'sluice_sink_records_failed_total', sink) ? t : undefined;
    });
    const zero: Array<[string, Record<string, string>]> = [
      ['sluice_sink_records_failed_total', { ...sink, reason: 'template' }],
      ['sluice_sink_records_failed_total', { ...sink, reason: 'path_not_found' }],
      ['sluice_sink_records_mapped_total', sink],
      ['sluice_sink_records_filtered_total', sink],
      ['sluice_sink_give_ups_total', { ...sink, branch: String(svc.branchId) }],
      ['sluice_imports_failed_total', sink],
      ['sluice_import_retries_pending', sink],
      ['sluice_ingest_refused_total', { reason: 'log_full' }],
      ['sluice_ingest_refused_total', { reason: 'shutdown' }],
      ['sluice_cluster_handovers_total', { direction: 'taken' }],
      ['sluice_jobs_total', { component: 'keboola.ex-generic-v2', status: 'error' }],
      ['sluice_job_duration_seconds_count', { component: 'keboola.ex-generic-v2' }],
    ];
    for (const [name, labels] of zero) {
      expect({ name, labels, present: hasMetric(text, name, labels) }).toEqual({ name, labels, present: true });
      expect({ name, labels, value: metricValue(text, name, labels) }).toEqual({ name, labels, value: 0 });
    }
  });

  it('shows the lag of records a sink has not mapped yet, in records and seconds', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Slow', type: 'http' } });
    await svc.task('POST', `${B()}/sources/slow/sinks`, {
      json: { sinkId: 's', name: 's', type: 'table', table: { type: 'keboola', tableId: 'in.c-slow.s', mapping: { columns: [{ type: 'body', name: 'body' }] } } },
    });
    // Stop the sinks' work: what arrives now stays unmapped.
    await svc.server.services.runtime.stop();
    const path = await svc.ingestPath('slow');
    for (let i = 0; i < 3; i++) expect((await svc.call('POST', path, { token: null, body: `{"n":${i}}` })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    const text = await scrape();
    expect(metricValue(text, 'sluice_log_records_appended_total', { source: 'slow' })).toBe(3);
    expect(metricValue(text, 'sluice_sink_lag_records', { source: 'slow', sink: 's' })).toBe(3);
    const seconds = metricValue(text, 'sluice_sink_lag_seconds', { source: 'slow', sink: 's' });
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThan(30);
  });

  it('answers liveness and readiness', async () => {
    const live = await fetch(`${svc.server.address}/health/live`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok', version: VERSION });
    const ready = await fetch(`${svc.server.address}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { metadata: 'ok', eventLog: 'ok', target: 'ok', draining: 'ok' } });
    const index = await svc.call('GET', '/v1', { token: null });
    // The body stays the reference's exactly; the version is a header.
    expect(index.json).toEqual({ api: 'stream', documentation: 'https://api.test/v1/documentation' });
    expect(index.headers.get('x-sluice-version')).toBe(VERSION);
  });
});

describe('the metrics token', () => {
  let secured: TestService;
  beforeAll(async () => {
    secured = await TestService.start({ args: ['--metrics-token', 's3cret-scrape', '--metrics-port', '0'] });
  });
  afterAll(async () => secured?.close());

  it('answers 401 and nothing else without the right token, on both listeners', async () => {
    for (const base of [secured.server.address, secured.server.metricsAddress!]) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 's3cret-scrape' }] as Record<string, string>[]) {
        const res = await fetch(`${base}/metrics`, { headers });
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        expect(await res.text()).toBe('Unauthorized\n');
      }
      const ok = await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer s3cret-scrape' } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toMatch(/^# HELP /m);
    }
    // Probes need no token.
    expect((await fetch(`${secured.server.address}/health/ready`)).status).toBe(200);
  });
});

describe('readiness with a PostgreSQL target', () => {
  let pg: TestPostgres;
  let node: TestService;
  beforeAll(async () => {
    pg = await startTestPostgres();
    node = await TestService.start({ args: ['--target', await pg.createDatabase('ready')] });
  }, POSTGRES_START_TIMEOUT_MS);
  afterAll(async () => {
    await node?.close();
    await pg?.stop();
  });

  it('flips to 503 naming the target while the database is down, and back when it returns', async () => {
    expect((await fetch(`${node.server.address}/health/ready`)).status).toBe(200);
    await pg.kill();
    const down = await fetch(`${node.server.address}/health/ready`);
    expect(down.status).toBe(503);
    const body = (await down.json()) as { status: string; checks: Record<string, string> };
    expect(body.status).toBe('not ready');
    expect(body.checks.target).toMatch(/^PostgreSQL at 127\.0\.0\.1:\d+\/ready_\S+ does not answer$/);
    expect(body.checks.eventLog).toBe('ok');
    // Liveness does not depend on the target.
    expect((await fetch(`${node.server.address}/health/live`)).status).toBe(200);
    await pg.restart();
    await node.until('ready again', async () => ((await fetch(`${node.server.address}/health/ready`)).status === 200 ? true : undefined));
  }, 60_000);
});

describe('logs', () => {
  it('keep tokens, source secrets and #-key values out of every line, log probes at debug and say "stopped" last', async () => {
    const lines: string[] = [];
    const { pino } = await import('pino');
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    const node = await TestService.start({ logger, args: FAST });
    const b = `/v1/branches/${node.branchId}`;
    try {
      await node.task('POST', `${b}/sources`, { json: { name: 'Secrets', type: 'http' } });
      await node.task('POST', `${b}/sources/secrets/sinks`, {
        json: { sinkId: 'k', name: 'k', type: 'table', table: { type: 'keboola', tableId: 'in.c-secrets.k', mapping: { columns: [{ type: 'path', name: 'user', path: 'user', rawString: true }] } } },
      });
      await node.task('PATCH', `${b}/sources/secrets/sinks/k/settings`, {
        json: { settings: [{ key: 'storage.level.staging.upload.trigger.interval', value: '1s' }, { key: 'storage.level.target.import.trigger.count', value: 1 }] },
      });
      const source = (await node.call('GET', `${b}/sources/secrets`)).json;
      const secret = new URL(source.http.url).pathname.split('/').pop()!;
      const ingest = new URL(source.http.url).pathname;
      expect((await node.call('POST', ingest, { token: null, body: '{"user":"a"}' })).status).toBe(200);
      expect((await node.call('POST', `${ingest}?verbose=true`, { token: null, body: '{"nouser":1}' })).status).toBe(200);
      expect((await node.call('POST', `${ingest}/batch`, { token: null, body: '{"user":"b"}\n{"user":"c"}' })).status).toBe(200);
      expect((await node.call('POST', ingest.replace(secret, `${secret}x`), { token: null, body: '{}' })).status).toBe(404);
      const token = (await node.call('POST', '/v2/storage/tokens', { json: { description: 'reader', canReadAllFileUploads: true } })).json.token as string;
      expect((await node.call('GET', '/v2/storage/tokens/verify', { token })).status).toBe(200);
      expect((await node.call('GET', '/v2/storage/tokens/verify', { token: `${token}nope` })).status).toBe(401);
      const job = await node.call('POST', '/jobs', { json: { component: 'sluice.echo', configData: { parameters: { destination: 'in.c-secrets.echo', '#password': 'pw-kept-out-of-logs' } } } });
      await node.until('the job', async () => ((await node.call('GET', `/jobs/${job.json.id}`)).json.isFinished ? true : undefined), 20_000);
      await node.until('a row', async () => {
        const preview = await node.call('GET', '/v2/storage/tables/in.c-secrets.k/data-preview');
        return preview.status === 200 && preview.text.includes('"a"') ? true : undefined;
      });
      const exported = await node.call('POST', '/v2/storage/tables/in.c-secrets.k/export-async', { json: {} });
      const done = await node.until('the export', async () => {
        const j = (await node.call('GET', new URL(exported.json.url).pathname)).json;
        return j.status === 'success' ? j : undefined;
      });
      const file = (await node.call('GET', `/v2/storage/files/${done.results.file.id}`)).json;
      const signature = new URL(file.url).searchParams.get('signature')!;
      expect((await fetch(`${node.server.address}${new URL(file.url).pathname}${new URL(file.url).search}`)).status).toBe(200);
      for (let i = 0; i < 3; i++) {
        await fetch(`${node.server.address}/health/ready`);
        await fetch(`${node.server.address}/health-check`);
      }
      await node.stop();
      const text = lines.join('');
      for (const s of [MASTER_TOKEN, secret, token, 'pw-kept-out-of-logs', signature]) expect(text, `a log line holds "${s}"`).not.toContain(s);
      // Probes: debug, never info.
      const parsed = lines.map((l) => JSON.parse(l) as { level: number; msg: string; req?: { url?: string }; url?: string });
      const probes = parsed.filter((l) => /\/health/.test(JSON.stringify(l.req ?? l.url ?? '')));
      expect(probes.length).toBeGreaterThan(0);
      expect(probes.filter((l) => l.level > 20)).toEqual([]);
      expect(parsed.at(-1)?.msg).toBe('sluice stopped');
    } finally {
      await node.close().catch(() => undefined);
    }
  }, 60_000);
});
