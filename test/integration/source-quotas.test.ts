/**
 * Per-source quotas (issue 25, item 3) against a real node (LMDB, DuckDB, the HTTP listener):
 * 429 with Retry-After and the RateLimit headers in the ingestion envelope on single records
 * (the fast path and the fastify route) and connector batches, nothing stored when refused, a
 * settings PATCH applied on the next request, bad values refused, the node-wide default flag,
 * the quota in the source views and the metrics, a compressed body counted as inflated, OTLP
 * over HTTP and gRPC sharing one source's buckets; and the load test: two sources loaded at
 * once for several seconds, the limited one gets its share (within 10 %) and the other no 429.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceTopic } from '../../src/ports/event-log.js';
import { TestService } from '../helpers/service.js';
import { freePort } from '../helpers/child-service.js';
import { logsRequest, OtlpGrpcClient } from '../helpers/otlp-grpc.js';

const RECORDS = 'source.quota.recordsPerSecond';
const BYTES = 'source.quota.bytesPerSecond';

interface Sent {
  status: number;
  headers: Headers;
  json: any;
}

async function post(url: string, body: string): Promise<Sent> {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  // Success answers are the text "OK": no JSON.
  return { status: res.status, headers: res.headers, json: await res.json().catch(() => undefined) };
}

/** Sends until the source is refused (a quota of a few records a second is spent within a few requests). */
async function sendUntilRefused(url: string, body: string, max = 50): Promise<{ accepted: Sent[]; refused: Sent }> {
  const accepted: Sent[] = [];
  for (let i = 0; i < max; i++) {
    const r = await post(url, body);
    if (r.status === 429) return { accepted, refused: r };
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    accepted.push(r);
  }
  throw new Error(`no 429 after ${max} requests`);
}

