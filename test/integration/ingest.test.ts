import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import cors from '@fastify/cors';
import formbody from '@fastify/formbody';
import { createServer, type RequestListener } from 'node:http';
import { connect } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LmdbMetadataStore } from '../../src/adapters/metadata/lmdb-store.js';
import { sourceTopic } from '../../src/ports/event-log.js';
import type { SettingValue, Sink, Source, SourceType } from '../../src/model/definition.js';
import { keys } from '../../src/definition/repository.js';
import { formatByteLimit, ingestApi, MetadataIngestSources } from '../../src/sources/http/index.js';
import { MemoryEventLog } from '../helpers/memory-event-log.js';
import { createIngestFastPath } from '../../src/sources/http/fast-path.js';

const silent = { warn: () => undefined, error: () => undefined };
/** Requests the fast path answered itself. */
let fastHandled = 0;

const PROJECT = 11;
const BRANCH = 22;
const MAX_BODY = 8000;
const MAX_BATCH_BODY = 64 * 1024;
const SECRET = 'a'.repeat(24) + 'B'.repeat(24);
const SYNC_WAIT = 'storage.level.local.encoding.sync.wait';

let dir: string;
let store: LmdbMetadataStore;
let log: MemoryEventLog;
let app: FastifyInstance;
let base: string;
let shuttingDown = false;

const at = { at: '2024-01-01T00:00:00.000Z', by: { type: 'user' as const, tokenId: '1' } };
let ingestSources: MetadataIngestSources;
const version = { ...at, number: 1, hash: '0123456789abcdef', description: 'New.' };

function putSource(sourceId: string, extra: Partial<Source> = {}): Source {
  const source: Source = {
    projectId: PROJECT, branchId: BRANCH, sourceId, name: sourceId, description: '', type: 'http' as SourceType, secret: SECRET,
    version, created: at, ...extra,
  };
  store.transact((tx) => tx.put(keys.source(BRANCH, sourceId), source));
  // As the service does after every change of definitions.
  ingestSources?.invalidate();
  return source;
}

function putSink(sourceId: string, sinkId: string, extra: Partial<Sink> = {}): Sink {
  const sink: Sink = {
    projectId: PROJECT, branchId: BRANCH, sourceId, sinkId, name: sinkId, description: '', type: 'table',
    table: { type: 'keboola', tableId: `in.c-${sourceId}.${sinkId}`, mapping: { columns: [{ type: 'body', name: 'body' }] } },
    version, created: at, ...extra,
  };
  store.transact((tx) => tx.put(keys.sink(BRANCH, sourceId, sinkId), sink));
  ingestSources?.invalidate();
  return sink;
}

const syncWait = (value: boolean): SettingValue[] => [{ key: SYNC_WAIT, value }];
const url = (sourceId: string, secret = SECRET, project: string | number = PROJECT) => `${base}/stream/${project}/${sourceId}/${secret}`;
const topic = (sourceId: string) => sourceTopic(PROJECT, BRANCH, sourceId);

