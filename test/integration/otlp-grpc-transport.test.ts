/**
 * The OTLP/gRPC listener on its own (as src/wiring/otlp-grpc.ts starts it), beside the OTLP/HTTP
 * plugin with the same in-flight budget and quotas, over an in-memory event log with failure
 * switches, called by a raw @grpc/grpc-js client over a real socket: what reaches the log, the
 * same records as over HTTP, partial_success, and every status code with its RetryInfo.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LmdbMetadataStore } from '../../src/adapters/metadata/lmdb-store.js';
import { sourceTopic } from '../../src/ports/event-log.js';
import type { Sink, Source } from '../../src/model/definition.js';
import { keys } from '../../src/definition/repository.js';
import { MetadataIngestSources } from '../../src/sources/http/index.js';
import { otlpApi } from '../../src/sources/otlp/index.js';
import { InflightBudget } from '../../src/sources/otlp/inflight.js';
import { OtlpIngest } from '../../src/sources/otlp/ingest.js';
import { otlpTypes } from '../../src/sources/otlp/schema.js';
import type { QuotaVerdict, SourceQuotas } from '../../src/sources/ingest/quota.js';
import type { IngestTarget } from '../../src/sources/ingest/sources.js';
import type { BacklogGate } from '../../src/actors/backlog-gate.js';
import { startOtlpGrpc, UNLIMITED, type OtlpGrpcListener } from '../../src/sources/otlp-grpc/index.js';
import { compileMapping } from '../../src/pipeline/columns/index.js';
import { MemoryEventLog } from '../helpers/memory-event-log.js';
import { GrpcCode, logsRequest, OtlpGrpcClient, rawCall, EXPORT_PATHS, spansRequest } from '../helpers/otlp-grpc.js';

const PROJECT = 11;
const BRANCH = 22;
const SECRET = 'g'.repeat(24) + 'R'.repeat(24);
const DISABLED_SECRET = 'd'.repeat(48);
const HTTP_SECRET = 'h'.repeat(48);
const MAX_BODY = 64 * 1024;
const at = { at: '2024-01-01T00:00:00.000Z', by: { type: 'user' as const, tokenId: '1' } };
const version = { ...at, number: 1, hash: '0123456789abcdef', description: 'New.' };

let dir: string;
let store: LmdbMetadataStore;
let log: MemoryEventLog;
let app: FastifyInstance;
let base: string;
let grpc: OtlpGrpcListener;
let client: OtlpGrpcClient;
let shuttingDown = false;
let behind = false;
/** What the quota stub answers next; undefined lets everything pass. */
let refuse: Extract<QuotaVerdict, { ok: false }> | undefined;
const taken: Array<{ sourceId: string; records: number; bytes: number }> = [];
const answers: number[] = [];

const quotas: SourceQuotas = {
  take(target: IngestTarget, records: number, bytes: number): QuotaVerdict {
    taken.push({ sourceId: target.source.sourceId, records, bytes });
    return refuse ?? { ok: true };
  },
};
const backlog = { refuses: () => behind } as unknown as BacklogGate;

function putSource(sourceId: string, secret: string, extra: Partial<Source> = {}): void {
  const source: Source = { projectId: PROJECT, branchId: BRANCH, sourceId, name: sourceId, description: '', type: 'otlp', secret, version, created: at, ...extra };
  store.transact((tx) => tx.put(keys.source(BRANCH, sourceId), source));
}

function putSink(sourceId: string, sinkId: string, columns: Sink['table']['mapping']['columns']): void {
  const sink: Sink = {
    projectId: PROJECT, branchId: BRANCH, sourceId, sinkId, name: sinkId, description: '', type: 'table',
    table: { type: 'keboola', tableId: `in.c-${sourceId}.${sinkId}`, mapping: { columns } }, version, created: at,
  };
  store.transact((tx) => tx.put(keys.sink(BRANCH, sourceId, sinkId), sink));
}