describe('per-source quotas', () => {
  let svc: TestService;
  const B = () => `/v1/branches/${svc.branchId}`;
  const stored = (sourceId: string) => svc.server.services.eventLog.headOffset(sourceTopic(svc.projectId, svc.branchId, sourceId));
  const ingestUrl = async (sourceId: string) => svc.server.address + (await svc.ingestPath(sourceId));
  const createSource = async (sourceId: string, settings?: Array<{ key: string; value: unknown }>) => {
    await svc.task('POST', `${B()}/sources`, { json: { sourceId, name: sourceId, type: 'http' } });
    if (settings) await svc.task('PATCH', `${B()}/sources/${sourceId}/settings`, { json: { settings } });
    return ingestUrl(sourceId);
  };

  beforeAll(async () => {
    // No sinks here, and no back-pressure: every 429 below is the quota's.
    svc = await TestService.start({ args: ['--max-sink-backlog', '0'] });
  });
  afterAll(async () => {
    await svc?.close();
  });

  for (const path of ['fast path', 'fastify route (?verbose=true)'] as const) {
    it(`refuses a single record over the quota with 429, Retry-After and RateLimit on the ${path}, and stores nothing of it`, async () => {
      const id = path === 'fast path' ? 'single-fast' : 'single-route';
      const base = await createSource(id, [{ key: RECORDS, value: 2 }]);
      const url = path === 'fast path' ? base : `${base}?verbose=true`;
      const { accepted, refused } = await sendUntilRefused(url, '{"n":1}');
      expect(accepted.length).toBeGreaterThanOrEqual(2);
      // Success answers carry what is left of the quota.
      expect(accepted[0].headers.get('ratelimit-policy')).toBe('"records";q=2;w=1');
      expect(accepted[0].headers.get('ratelimit')).toMatch(/^"records";r=\d+;t=\d+$/);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.headers.get('ratelimit-policy')).toBe('"records";q=2;w=1');
      expect(refused.headers.get('ratelimit')).toMatch(/^"records";r=0;t=1$/);
      expect(refused.headers.get('server')).toBe('Sluice/Stream/HTTPSource');
      // A browser client may read them (ingestion answers any origin).
      for (const r of [accepted[0], refused]) expect(r.headers.get('access-control-expose-headers')).toBe('retry-after, ratelimit, ratelimit-policy');
      expect(refused.json).toMatchObject({
        statusCode: 429,
        error: 'stream.in.tooManyRequests',
        message: `The source "${id}" is over its quota of 2 records a second on this node; retry after 1 s.`,
        sources: [{ sourceId: id, statusCode: 429, error: 'stream.in.tooManyRequests' }],
      });
      expect(refused.json.exceptionId).toMatch(/^sluice-stream-in-/);
      expect(stored(id)).toBe(accepted.length);
    });
  }

  it('refuses a connector batch over the quota whole, in the batch envelope, and stores none of its records', async () => {
    const url = `${await createSource('batches', [{ key: RECORDS, value: 5 }])}/batch`;
    const batch = (n: number) => Array.from({ length: n }, (_, i) => JSON.stringify({ i })).join('\n');
    const first = await post(url, batch(5));
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ accepted: 5, rejected: 0 });
    expect(first.headers.get('ratelimit')).toMatch(/^"records";r=0;t=1$/);
    const refused = await post(url, batch(3));
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('ratelimit-policy')).toBe('"records";q=5;w=1');
    expect(refused.json).toMatchObject({ statusCode: 429, error: 'stream.in.tooManyRequests', message: expect.stringContaining('quota of 5 records a second') });
    expect(stored('batches')).toBe(5);
    // A batch larger than the whole bucket is taken once the bucket is full (never refused for
    // ever), and the source then waits off the debt: 20 records at 5 a second.
    const big = await svc.until('a full bucket takes the large batch', async () => {
      const r = await post(url, batch(20));
      return r.status === 200 ? r : undefined;
    }, 10_000);
    expect(big.json.accepted).toBe(20);
    const after = await post(url, batch(1));
    expect(after.status).toBe(429);
    expect(Number(after.headers.get('retry-after'))).toBeGreaterThanOrEqual(3);
    expect(stored('batches')).toBe(25);
  });

  it('counts bytes after the body is read: a bytes quota refuses a large body and names its limit', async () => {
    const url = await createSource('bytes', [{ key: BYTES, value: '1KB' }]);
    const body = JSON.stringify({ pad: 'x'.repeat(600) });
    const { accepted, refused } = await sendUntilRefused(url, body);
    expect(accepted.length).toBeGreaterThanOrEqual(1);
    expect(refused.headers.get('ratelimit-policy')).toBe('"bytes";q=1024;qu="content-bytes";w=1');
    expect(refused.json.message).toBe('The source "bytes" is over its quota of 1KB a second on this node; retry after 1 s.');
    expect(stored('bytes')).toBe(accepted.length);
  });

  it('applies a settings PATCH on the very next request, and a removed quota lets everything through', async () => {
    const url = await createSource('patched', [{ key: RECORDS, value: 1 }]);
    await sendUntilRefused(url, '{}');
    await svc.task('PATCH', `${B()}/sources/patched/settings`, { json: { settings: [{ key: RECORDS, value: 100_000 }] } });
    const raised = await post(url, '{}');
    expect(raised.status, JSON.stringify([raised.json, [...raised.headers]])).toBe(200);
    expect(raised.headers.get('ratelimit-policy')).toBe('"records";q=100000;w=1');
    await svc.task('PATCH', `${B()}/sources/patched/settings`, { json: { settings: [{ key: RECORDS, value: null }] } });
    for (let i = 0; i < 20; i++) {
      const r = await post(url, '{}');
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit')).toBeNull();
    }
  });

  it('refuses bad quota values in the Stream envelope, naming the key and the range, and changes nothing', async () => {
    await createSource('validated', [{ key: RECORDS, value: 3 }]);
    const path = `${B()}/sources/validated/settings`;
    const negative = await svc.call('PATCH', path, { json: { settings: [{ key: RECORDS, value: -5 }] } });
    expect(negative.status).toBe(400);
    expect(negative.json).toMatchObject({ statusCode: 400, error: 'stream.api.badRequest', message: '- "source.quota.recordsPerSecond" must be from 0 to 10000000, got -5 (0: no quota).' });
    const tooBig = await svc.call('PATCH', path, { json: { settings: [{ key: BYTES, value: '20GB' }] } });
    expect(tooBig.status).toBe(400);
    expect(tooBig.json.message).toBe('- "source.quota.bytesPerSecond" must be from 0B to 10GB, got 20GB (0B: no quota).');
    const notANumber = await svc.call('PATCH', path, { json: { settings: [{ key: RECORDS, value: 'fast' }] } });
    expect(notANumber.status).toBe(400);
    expect(notANumber.json.message).toBe('- Invalid "source.quota.recordsPerSecond" value "fast": expected int.');
    // A sink does not take a source's quota.
    await svc.task('POST', `${B()}/sources/validated/sinks`, { json: { sinkId: 'rows', name: 'rows', type: 'table', table: { type: 'keboola', tableId: 'in.c-quotas.rows', mapping: { columns: [{ type: 'body', name: 'body' }] } } } });
    const onSink = await svc.call('PATCH', `${B()}/sources/validated/sinks/rows/settings`, { json: { settings: [{ key: RECORDS, value: 5 }] } });
    expect(onSink.status).toBe(400);
    expect(onSink.json.message).toBe('- Settings of the source, not of its sinks: "source.quota.recordsPerSecond"; set them on the source.');
    const sinkKeys = (await svc.call('GET', `${B()}/sources/validated/sinks/rows/settings`)).json.settings.map((s: any) => s.key);
    expect(sinkKeys.filter((k: string) => k.startsWith('source.'))).toEqual([]);
    // Nothing changed: the source's list shows its quota as it was (the key it sets; the other with ?all=true).
    const listed = (await svc.call('GET', path)).json.settings.filter((s: any) => s.key.startsWith('source.quota.'));
    expect(listed).toEqual([expect.objectContaining({ key: RECORDS, value: 3, overwritten: true, defaultValue: 0 })]);
    const all = (await svc.call('GET', `${path}?all=true`)).json.settings.filter((s: any) => s.key.startsWith('source.quota.'));
    expect(all.map((s: any) => [s.key, s.value])).toEqual([[BYTES, '0B'], [RECORDS, 3]]);
    const plain = (await svc.call('GET', `${B()}/sources/single-fast/settings`)).json.settings.map((s: any) => s.key);
    expect(plain).toContain(RECORDS);
  });

  it('shows the quota and a recent throttling in the source views and counts the throttled records in the metrics', async () => {
    const url = await createSource('shown', [{ key: RECORDS, value: 1 }, { key: BYTES, value: '1MB' }]);
    await createSource('unlimited');
    const before = (await svc.call('GET', `${B()}/sources/shown`)).json;
    expect(before.quota).toEqual({ recordsPerSecond: 1, bytesPerSecond: 1024 * 1024 });
    const { refused } = await sendUntilRefused(url, '{"a":1}');
    expect(refused.status).toBe(429);
    const after = (await svc.call('GET', `${B()}/sources/shown`)).json;
    expect(Date.now() - Date.parse(after.quota.throttledAt)).toBeLessThan(60_000);
    expect((await svc.call('GET', `${B()}/sources/unlimited`)).json.quota).toBeUndefined();
    const aggregated = (await svc.call('GET', `${B()}/aggregation/sources`)).json.sources;
    expect(aggregated.find((s: any) => s.sourceId === 'shown').quota.throttledAt).toBe(after.quota.throttledAt);
    expect(aggregated.find((s: any) => s.sourceId === 'unlimited').quota).toBeUndefined();
    const listed = (await svc.call('GET', `${B()}/sources`)).json.sources;
    expect(listed.find((s: any) => s.sourceId === 'shown').quota.recordsPerSecond).toBe(1);
    const metrics = (await svc.call('GET', '/metrics')).text;
    expect(metrics).toMatch(/sluice_ingest_throttled_records_total\{source="shown"\} [1-9]\d*/);
    expect(metrics).toMatch(/sluice_ingest_throttled_bytes_total\{source="shown"\} [1-9]\d*/);
    expect(metrics).not.toMatch(/sluice_ingest_throttled_records_total\{source="unlimited"\}/);
  });
});