async function post(target: string, body: RequestInit['body'] = '{"a":1}', headers: Record<string, string> = { 'Content-Type': 'application/json' }) {
  const res = await fetch(target, { method: 'POST', body, headers });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/**
 * Every case runs twice: against the fastify route alone, and with the fast path in front of it
 * (ingest/fast-path.ts), which must answer exactly as the route does whatever it takes on.
 */
describe.each([
  ['the fastify route', false],
  ['the fast path in front of the route', true],
])('ingestion through %s', (_name, fast) => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-ingest-'));
    store = new LmdbMetadataStore(join(dir, 'metadata'));
    log = new MemoryEventLog();
    // Built like src/wiring/http-app.ts: global CORS of the management API, form and JSON parsers, and
    // the root not-found handler; the ingestion plugin must win inside /stream.
    ingestSources = new MetadataIngestSources(store, BRANCH);
    // With the fast path, the common request is answered before fastify routes it (as src/wiring/http-app.ts does).
    const fastPath = fast
      ? createIngestFastPath({ eventLog: log, sources: ingestSources, projectId: PROJECT, maxBodyBytes: MAX_BODY, isShuttingDown: () => shuttingDown, log: silent })
      : undefined;
    app = Fastify({
      logger: false,
      bodyLimit: 4 * 1024 * 1024,
      ...(fastPath ? { serverFactory: (handler: RequestListener) => createServer((req, res) => (fastPath(req, res) ? void fastHandled++ : handler(req, res))) } : {}),
    });
    await app.register(formbody);
    await app.register(cors, { origin: '*', methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], allowedHeaders: ['Content-Type', 'X-StorageApi-Token', 'X-KBC-ProjectId'] });
    await app.register(ingestApi, {
      eventLog: log,
      sources: ingestSources,
      config: { projectId: PROJECT, maxBodyBytes: MAX_BODY, maxBatchBodyBytes: MAX_BATCH_BODY },
      isShuttingDown: () => shuttingDown,
    });
    app.setNotFoundHandler((_req, reply) => reply.code(404).send({ statusCode: 404, error: 'stream.api.endpointNotFound', message: 'root' }));
    base = await app.listen({ host: '127.0.0.1', port: 0 });

    putSource('orders');
    putSink('orders', 'sink-a');
    putSink('orders', 'sink-b');
    putSink('orders', 'sink-off', { disabled: { ...at, reason: 'API' } });
    putSink('orders', 'sink-gone', { deleted: at });

    putSource('fast', { config: syncWait(false) });
    putSink('fast', 'sink-a');
    putSink('fast', 'sink-b');
    // Disabled and deleted sinks do not count, even if they would wait.
    putSink('fast', 'sink-off', { config: syncWait(true), disabled: { ...at, reason: 'API' } });
    putSink('fast', 'sink-gone', { config: syncWait(true), deleted: at });

    putSource('mixed');
    putSink('mixed', 'waits');
    putSink('mixed', 'hurries', { config: syncWait(false) });

    putSource('lonely');
    putSource('lonely-fast', { config: syncWait(false) });
    putSource('off', { disabled: { ...at, reason: 'API' } });
    putSource('gone', { deleted: at });
    putSource('telemetry', { type: 'otlp' });
  });

  afterAll(async () => {
    await app?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  afterEach(() => {
    log.releaseDurable();
    log.full = false;
    log.durableMode = 'immediate';
    log.durableDelayMs = 0;
    shuttingDown = false;
  });

  describe('acknowledgement', () => {
    it('answers 200 only after the record is durable when a sink waits for sync (the default)', async () => {
      log.durableMode = 'hold';
      const before = log.records(topic('orders')).length;
      let settled = false;
      const pending = post(url('orders')).then((r) => {
        settled = true;
        return r;
      });
      await new Promise((r) => setTimeout(r, 150));
      expect(settled).toBe(false);
      expect(log.heldCount).toBe(1);
      expect(log.records(topic('orders')).length).toBe(before + 1);
      expect(log.releaseDurable()).toBe(1);
      const res = await pending;
      expect(res.status).toBe(200);
      expect(res.text).toBe('OK');
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(log.headOffset(topic('orders'))).toBe(before + 1);
    });

    it('waits for a slow durable write too', async () => {
      log.durableDelayMs = 200;
      const started = Date.now();
      const res = await post(url('orders'));
      expect(res.status).toBe(200);
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    });

    it('answers 202 at once when no enabled sink waits for sync', async () => {
      log.durableMode = 'hold';
      const res = await post(url('fast'));
      expect(res.status).toBe(202);
      expect(res.text).toBe('OK');
      expect(log.heldCount).toBe(1);
      expect(log.records(topic('fast')).length).toBeGreaterThan(0);
    });

    it('waits when any one enabled sink waits', async () => {
      log.durableMode = 'hold';
      const pending = post(url('mixed'), 'x', { 'Content-Type': 'text/plain' });
      await new Promise((r) => setTimeout(r, 100));
      expect(log.heldCount).toBe(1);
      log.releaseDurable();
      expect((await pending).status).toBe(200);
    });

    it('keeps a 202 answer when the durable write fails later (logged, not unhandled)', async () => {
      log.durableMode = 'reject';
      const res = await post(url('fast'));
      expect(res.status).toBe(202);
    });
  });

  describe('the record', () => {
    it('carries the peer IP, canonical headers and the raw body bytes', async () => {
      const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 0x0a, 0x0d, 0x7f]);
      const startedAt = Date.now();
      const res = await post(url('orders'), bytes, {
        'Content-Type': 'application/octet-stream',
        'x-custom-THING': 'Value 1',
        'X-Forwarded-For': '203.0.113.9',
        'user-agent': 'ingest-test',
      });
      expect(res.status).toBe(200);
      const records = log.records(topic('orders'));
      const { record } = records[records.length - 1];
      expect(record.ip).toBe('127.0.0.1');
      expect(record.signal).toBe('');
      expect(Buffer.compare(record.body, bytes)).toBe(0);
      expect(record.receivedAt).toBeInstanceOf(Date);
      expect(record.receivedAt.getTime()).toBeGreaterThanOrEqual(startedAt - 5);
      expect(record.headers).toMatchObject({
        'Content-Type': 'application/octet-stream',
        'X-Custom-Thing': 'Value 1',
        'X-Forwarded-For': '203.0.113.9',
        'User-Agent': 'ingest-test',
        'Content-Length': String(bytes.length),
      });
      expect(record.headers.Host).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(Object.keys(record.headers).every((k) => /^[A-Z]/.test(k))).toBe(true);
    });

    it('takes any content type, JSON and form bodies unparsed, and an empty body', async () => {
      for (const [body, type] of [['{"a": [1, 2]}', 'application/json; charset=utf-8'], ['a=1&b=2', 'application/x-www-form-urlencoded'], ['<x/>', 'application/xml'], ['{not json', 'application/json']]) {
        const res = await post(url('orders'), body, { 'Content-Type': type });
        expect(res.status, type).toBe(200);
        const records = log.records(topic('orders'));
        expect(records[records.length - 1].record.body.toString('utf8')).toBe(body);
      }
      const empty = await fetch(url('orders'), { method: 'POST' });
      expect(empty.status).toBe(200);
      const records = log.records(topic('orders'));
      expect(records[records.length - 1].record.body.length).toBe(0);
    });

    it('gives every record its own ascending offset in the source topic', async () => {
      const before = log.records(topic('orders')).length;
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(url('orders'), `{"i":${i}}`)));
      expect(answers.every((a) => a.status === 200)).toBe(true);
      const records = log.records(topic('orders'));
      expect(records.length).toBe(before + 20);
      const offsets = records.map((r) => r.offset);
      expect(new Set(offsets).size).toBe(offsets.length);
      expect([...offsets].sort((a, b) => a - b)).toEqual(offsets);
    });
  });

  describe('sources without enabled sinks', () => {
    it('keeps the record and answers OK', async () => {
      const res = await post(url('lonely'), 'kept');
      expect(res.status).toBe(200);
      expect(res.text).toBe('OK');
      const records = log.records(topic('lonely'));
      expect(records[records.length - 1].record.body.toString()).toBe('kept');
    });

    it('says so in the verbose answer', async () => {
      const message = 'No enabled sink found. The record is kept and will be delivered to sinks enabled later.';
      const res = await post(`${url('lonely')}?verbose=true`);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        statusCode: 200,
        message,
        sources: [{ projectId: PROJECT, sourceId: 'lonely', branchId: BRANCH, statusCode: 200, message, sinks: [] }],
      });
      const fast = await post(`${url('lonely-fast')}?verbose=true`);
      expect(fast.status).toBe(202);
      expect(fast.json.message).toBe(message);
    });
  });

  describe('verbose answers', () => {
    it('lists every enabled sink as processed after a durable write', async () => {
      const res = await post(`${url('orders')}?verbose=true`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.json).toEqual({
        statusCode: 200,
        message: 'Successfully written to 2/2 sinks.',
        sources: [{
          projectId: PROJECT, sourceId: 'orders', branchId: BRANCH, statusCode: 200, message: 'Successfully written to 2/2 sinks.',
          sinks: [{ sinkId: 'sink-a', statusCode: 200, message: 'processed' }, { sinkId: 'sink-b', statusCode: 200, message: 'processed' }],
        }],
      });
    });

    it('lists them as accepted without sync wait', async () => {
      const res = await post(`${url('fast')}?verbose=true`);
      expect(res.status).toBe(202);
      expect(res.json.sources[0].sinks).toEqual([{ sinkId: 'sink-a', statusCode: 202, message: 'accepted' }, { sinkId: 'sink-b', statusCode: 202, message: 'accepted' }]);
      expect(res.json.message).toBe('Successfully written to 2/2 sinks.');
    });

    it('answers text with verbose=false', async () => {
      const res = await post(`${url('orders')}?verbose=false`);
      expect(res.text).toBe('OK');
    });
  });

  describe('request errors', () => {
    const notFound = { statusCode: 404, error: 'stream.in.noSourceFound', message: 'The specified combination of projectID, sourceID and secret was not found.' };

    it('rejects a project id that is not an integer', async () => {
      const res = await post(url('orders', SECRET, 'foo'));
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ statusCode: 400, error: 'stream.in.badRequest', message: 'Invalid project ID "foo".' });
    });

    it('does not find another project, an unknown source, a wrong secret, a deleted source or an OTLP source', async () => {
      const before = log.topicNames().map((t) => [t, log.records(t).length]);
      for (const target of [url('orders', SECRET, 12), url('nope'), url('orders', 'x'.repeat(48)), url('orders', SECRET.slice(1)), url('gone'), url('telemetry')]) {
        const res = await post(target);
        expect(res.status, target).toBe(404);
        expect(res.json, target).toEqual(notFound);
      }
      expect(log.topicNames().map((t) => [t, log.records(t).length])).toEqual(before);
    });

    it('answers disabledSource for a disabled source with the right secret', async () => {
      const res = await post(url('off'));
      expect(res.status).toBe(404);
      expect(res.json).toEqual({ statusCode: 404, error: 'stream.in.disabledSource', message: 'The source "off" is disabled.' });
      expect(log.records(topic('off'))).toEqual([]);
      expect((await post(url('off', 'wrong'))).json).toEqual(notFound);
    });

    it('sees a rotated secret, a disabled and a deleted source on the next request', async () => {
      putSource('rotating');
      expect((await post(url('rotating'))).status).toBe(200);
      const next = 'z'.repeat(48);
      putSource('rotating', { secret: next });
      expect((await post(url('rotating'))).status).toBe(404);
      expect((await post(url('rotating', next))).status).toBe(200);
      putSource('rotating', { secret: next, disabled: { ...at, reason: 'API' } });
      expect((await post(url('rotating', next))).json.error).toBe('stream.in.disabledSource');
      putSource('rotating', { secret: next, deleted: at });
      expect((await post(url('rotating', next))).json.error).toBe('stream.in.noSourceFound');
    });

    it('refuses a body over the limit and stores nothing', async () => {
      const before = log.records(topic('orders')).length;
      const res = await post(url('orders'), 'x'.repeat(MAX_BODY + 1), { 'Content-Type': 'text/plain' });
      expect(res.status).toBe(413);
      expect(res.json).toEqual({ statusCode: 413, error: 'stream.in.bodyTooLarge', message: 'Request body size is over the maximum "8000B".' });
      // Chunked, without Content-Length: cut off while reading.
      const chunks = [Buffer.alloc(5000, 1), Buffer.alloc(5000, 2)];
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          const next = chunks.shift();
          if (next) controller.enqueue(next);
          else controller.close();
        },
      });
      const chunked = await fetch(url('orders'), { method: 'POST', body: stream, duplex: 'half' } as RequestInit);
      expect(chunked.status).toBe(413);
      expect(((await chunked.json()) as any).error).toBe('stream.in.bodyTooLarge');
      expect(log.records(topic('orders')).length).toBe(before);
      // Exactly the limit is fine.
      expect((await post(url('orders'), 'x'.repeat(MAX_BODY), { 'Content-Type': 'text/plain' })).status).toBe(200);
    });

    it('formats limits as the reference does', () => {
      expect(formatByteLimit(1024 * 1024)).toBe('1MB');
      expect(formatByteLimit(4 * 1024 * 1024)).toBe('4MB');
      expect(formatByteLimit(8000)).toBe('8000B');
      expect(formatByteLimit(16 * 1024)).toBe('16KB');
    });

    it('answers 503 logFull with Retry-After when the log is full, and acknowledges nothing', async () => {
      log.full = true;
      const before = log.records(topic('orders')).length;
      const res = await post(url('orders'));
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.json).toMatchObject({ statusCode: 503, error: 'stream.in.logFull', message: expect.stringMatching(/cannot accept more data.*retry later\.$/) });
      expect(res.json.exceptionId).toMatch(/^sluice-stream-in-/);
      expect(res.json.sources[0]).toMatchObject({ sourceId: 'orders', statusCode: 503, error: 'stream.in.logFull', message: 'Written to 0/2 sinks.' });
      const fast = await post(`${url('fast')}?verbose=true`);
      expect(fast.status).toBe(503);
      expect(log.records(topic('orders')).length).toBe(before);
    });

    it('answers 503 logFull when the durable write fails, and the record is gone', async () => {
      log.durableMode = 'reject';
      const before = log.records(topic('orders')).length;
      const res = await post(url('orders'));
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.json.error).toBe('stream.in.logFull');
      expect(log.records(topic('orders')).length).toBe(before);
    });

    it('answers 500 genericError with an exception id when the log fails unexpectedly, and goes on', async () => {
      const append = log.append.bind(log);
      log.append = () => {
        throw new Error('disk on fire');
      };
      try {
        const res = await post(url('fast'));
        expect(res.status).toBe(500);
        expect(res.json).toMatchObject({ statusCode: 500, error: 'stream.in.genericError' });
        expect(res.json.message).toMatch(/^Application error\. Please contact our support with exception id \(sluice-stream-in-.+\) attached\.$/);
        expect(res.json.message).toContain(res.json.exceptionId);
      } finally {
        log.append = append;
      }
      expect((await post(url('fast'))).status).toBe(202);
    });

    it('answers 503 shutdown while the node stops', async () => {
      shuttingDown = true;
      const before = log.records(topic('orders')).length;
      const res = await post(url('orders'));
      expect(res.status).toBe(503);
      expect(res.json).toMatchObject({ statusCode: 503, error: 'stream.in.shutdown' });
      expect(res.headers.get('retry-after')).toBe('1');
      expect(log.records(topic('orders')).length).toBe(before);
    });
  });

  describe('routes', () => {
    const routeNotFound = { statusCode: 404, error: 'stream.in.routeNotFound', message: 'Not found, please send data using POST /stream/<projectID>/<sourceID>/<secret>' };

    it('answers OPTIONS with the ingestion CORS policy, also to a browser preflight', async () => {
      for (const headers of [{} as Record<string, string>, { Origin: 'https://example.com', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type,x-anything' }]) {
        const res = await fetch(url('orders'), { method: 'OPTIONS', headers });
        expect(res.status).toBe(200);
        expect(res.headers.get('allow')).toBe('OPTIONS, POST');
        expect(res.headers.get('access-control-allow-methods')).toBe('OPTIONS, POST');
        expect(res.headers.get('access-control-allow-headers')).toBe('*');
        expect(res.headers.get('access-control-expose-headers')).toBe('*');
        expect(res.headers.get('access-control-allow-origin')).toBe('*');
      }
    });

    it('lets browsers read the answer of a POST', async () => {
      const res = await fetch(url('orders'), { method: 'POST', body: 'x', headers: { Origin: 'https://example.com' } });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('server')).toBe('Sluice/Stream/HTTPSource');
    });

    it('answers routeNotFound for other paths and methods under /stream', async () => {
      const cases: Array<[string, string]> = [
        ['GET', url('orders')], ['PUT', url('orders')], ['DELETE', url('orders')], ['POST', `${base}/stream/${PROJECT}/orders`],
        ['POST', `${url('orders')}/extra`], ['GET', `${base}/stream`], ['POST', `${base}/stream/`], ['OPTIONS', `${base}/stream/x`], ['OPTIONS', `${base}/stream`],
      ];
      for (const [method, target] of cases) {
        const res = await fetch(target, { method });
        expect(res.status, `${method} ${target}`).toBe(404);
        expect(await res.json(), `${method} ${target}`).toEqual(routeNotFound);
      }
    });

    it('leaves not-found answers outside /stream to the app', async () => {
      const res = await fetch(`${base}/streams/x`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as any).error).toBe('stream.api.endpointNotFound');
    });
  });

  describe('MetadataIngestSources', () => {
    it('caches the source and its enabled sinks until invalidated, the sinks at most for the TTL', () => {
      let now = 1_000;
      const sources = new MetadataIngestSources(store, BRANCH, { sinksTtlMs: 500, now: () => now });
      putSource('cached');
      putSink('cached', 's1');
      expect(sources.lookup('cached')?.enabledSinks.map((s) => s.sinkId)).toEqual(['s1']);
      putSink('cached', 's2');
      putSink('cached', 's1', { disabled: { ...at, reason: 'API' } });
      now += 499;
      expect(sources.lookup('cached')?.enabledSinks.map((s) => s.sinkId)).toEqual(['s1']);
      now += 1;
      expect(sources.lookup('cached')?.enabledSinks.map((s) => s.sinkId)).toEqual(['s2']);
      putSink('cached', 's3');
      putSource('cached', { secret: 'new' });
      expect(sources.lookup('cached')?.source.secret).toBe(SECRET);
      sources.invalidate();
      expect(sources.lookup('cached')?.source.secret).toBe('new');
      expect(sources.lookup('cached')?.enabledSinks.map((s) => s.sinkId)).toEqual(['s2', 's3']);
      putSource('cached', { disabled: { ...at, reason: 'API' } });
      sources.invalidate();
      expect(sources.lookup('cached')).toMatchObject({ source: { disabled: {} }, enabledSinks: [] });
      putSource('cached', { deleted: at });
      sources.invalidate();
      expect(sources.lookup('cached')).toBeUndefined();
      expect(sources.lookup('')).toBeUndefined();
      expect(sources.lookup('a/b')).toBeUndefined();
    });

    it('reads the sinks on every call with a TTL of 0', () => {
      const sources = new MetadataIngestSources(store, BRANCH, { sinksTtlMs: 0 });
      putSource('uncached');
      expect(sources.lookup('uncached')?.enabledSinks).toEqual([]);
      putSink('uncached', 's1');
      expect(sources.lookup('uncached')?.enabledSinks.map((s) => s.sinkId)).toEqual(['s1']);
    });
  });

  describe('connector batches: POST .../batch', () => {
    const batchUrl = (sourceId: string, secret = SECRET) => `${url(sourceId, secret)}/batch`;

    it('appends every record of an NDJSON batch as one append, with the request headers, and answers 200 with counts', async () => {
      const before = log.records(topic('orders')).length;
      const calls = log.appendCalls;
      const res = await post(batchUrl('orders'), '{"n":1}\n{"n":2}\n{"n":3}\n', { 'x-kafka-topic': 'orders' });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ statusCode: 200, message: 'Successfully written 3 of 3 records.', accepted: 3, rejected: 0, errors: [] });
      expect(log.appendCalls).toBe(calls + 1);
      const records = log.records(topic('orders')).slice(before);
      expect(records.map((r) => r.record.body.toString())).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
      expect(records.every((r) => r.record.headers['X-Kafka-Topic'] === 'orders')).toBe(true);
      expect(new Set(records.map((r) => r.record.receivedAt.getTime())).size).toBe(1);
    });

    it('takes a JSON array whatever the content type says (connectors often send none or text/plain)', async () => {
      const before = log.records(topic('orders')).length;
      const res = await post(batchUrl('orders'), '[{"n":1},{"n":2}]', { 'Content-Type': 'text/plain' });
      expect(res.status).toBe(200);
      expect(res.json.accepted).toBe(2);
      expect(log.records(topic('orders')).length).toBe(before + 2);
    });

    it('answers a partially bad batch 2xx, keeps the good records and reports the bad ones', async () => {
      const before = log.records(topic('orders')).length;
      const res = await post(batchUrl('orders'), '{"n":1},{"n":}, {"n":3}');
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ accepted: 2, rejected: 1, message: 'Successfully written 2 of 3 records; 1 rejected.' });
      expect(res.json.errors).toEqual([{ index: 1, message: expect.stringMatching(/^The record is not valid JSON/) }]);
      expect(log.records(topic('orders')).slice(before).map((r) => r.record.body.toString())).toEqual(['{"n":1}', '{"n":3}']);
    });

    it('refuses a Java toString body with 400 and a message that says how to fix the connector', async () => {
      const before = log.records(topic('orders')).length;
      const res = await post(batchUrl('orders'), '{customer_name=Ed, trip_cost=29.1}', { 'Content-Type': 'text/plain' });
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('stream.in.invalidBatch');
      expect(res.json.message).toContain('JsonConverter');
      expect(log.records(topic('orders')).length).toBe(before);
    });

    it('refuses an empty batch with 400', async () => {
      const res = await post(batchUrl('orders'), '\n');
      expect(res.status).toBe(400);
      expect(res.json.error).toBe('stream.in.emptyBatch');
    });

    it('answers 202 when nothing waits for sync, 503 with Retry-After when the log is full', async () => {
      expect((await post(batchUrl('fast'), '{"n":1}\n')).status).toBe(202);
      log.full = true;
      const before = log.records(topic('orders')).length;
      const res = await post(batchUrl('orders'), '{"n":1}\n{"n":2}\n');
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.json.error).toBe('stream.in.logFull');
      expect(log.records(topic('orders')).length).toBe(before);
    });

    it('has its own, larger body limit, and authenticates like the single-record route', async () => {
      const big = Array.from({ length: 500 }, (_, n) => JSON.stringify({ n, pad: 'x'.repeat(20) })).join('\n');
      expect(Buffer.byteLength(big)).toBeGreaterThan(MAX_BODY);
      expect((await post(batchUrl('orders'), big)).json.accepted).toBe(500);
      const tooBig = await post(batchUrl('orders'), 'x'.repeat(MAX_BATCH_BODY + 1));
      expect(tooBig.status).toBe(413);
      expect(tooBig.json.message).toBe('Request body size is over the maximum "64KB".');
      expect((await post(batchUrl('orders', 'wrong'), '{"n":1}')).status).toBe(404);
      expect((await post(batchUrl('off'), '{"n":1}')).json.error).toBe('stream.in.disabledSource');
    });
  });
  describe('the fast path', () => {
    it('answers a plain POST itself and leaves a verbose one, a chunked one and an unknown source to fastify', async () => {
      const before = fastHandled;
      expect((await post(url('fast'))).status).toBe(202);
      const plain = fastHandled - before;
      expect((await post(`${url('fast')}?verbose=true`)).status).toBe(202);
      const chunked = new ReadableStream({ start: (c) => { c.enqueue(new TextEncoder().encode('{"a":1}')); c.close(); } });
      const res = await fetch(url('fast'), { method: 'POST', body: chunked, headers: { 'Content-Type': 'application/json' }, duplex: 'half' } as RequestInit);
      expect(res.status).toBe(202);
      expect((await post(url('nobody'))).status).toBe(404);
      expect([plain, fastHandled - before]).toEqual(fast ? [1, 1] : [0, 0]);
    });

    it('appends nothing of a request whose body never arrives in full', async () => {
      const head = log.headOffset(topic('fast'));
      const socket = connect(Number(new URL(base).port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(`POST /stream/${PROJECT}/fast/${SECRET} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"cut":`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(log.headOffset(topic('fast'))).toBe(head);
      // The server goes on.
      expect((await post(url('fast'))).status).toBe(202);
      expect(log.headOffset(topic('fast'))).toBe(head + 1);
    });
  });
});