const logged = (sourceId: string) => log.read(sourceTopic(PROJECT, BRANCH, sourceId), 0, 1_000_000);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-otlp-grpc-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
  log = new MemoryEventLog();
  putSource('app', SECRET);
  putSink('app', 'all', [{ type: 'body', name: 'body' }]);
  // Every log record without attributes.user is rejected by this sink (partial_success).
  putSource('strict', 's'.repeat(48));
  putSink('strict', 'users', [{ type: 'path', name: 'user', path: 'attributes.user' }]);
  putSource('off', DISABLED_SECRET, { disabled: { ...at, reason: 'paused' } });
  putSource('web', HTTP_SECRET, { type: 'http' });
  const sources = new MetadataIngestSources(store, BRANCH);
  const mappings = { get: async (sink: Sink) => compileMapping(sink.table.mapping.columns) };
  // A small budget, shared by both transports: two requests in flight exceed it.
  const inflight = new InflightBudget(4000);
  app = Fastify({ logger: false });
  await app.register(otlpApi, {
    eventLog: log, sources, mappings, backlog, inflight, quotas,
    config: { projectId: PROJECT, maxBodyBytes: MAX_BODY },
    isShuttingDown: () => shuttingDown,
  });
  base = await app.listen({ host: '127.0.0.1', port: 0 });
  const ingest = new OtlpIngest({ eventLog: log, backlog, mappings, projectId: PROJECT, maxBodyBytes: MAX_BODY, inflight, quotas });
  grpc = await startOtlpGrpc({
    ingest, sources, maxBodyBytes: MAX_BODY, limits: UNLIMITED, isShuttingDown: () => shuttingDown, logger: pino({ level: 'silent' }), answered: (code) => answers.push(code),
  }, '127.0.0.1', 0);
  client = new OtlpGrpcClient(grpc.address);
});

afterEach(() => {
  log.releaseDurable();
  log.full = false;
  log.durableMode = 'immediate';
  shuttingDown = false;
  behind = false;
  refuse = undefined;
});