describe('quotas on compressed bodies and OTLP', () => {
  let svc: TestService;
  let client: OtlpGrpcClient | undefined;
  beforeAll(async () => {
    svc = await TestService.start({ args: ['--max-sink-backlog', '0', '--otlp-grpc-port', String(await freePort())] });
  });
  afterAll(async () => {
    client?.close();
    await svc?.close();
  });
  const B = () => `/v1/branches/${svc.branchId}`;
  const stored = (sourceId: string) => svc.server.services.eventLog.headOffset(sourceTopic(svc.projectId, svc.branchId, sourceId));

  it('counts a gzip body by its inflated bytes', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { sourceId: 'zipped', name: 'zipped', type: 'http' } });
    await svc.task('PATCH', `${B()}/sources/zipped/settings`, { json: { settings: [{ key: BYTES, value: '10KB' }] } });
    const url = svc.server.address + (await svc.ingestPath('zipped'));
    // 8 000 bytes that gzip to a few dozen: the first fits 10KB, the second does not.
    const body = gzipSync(JSON.stringify({ pad: 'a'.repeat(8_000) }));
    expect(body.length).toBeLessThan(200);
    const send = () => fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    const first = await send();
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit')).toMatch(/^"bytes";r=\d+;t=1$/);
    expect(Number(/r=(\d+)/.exec(first.headers.get('ratelimit')!)![1])).toBeLessThan(10 * 1024 - 8_000);
    const second = await send();
    expect(second.status).toBe(429);
    expect(stored('zipped')).toBe(1);
  });

  it('refuses OTLP over HTTP (429 with the headers) and over gRPC (RESOURCE_EXHAUSTED with RetryInfo) from the same buckets, storing nothing refused', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { sourceId: 'otel', name: 'otel', type: 'otlp' } });
    await svc.task('PATCH', `${B()}/sources/otel/settings`, { json: { settings: [{ key: RECORDS, value: 10 }] } });
    const { otlp } = (await svc.call('GET', `${B()}/sources/otel`)).json;
    client = new OtlpGrpcClient(svc.server.otlpGrpcAddress!);
    // 10 log records over gRPC spend the bucket; the next export over either transport is refused.
    expect(await client.export('logs', logsRequest(10), otlp.secret)).toMatchObject({ codeName: 'OK' });
    const grpc = await client.export('logs', logsRequest(2), otlp.secret);
    expect(grpc).toMatchObject({ codeName: 'RESOURCE_EXHAUSTED', details: expect.stringContaining('over its quota of 10 records a second') });
    expect(grpc.retryDelayMs).toBeGreaterThan(0);
    expect(grpc.retryDelayMs).toBeLessThanOrEqual(1_000);
    const http = await fetch(`${svc.server.address}${new URL(otlp.url).pathname}/v1/logs`, {
      method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: logsRequest(5),
    });
    expect(http.status).toBe(429);
    expect(Number(http.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(http.headers.get('ratelimit-policy')).toBe('"records";q=10;w=1');
    expect(stored('otel')).toBe(10);
  });
});

