/**
 * The OTLP plugin on its own (as src/wiring/http-app.ts registers it) over an in-memory event log with
 * failure switches: what reaches the log, durability, and the backpressure answers (429 and
 * 503 with Retry-After).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import cors from '@fastify/cors';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LmdbMetadataStore } from '../../src/adapters/metadata/lmdb-store.js';
import { sourceTopic } from '../../src/ports/event-log.js';
import type { SettingValue, Sink, Source } from '../../src/model/definition.js';
import { keys } from '../../src/definition/repository.js';
import { MetadataIngestSources } from '../../src/sources/http/index.js';
import { otlpApi } from '../../src/sources/otlp/index.js';
import { compileMapping } from '../../src/pipeline/columns/index.js';
import { otlpTypes } from '../../src/sources/otlp/schema.js';
import { MemoryEventLog } from '../helpers/memory-event-log.js';

const PROJECT = 11;
const BRANCH = 22;
const SECRET = 'o'.repeat(24) + 'T'.repeat(24);
const at = { at: '2024-01-01T00:00:00.000Z', by: { type: 'user' as const, tokenId: '1' } };
const version = { ...at, number: 1, hash: '0123456789abcdef', description: 'New.' };
const syncWait = (value: boolean): SettingValue[] => [{ key: 'storage.level.local.encoding.sync.wait', value }];

let dir: string;
let store: LmdbMetadataStore;
let log: MemoryEventLog;
let app: FastifyInstance;
let base: string;
let shuttingDown = false;
let sources: MetadataIngestSources;

function putSource(sourceId: string, extra: Partial<Source> = {}): void {
  const source: Source = { projectId: PROJECT, branchId: BRANCH, sourceId, name: sourceId, description: '', type: 'otlp', secret: SECRET, version, created: at, ...extra };
  store.transact((tx) => tx.put(keys.source(BRANCH, sourceId), source));
  sources?.invalidate();
}

function putSink(sourceId: string, sinkId: string, extra: Partial<Sink> = {}): void {
  const sink: Sink = {
    projectId: PROJECT, branchId: BRANCH, sourceId, sinkId, name: sinkId, description: '', type: 'table',
    table: { type: 'keboola', tableId: `in.c-${sourceId}.${sinkId}`, mapping: { columns: [{ type: 'body', name: 'body' }] } },
    version, created: at, ...extra,
  };
  store.transact((tx) => tx.put(keys.sink(BRANCH, sourceId, sinkId), sink));
  sources?.invalidate();
}

/** An ExportTraceServiceRequest of `n` spans, as protobuf. */
function spans(n: number): Buffer {
  const t = otlpTypes().traceRequest;
  const list = Array.from({ length: n }, (_, i) => ({ name: `op ${i}`, traceId: Buffer.alloc(16, 7), spanId: Buffer.alloc(8, i + 1), kind: 2 }));
  return Buffer.from(t.encode(t.fromObject({ resourceSpans: [{ scopeSpans: [{ spans: list }] }] })).finish());
}

const send = (sourceId: string, body: Buffer, headers: Record<string, string> = {}) =>
  fetch(`${base}/otlp/${PROJECT}/${sourceId}/${SECRET}/v1/traces`, { method: 'POST', body, headers: { 'content-type': 'application/x-protobuf', ...headers } });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-otlp-plugin-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
  log = new MemoryEventLog();
  app = Fastify({ logger: false, bodyLimit: 4 * 1024 * 1024 });
  await app.register(cors, { origin: '*', methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] });
  await app.register(otlpApi, {
    eventLog: log,
    sources: (sources = new MetadataIngestSources(store, BRANCH)),
    mappings: {
      get: async (sink: Sink) => {
        const mapping = await compileMapping(sink.table.mapping.columns);
        // Sink "stuck" stands for a template that takes forever: its check never ends.
        return sink.sinkId === 'stuck' ? { ...mapping, columnNames: mapping.columnNames, renderMany: () => new Promise<never>(() => {}) } : mapping;
      },
    },
    // A small budget, so that two requests in flight exceed it.
    config: { projectId: PROJECT, maxBodyBytes: 64 * 1024, maxInflightBytes: 4000 },
    isShuttingDown: () => shuttingDown,
  });
  base = await app.listen({ host: '127.0.0.1', port: 0 });
  putSource('waits');
  putSink('waits', 'a');
  putSource('hurries', { config: syncWait(false) });
  putSink('hurries', 'a');
  putSource('slow');
  putSink('slow', 'stuck', { table: { type: 'keboola', tableId: 'in.c-slow.stuck', mapping: { columns: [{ type: 'path', name: 'x', path: 'x' }] } } });
});