afterAll(async () => {
  client?.close();
  await grpc?.close();
  await app?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('OTLP/gRPC transport', () => {
  it('appends one batch of flattened records with their signal, address and the metadata without authorization', async () => {
    const before = logged('app').length;
    const appends = log.appendCalls;
    const answer = await client.export('traces', spansRequest(3), SECRET, { 'x-custom': 'yes' });
    expect(answer).toMatchObject({ codeName: 'OK' });
    expect(answer.response!.length).toBe(0);
    expect(log.appendCalls).toBe(appends + 1);
    const records = logged('app').slice(before).map((r) => r.record);
    expect(records).toHaveLength(3);
    for (const [i, record] of records.entries()) {
      expect(record.signal).toBe('traces');
      expect(JSON.parse(record.body.toString())).toMatchObject({ name: `op ${i}`, kind: 'Server', trace_id: '07'.repeat(16) });
      expect(record.ip).toBe('127.0.0.1');
      expect(record.headers['X-Custom']).toBe('yes');
      expect(record.headers['User-Agent']).toMatch(/grpc-node-js/);
      expect(Object.keys(record.headers).map((h) => h.toLowerCase())).not.toContain('authorization');
    }
    // The scheme in any case, as on HTTP.
    expect(await client.export('logs', logsRequest(1), null, {}, `bearer ${SECRET}`)).toMatchObject({ codeName: 'OK' });
  });

  it('stores the same records as OTLP/HTTP for the same request', async () => {
    const body = logsRequest(4, (i) => `same ${i}`);
    const before = logged('app').length;
    expect((await client.export('logs', body, SECRET)).codeName).toBe('OK');
    const res = await fetch(`${base}/otlp/${PROJECT}/app/${SECRET}/v1/logs`, { method: 'POST', body, headers: { 'content-type': 'application/x-protobuf' } });
    expect(res.status).toBe(200);
    const [viaGrpc, viaHttp] = [logged('app').slice(before, before + 4), logged('app').slice(before + 4)];
    expect(viaHttp).toHaveLength(4);
    expect(viaGrpc.map((r) => [r.record.signal, r.record.body.toString()])).toEqual(viaHttp.map((r) => [r.record.signal, r.record.body.toString()]));
  });

  it('answers partial_success as OTLP/HTTP does, and an empty request with an empty response', async () => {
    const body = logsRequest(3);
    const answer = await client.export('logs', body, 's'.repeat(48));
    expect(answer.codeName).toBe('OK');
    const t = otlpTypes().logsResponse;
    const grpcPartial = t.toObject(t.decode(answer.response!), { longs: Number });
    expect(grpcPartial).toMatchObject({ partialSuccess: { rejectedLogRecords: 3 } });
    expect(grpcPartial.partialSuccess.errorMessage).toMatch(/^3 of 3 records rejected; first error: sink "users"/);
    const res = await fetch(`${base}/otlp/${PROJECT}/strict/${'s'.repeat(48)}/v1/logs`, { method: 'POST', body, headers: { 'content-type': 'application/x-protobuf' } });
    expect(t.toObject(t.decode(Buffer.from(await res.arrayBuffer())), { longs: Number })).toEqual(grpcPartial);
    // Still stored: the sinks that can map them write them.
    expect(logged('strict')).toHaveLength(6);

    const before = logged('app').length;
    const empty = await client.export('metrics', Buffer.alloc(0), SECRET);
    expect(empty).toMatchObject({ codeName: 'OK' });
    expect(empty.response!.length).toBe(0);
    expect(logged('app')).toHaveLength(before);
  });

  it('refuses a missing or unknown secret (UNAUTHENTICATED) and a disabled source (PERMISSION_DENIED), storing nothing', async () => {
    const appends = log.appendCalls;
    const none = await client.export('logs', logsRequest(1), null);
    expect(none).toMatchObject({ codeName: 'UNAUTHENTICATED', details: 'Missing metadata "authorization: Bearer <secret>" with the OTLP source\'s secret.' });
    expect(await client.export('logs', logsRequest(1), null, {}, SECRET)).toMatchObject({ codeName: 'UNAUTHENTICATED' });
    expect(await client.export('logs', logsRequest(1), 'x'.repeat(48))).toMatchObject({ codeName: 'UNAUTHENTICATED', details: 'No OTLP source has this secret.' });
    // Secrets are per transport: an HTTP source's secret finds nothing here.
    expect(await client.export('logs', logsRequest(1), HTTP_SECRET)).toMatchObject({ codeName: 'UNAUTHENTICATED' });
    expect(await client.export('logs', logsRequest(1), DISABLED_SECRET)).toMatchObject({ codeName: 'PERMISSION_DENIED', details: 'The source "off" is disabled.' });
    // Refused on the metadata: the message is not even decoded.
    expect(await client.export('logs', Buffer.from([0xff, 0xff, 0xff]), 'x'.repeat(48))).toMatchObject({ codeName: 'UNAUTHENTICATED' });
    expect(log.appendCalls).toBe(appends);
  });

  it('refuses what it cannot decode with INVALID_ARGUMENT and a message, and what is too large with RESOURCE_EXHAUSTED', async () => {
    const appends = log.appendCalls;
    const bad = await client.export('logs', Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01]), SECRET);
    expect(bad.codeName).toBe('INVALID_ARGUMENT');
    expect(bad.details).toMatch(/^Cannot decode the protobuf logs export request: /);
    expect(bad.retryDelayMs).toBeUndefined();

    // Over the limit as sent...
    const big = logsRequest(2000, (i) => `a long enough line number ${i}`);
    expect(big.length).toBeGreaterThan(MAX_BODY);
    const tooLarge = await client.export('logs', big, SECRET);
    expect(tooLarge.codeName).toBe('RESOURCE_EXHAUSTED');
    expect(tooLarge.details).toMatch(/larger than max/);
    expect(tooLarge.retryDelayMs).toBeUndefined();
    // ...and after grpc-js inflated it: the same message gzipped is small, and refused all the same.
    const gzip = new OtlpGrpcClient(grpc.address, { gzip: true });
    try {
      const inflated = await gzip.export('logs', big, SECRET);
      expect(inflated.codeName).toBe('RESOURCE_EXHAUSTED');
      expect(inflated.details).toMatch(/decompresses to a size larger than/);
      // A gzipped message within the limit is taken.
      expect((await gzip.export('logs', logsRequest(5), SECRET)).codeName).toBe('OK');
    } finally {
      gzip.close();
    }
    expect(log.appendCalls).toBe(appends + 1);
  });

  it('answers a source over its quota with RESOURCE_EXHAUSTED and its RetryInfo (HTTP: 429 and its headers), storing nothing', async () => {
    const appends = log.appendCalls;
    refuse = {
      ok: false, limit: 'records', retryAfterMs: 2500, message: 'The source "app" is over its quota of 10 records per second.',
      headers: { 'retry-after': '3', 'ratelimit-policy': '"records";q=10;w=1', ratelimit: '"records";r=0;t=3' },
    };
    taken.length = 0;
    const body = logsRequest(3);
    const answer = await client.export('logs', body, SECRET);
    expect(answer).toMatchObject({ codeName: 'RESOURCE_EXHAUSTED', details: refuse.message, retryDelayMs: 2500, statusDetails: { code: GrpcCode.RESOURCE_EXHAUSTED, message: refuse.message } });
    // Asked once, with the records and their bytes as they would be stored.
    expect(taken).toHaveLength(1);
    expect(taken[0]).toMatchObject({ sourceId: 'app', records: 3 });
    const res = await fetch(`${base}/otlp/${PROJECT}/app/${SECRET}/v1/logs`, { method: 'POST', body, headers: { 'content-type': 'application/x-protobuf' } });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('3');
    expect(res.headers.get('ratelimit-policy')).toBe('"records";q=10;w=1');
    expect(res.headers.get('ratelimit')).toBe('"records";r=0;t=3');
    const status = otlpTypes().rpcStatus.toObject(otlpTypes().rpcStatus.decode(Buffer.from(await res.arrayBuffer()))) as { code: number; message: string };
    expect(status).toEqual({ code: 8, message: refuse.message });
    expect(log.appendCalls).toBe(appends);

    refuse = undefined;
    taken.length = 0;
    expect((await client.export('logs', body, SECRET)).codeName).toBe('OK');
    const stored = logged('app').slice(-3).reduce((n, r) => n + r.record.body.length, 0);
    expect(taken).toEqual([{ sourceId: 'app', records: 3, bytes: stored }]);
  });

  it('answers UNAVAILABLE with RetryInfo when the log is full, a durable write fails, or the node stops', async () => {
    log.full = true;
    const full = await client.export('logs', logsRequest(2), SECRET);
    expect(full).toMatchObject({ codeName: 'UNAVAILABLE', retryDelayMs: 1000, details: 'The event log cannot accept more data at the moment, please retry later.' });
    log.full = false;
    log.durableMode = 'reject';
    expect(await client.export('logs', logsRequest(2), SECRET)).toMatchObject({ codeName: 'UNAVAILABLE', retryDelayMs: 1000 });
    log.durableMode = 'immediate';
    shuttingDown = true;
    expect(await client.export('logs', logsRequest(2), SECRET)).toMatchObject({ codeName: 'UNAVAILABLE', retryDelayMs: 1000, details: 'The node is shutting down, please retry later.' });
  });

  it('answers RESOURCE_EXHAUSTED with RetryInfo while the sinks are too far behind or the shared in-flight budget is used up', async () => {
    behind = true;
    const appends = log.appendCalls;
    expect(await client.export('logs', logsRequest(1), SECRET)).toMatchObject({ codeName: 'RESOURCE_EXHAUSTED', retryDelayMs: 1000 });
    expect(log.appendCalls).toBe(appends);
    behind = false;

    // An OTLP/HTTP request holds the budget while its write waits: a gRPC call finds it used up.
    log.durableMode = 'hold';
    const big = spansRequest(60);
    expect(big.length).toBeGreaterThan(2000);
    const first = fetch(`${base}/otlp/${PROJECT}/app/${SECRET}/v1/traces`, { method: 'POST', body: big, headers: { 'content-type': 'application/x-protobuf' } });
    await new Promise((r) => setTimeout(r, 200));
    const second = await client.export('traces', big, SECRET);
    expect(second).toMatchObject({ codeName: 'RESOURCE_EXHAUSTED', retryDelayMs: 1000 });
    expect(second.details).toMatch(/Too many OTLP request bytes/);
    log.releaseDurable();
    expect((await first).status).toBe(200);
    log.durableMode = 'immediate';
    expect((await client.export('traces', big, SECRET)).codeName).toBe('OK');
  });

  it('leaves a compressed message that does not inflate to grpc-js (INTERNAL), and an unknown encoding (UNIMPLEMENTED)', async () => {
    const appends = log.appendCalls;
    const corrupt = await rawCall(grpc.address, EXPORT_PATHS.logs, Buffer.from('not gzip at all'), { compressed: true, encoding: 'gzip', secret: SECRET });
    expect(corrupt).toMatchObject({ codeName: 'INTERNAL', details: 'Failed to decompress message' });
    const unknown = await rawCall(grpc.address, EXPORT_PATHS.logs, Buffer.from('xx'), { compressed: true, encoding: 'br', secret: SECRET });
    expect(unknown.codeName).toBe('UNIMPLEMENTED');
    expect(unknown.details).toMatch(/unsupported encoding "br"/);
    // The bare call works at all: the same frame uncompressed is taken.
    expect((await rawCall(grpc.address, EXPORT_PATHS.logs, logsRequest(1), { secret: SECRET })).codeName).toBe('OK');
    expect(log.appendCalls).toBe(appends + 1);
  });

  it('reports the code of every call, also of those grpc-js answers itself', async () => {
    answers.length = 0;
    // One at a time: a call is reported when its stream closes, a moment after the client has its answer.
    const reported = async (n: number) => vi.waitFor(() => expect(answers).toHaveLength(n), { timeout: 5000 });
    await client.export('logs', logsRequest(1), SECRET);
    await reported(1);
    await client.export('logs', logsRequest(1), null);
    await reported(2);
    await client.export('logs', Buffer.from([0xff]), SECRET);
    await reported(3);
    // Below the interceptors: a message that does not inflate, an unknown encoding, one over the
    // limit, an unknown method, a deadline that passed while the call waited.
    await rawCall(grpc.address, EXPORT_PATHS.logs, Buffer.from('not gzip at all'), { compressed: true, encoding: 'gzip', secret: SECRET });
    await reported(4);
    await rawCall(grpc.address, EXPORT_PATHS.logs, Buffer.from('xx'), { compressed: true, encoding: 'br', secret: SECRET });
    await reported(5);
    await client.export('logs', Buffer.alloc(MAX_BODY + 1), SECRET);
    await reported(6);
    await rawCall(grpc.address, '/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export', Buffer.alloc(0), { secret: SECRET });
    await reported(7);
    log.durableMode = 'hold';
    const late = await client.export('logs', logsRequest(1), SECRET, {}, undefined, 300);
    expect(late.codeName).toBe('DEADLINE_EXCEEDED');
    // The server's own deadline ends the call while its write is still held. Released only then:
    // released at once, the write could finish (and the call answer OK) before the server's
    // deadline, which starts a moment after the client's, had passed.
    await reported(8);
    log.releaseDurable();
    // The held write finishing afterwards reports nothing more.
    await new Promise((r) => setTimeout(r, 100));
    expect(answers).toEqual([
      GrpcCode.OK, GrpcCode.UNAUTHENTICATED, GrpcCode.INVALID_ARGUMENT,
      GrpcCode.INTERNAL, GrpcCode.UNIMPLEMENTED, GrpcCode.RESOURCE_EXHAUSTED, GrpcCode.UNIMPLEMENTED, GrpcCode.DEADLINE_EXCEEDED,
    ]);
  });
});