describe('the node-wide default quota', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await TestService.start({ args: ['--max-sink-backlog', '0', '--source-max-records-per-second', '2'] });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('limits a source without its own quota, shows the default in its settings, and spares a source that sets 0', async () => {
    const B = `/v1/branches/${svc.branchId}`;
    await svc.task('POST', `${B}/sources`, { json: { sourceId: 'plain', name: 'plain', type: 'http' } });
    await svc.task('POST', `${B}/sources`, { json: { sourceId: 'exempt', name: 'exempt', type: 'http' } });
    await svc.task('PATCH', `${B}/sources/exempt/settings`, { json: { settings: [{ key: RECORDS, value: 0 }] } });
    const plain = svc.server.address + (await svc.ingestPath('plain'));
    const exempt = svc.server.address + (await svc.ingestPath('exempt'));
    const { refused } = await sendUntilRefused(plain, '{}');
    expect(refused.headers.get('ratelimit-policy')).toBe('"records";q=2;w=1');
    for (let i = 0; i < 20; i++) expect((await post(exempt, '{}')).status).toBe(200);
    const row = (await svc.call('GET', `${B}/sources/plain/settings`)).json.settings.find((s: any) => s.key === RECORDS);
    expect(row).toMatchObject({ value: 2, defaultValue: 2, overwritten: false });
    expect(row.description).toContain('(--source-max-records-per-second)');
    expect((await svc.call('GET', `${B}/sources/plain`)).json.quota.recordsPerSecond).toBe(2);
    expect((await svc.call('GET', `${B}/sources/exempt`)).json.quota).toBeUndefined();
  });
});