afterEach(() => {
  log.releaseDurable();
  log.full = false;
  log.durableMode = 'immediate';
  shuttingDown = false;
});

afterAll(async () => {
  await app?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('OTLP plugin', () => {
  it('appends one batch of flattened records with their signal and the headers without Authorization', async () => {
    const before = log.read(sourceTopic(PROJECT, BRANCH, 'waits'), 0, 1_000_000).length;
    const res = await send('waits', spans(3), { 'x-custom': 'yes' });
    expect(res.status).toBe(200);
    const logged = log.read(sourceTopic(PROJECT, BRANCH, 'waits'), 0, 1_000_000).slice(before);
    expect(logged).toHaveLength(3);
    for (const [i, { record }] of logged.entries()) {
      expect(record.signal).toBe('traces');
      expect(JSON.parse(record.body.toString())).toMatchObject({ name: `op ${i}`, kind: 'Server', trace_id: '07'.repeat(16) });
      expect(record.headers['X-Custom']).toBe('yes');
      expect(record.headers.Authorization).toBeUndefined();
    }
    const bearer = await fetch(`${base}/otlp/${PROJECT}/waits/v1/traces`, { method: 'POST', body: spans(1), headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${SECRET}` } });
    expect(bearer.status).toBe(200);
    const last = log.read(sourceTopic(PROJECT, BRANCH, 'waits'), 0, 1_000_000).at(-1)!;
    expect(Object.keys(last.record.headers)).not.toContain('Authorization');
  });

  it('waits for durability when a sink wants it, and not otherwise', async () => {
    log.durableMode = 'hold';
    let answered = false;
    const pending = send('waits', spans(1)).then((r) => {
      answered = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(answered).toBe(false);
    log.releaseDurable();
    expect((await pending).status).toBe(200);
    // sync.wait=false: answered while the write is still held.
    expect((await send('hurries', spans(1))).status).toBe(200);
  });

  it('answers without partial_success when the rejection check outlasts its deadline, records kept', async () => {
    const before = log.read(sourceTopic(PROJECT, BRANCH, 'slow'), 0, 1_000_000).length;
    const started = Date.now();
    const res = await send('slow', spans(2));
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
    expect(log.read(sourceTopic(PROJECT, BRANCH, 'slow'), 0, 1_000_000).length - before).toBe(2);
  });

  it('answers 429 with Retry-After while the in-flight budget is used up', async () => {
    log.durableMode = 'hold';
    const big = spans(60);
    expect(big.length).toBeGreaterThan(2000);
    const first = send('waits', big);
    await new Promise((r) => setTimeout(r, 100));
    const second = await send('waits', big);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('1');
    const status = otlpTypes().rpcStatus.toObject(otlpTypes().rpcStatus.decode(Buffer.from(await second.arrayBuffer()))) as { code: number };
    expect(status.code).toBe(8);
    log.releaseDurable();
    expect((await first).status).toBe(200);
    // The budget is free again.
    log.durableMode = 'immediate';
    expect((await send('waits', big)).status).toBe(200);
  });

  it('answers 503 with Retry-After when the log is full, a durable write fails, or the node stops', async () => {
    log.full = true;
    const fullProto = await send('waits', spans(2));
    expect(fullProto.status).toBe(503);
    expect(fullProto.headers.get('retry-after')).toBe('1');
    log.full = false;
    log.durableMode = 'reject';
    const failed = await send('waits', spans(2));
    expect(failed.status).toBe(503);
    log.durableMode = 'immediate';
    shuttingDown = true;
    const stopping = await fetch(`${base}/otlp/${PROJECT}/waits/${SECRET}/v1/logs`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(stopping.status).toBe(503);
    expect(stopping.headers.get('retry-after')).toBe('1');
    expect(await stopping.json()).toMatchObject({ code: 14, statusCode: 503, error: 'stream.in.shutdown' });
  });
});