describe('OTLP/gRPC shutdown', () => {
  it('lets a running call finish, then refuses new connections', async () => {
    const sources = new MetadataIngestSources(store, BRANCH);
    const mappings = { get: async (sink: Sink) => compileMapping(sink.table.mapping.columns) };
    const ingest = new OtlpIngest({ eventLog: log, mappings, projectId: PROJECT, maxBodyBytes: MAX_BODY, inflight: new InflightBudget(1 << 20) });
    const own = await startOtlpGrpc({ ingest, sources, maxBodyBytes: MAX_BODY, limits: UNLIMITED, isShuttingDown: () => false, logger: pino({ level: 'silent' }) }, '127.0.0.1', 0);
    const c = new OtlpGrpcClient(own.address);
    try {
      log.durableMode = 'hold';
      const running = c.export('logs', logsRequest(2), SECRET);
      await new Promise((r) => setTimeout(r, 200));
      const closed = own.close();
      await new Promise((r) => setTimeout(r, 100));
      log.releaseDurable();
      expect((await running).codeName).toBe('OK');
      await closed;
      const later = new OtlpGrpcClient(own.address);
      try {
        expect((await later.export('logs', logsRequest(1), SECRET)).codeName).toBe('UNAVAILABLE');
      } finally {
        later.close();
      }
    } finally {
      c.close();
      await own.close();
    }
  });
});