describe('quotas under load', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await TestService.start({ args: ['--max-sink-backlog', '0'] });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('gives a loaded source its share (rate x window + burst, within 10 %) while another loaded source gets no 429', async () => {
    const B = `/v1/branches/${svc.branchId}`;
    const RATE = 400;
    const BATCH = 20;
    const WORKERS = 3;
    const DURATION_MS = 5_000;
    await svc.task('POST', `${B}/sources`, { json: { sourceId: 'noisy', name: 'noisy', type: 'http' } });
    await svc.task('PATCH', `${B}/sources/noisy/settings`, { json: { settings: [{ key: RECORDS, value: RATE }] } });
    await svc.task('POST', `${B}/sources`, { json: { sourceId: 'quiet', name: 'quiet', type: 'http' } });
    const noisy = `${svc.server.address}${await svc.ingestPath('noisy')}/batch`;
    const quiet = `${svc.server.address}${await svc.ingestPath('quiet')}/batch`;
    const body = Array.from({ length: BATCH }, (_, i) => JSON.stringify({ i })).join('\n');

    const counts = { noisy: { accepted: 0, refused: 0, other: 0 }, quiet: { accepted: 0, refused: 0, other: 0 } };
    let first = Infinity;
    let last = 0;
    const started = performance.now();
    const worker = async (which: 'noisy' | 'quiet') => {
      // Bounded in time: each worker stops after DURATION_MS.
      while (performance.now() - started < DURATION_MS) {
        const sentAt = performance.now();
        const r = await fetch(which === 'noisy' ? noisy : quiet, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
        await r.arrayBuffer();
        const c = counts[which];
        if (r.status === 200) {
          c.accepted += BATCH;
          if (which === 'noisy') {
            first = Math.min(first, sentAt);
            last = Math.max(last, performance.now());
          }
        } else if (r.status === 429) c.refused += BATCH;
        else c.other++;
      }
    };
    await Promise.all([...Array.from({ length: WORKERS }, () => worker('noisy')), ...Array.from({ length: WORKERS }, () => worker('quiet'))]);

    const windowS = (last - first) / 1000;
    const share = RATE * windowS + RATE;
    const stored = (id: string) => svc.server.services.eventLog.headOffset(sourceTopic(svc.projectId, svc.branchId, id));
    const report = JSON.stringify({ counts, windowS, share });
    expect(counts.noisy.other, report).toBe(0);
    expect(counts.quiet.other, report).toBe(0);
    // The limited source was pushed past its quota the whole time ...
    expect(counts.noisy.refused, report).toBeGreaterThan(counts.noisy.accepted);
    // ... and got its share, no more (a batch's worth of rounding), no less than 90 %.
    expect(counts.noisy.accepted, report).toBeLessThanOrEqual(share * 1.1);
    expect(counts.noisy.accepted, report).toBeGreaterThanOrEqual(share * 0.9);
    expect(windowS, report).toBeGreaterThan(DURATION_MS / 1000 - 1);
    // The other source was never refused, and took more than the limited one.
    expect(counts.quiet.refused, report).toBe(0);
    expect(counts.quiet.accepted, report).toBeGreaterThan(counts.noisy.accepted);
    // What was answered 200 is what the log holds; nothing refused was kept.
    expect(stored('noisy')).toBe(counts.noisy.accepted);
    expect(stored('quiet')).toBe(counts.quiet.accepted);
  }, 30_000);
});
