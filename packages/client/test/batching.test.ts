/**
 * Batching against a local HTTP server: batches cut by count, bytes and linger time, the body
 * framed and gzipped as the batch endpoint reads it, the outcome of each batch (onBatch) and of
 * every flush.
 */
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { ClientClosedError, createClient, InvalidRecordError, type BatchResult } from '@sluice/client';
import { accepted, ScriptedServer, until } from './scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('batching', () => {
  it('cuts batches by count and posts them to <url>/batch as NDJSON', async () => {
    server = await ScriptedServer.start();
    const client = createClient({ url: server.url, maxBatchRecords: 3, compression: 'none', lingerMs: 60_000 });
    for (let i = 0; i < 7; i++) client.send({ n: i });
    const result = await client.close();
    expect(server.seen.map((r) => r.records.length)).toEqual([3, 3, 1]);
    expect(server.seen[0].url).toBe('/stream/1/orders/secret/batch');
    expect(server.seen[0].headers['content-type']).toBe('application/x-ndjson');
    expect(server.seen[0].headers['content-encoding']).toBeUndefined();
    expect(server.seen[0].text).toBe('{"n":0}\n{"n":1}\n{"n":2}\n');
    expect(result).toEqual({ batches: 3, records: 7, accepted: 7, rejected: 0, failedBatches: 0, rejections: [] });
  });

  it('cuts batches by bytes: a record that would take the body past maxBatchBytes opens the next batch', async () => {
    server = await ScriptedServer.start();
    // Each record is 10 bytes, 11 with its line end: three fit in 33 bytes, a fourth does not.
    const client = createClient({ url: server.url, maxBatchBytes: 33, maxBatchRecords: 100, compression: 'none', lingerMs: 60_000, concurrency: 1 });
    for (let i = 0; i < 7; i++) client.send(`{"n":"${i}a"}`);
    await client.flush();
    expect(server.seen.map((r) => r.records.length)).toEqual([3, 3, 1]);
    expect(server.seen.every((r) => r.raw.length <= 33)).toBe(true);
    // A record no batch can hold is refused at once.
    expect(() => client.send({ text: 'x'.repeat(40) })).toThrow(InvalidRecordError);
    expect(() => client.send({ text: 'x'.repeat(40) })).toThrow(/more than a batch may hold \(maxBatchBytes 33/);
    await client.close();
  });

  it('counts bytes as UTF-8: multi-byte characters fill a batch sooner', async () => {
    server = await ScriptedServer.start();
    // "é" is 2 bytes, "😀" 4 (two UTF-16 units): each record is 16 bytes in UTF-8 though 12 characters.
    const client = createClient({ url: server.url, maxBatchBytes: 34, compression: 'none', lingerMs: 60_000, concurrency: 1 });
    client.send('{"s":"éééé"}');
    client.send('{"s":"😀😀"}');
    client.send('{"s":"éééé"}');
    await client.close();
    expect(server.seen.map((r) => r.records.length)).toEqual([2, 1]);
    expect(server.seen[0].raw.length).toBe(34);
  });

  it('sends a batch lingerMs after its first record, without a flush', async () => {
    server = await ScriptedServer.start();
    const results: BatchResult[] = [];
    const client = createClient({ url: server.url, lingerMs: 50, onBatch: (r) => results.push(r) });
    const t0 = performance.now();
    client.send({ a: 1 });
    client.send({ a: 2 });
    await until(() => results.length === 1);
    expect(server.seen[0].at - t0).toBeGreaterThanOrEqual(45);
    expect(server.seen[0].records).toEqual(['{"a":1}', '{"a":2}']);
    expect(results[0]).toMatchObject({ batch: 1, records: 2, accepted: 2, rejected: 0, status: 200, attempts: 1 });
    await client.close();
  });

  it('gzips the body by default (Content-Encoding: gzip), and sends it as it is with compression "none"', async () => {
    server = await ScriptedServer.start();
    const records = Array.from({ length: 200 }, (_, i) => ({ id: i, text: 'the same words again and again' }));
    const zipped = createClient({ url: server.url, lingerMs: 60_000 });
    for (const r of records) zipped.send(r);
    expect(await zipped.close()).toMatchObject({ accepted: 200 });
    const plain = createClient({ url: server.url, lingerMs: 60_000, compression: 'none' });
    for (const r of records) plain.send(r);
    await plain.close();
    const [gz, raw] = server.seen;
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.raw).toString()).toBe(raw.raw.toString());
    expect(gz.raw.length).toBeLessThan(raw.raw.length / 5);
    expect(raw.headers['content-encoding']).toBeUndefined();
  });

  it('keeps string records byte for byte, and frames a batch as a JSON array when a line end could cut a record', async () => {
    server = await ScriptedServer.start();
    const client = createClient({ url: server.url, lingerMs: 60_000, compression: 'none' });
    const pretty = JSON.stringify({ a: 1, b: [1, 2] }, null, 2);
    client.send('{"big":12345678901234567890,"z":1,"a":2}');
    client.send(pretty);
    await client.flush();
    expect(server.seen[0].headers['content-type']).toBe('application/json');
    expect(server.seen[0].text).toBe(`[{"big":12345678901234567890,"z":1,"a":2},${pretty}]`);
    // A lone record that is an array would be taken for the batch's array of records.
    client.send([1, 2]);
    await client.flush();
    expect(server.seen[1].text).toBe('[[1,2]]');
    // Two arrays on two lines cannot be.
    client.send([1, 2]);
    client.send([3]);
    await client.close();
    expect(server.seen[2].text).toBe('[1,2]\n[3]\n');
  });

  it('sends the headers given, and refuses to let them override its own', async () => {
    server = await ScriptedServer.start();
    const client = createClient({ url: server.url, headers: { 'X-Request-Source': 'test' }, lingerMs: 60_000 });
    client.send({ a: 1 });
    await client.close();
    expect(server.seen[0].headers['x-request-source']).toBe('test');
    expect(() => createClient({ url: server!.url, headers: { 'Content-Type': 'text/plain' } })).toThrow(/Content-Type is set by the client/);
  });

  it('takes the batch URL as given too', async () => {
    server = await ScriptedServer.start();
    const client = createClient({ url: `${server.url}/batch`, lingerMs: 60_000 });
    client.send({ a: 1 });
    await client.close();
    expect(server.seen[0].url).toBe('/stream/1/orders/secret/batch');
  });
});

describe('records', () => {
  it('refuses at send() what is not JSON, and queues nothing', async () => {
    server = await ScriptedServer.start();
    const client = createClient({ url: server.url, lingerMs: 60_000 });
    expect(() => client.send('{"a":')).toThrow(InvalidRecordError);
    expect(() => client.send('name=Ed')).toThrow(/not JSON text/);
    expect(() => client.send(undefined)).toThrow(/undefined, which has no JSON form/);
    expect(() => client.send(() => 1)).toThrow(/a function, which has no JSON form/);
    expect(() => client.send({ n: 1n })).toThrow(/cannot be turned into JSON.*BigInt/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => client.send(cycle)).toThrow(/cannot be turned into JSON/);
    await expect(client.sendAsync('nope')).rejects.toThrow(InvalidRecordError);
    expect(client.stats().queuedRecords).toBe(0);
    expect(await client.close()).toMatchObject({ batches: 0, records: 0 });
    expect(server.seen).toEqual([]);
  });

  it('with validate false passes strings unchecked (the server rejects them), but still refuses an empty one', async () => {
    server = await ScriptedServer.start();
    const client = createClient({ url: server.url, lingerMs: 60_000, validate: false });
    client.send('{"a":');
    expect(() => client.send('')).toThrow(/empty string/);
    await client.close();
    expect(server.seen[0].records).toEqual(['{"a":']);
  });
});

describe('flush and close', () => {
  it('flush() reports the batches of the records queued since the previous flush, each once', async () => {
    server = await ScriptedServer.start();
    const client = createClient({ url: server.url, maxBatchRecords: 2, lingerMs: 60_000 });
    for (let i = 0; i < 5; i++) client.send({ i });
    const first = await client.flush();
    expect(first).toMatchObject({ batches: 3, records: 5, accepted: 5 });
    expect(await client.flush()).toEqual({ batches: 0, records: 0, accepted: 0, rejected: 0, failedBatches: 0, rejections: [] });
    client.send({ i: 5 });
    expect(await client.flush()).toMatchObject({ batches: 1, records: 1, accepted: 1 });
    await client.close();
  });

  it('close() flushes, then send throws ClientClosedError', async () => {
    server = await ScriptedServer.start();
    const client = createClient({ url: server.url, lingerMs: 60_000 });
    client.send({ a: 1 });
    const closing = client.close();
    expect(() => client.send({ a: 2 })).toThrow(ClientClosedError);
    await expect(client.sendAsync({ a: 2 })).rejects.toThrow(ClientClosedError);
    expect(await closing).toMatchObject({ records: 1, accepted: 1 });
    expect(client.close()).toBe(closing);
    expect(server.seen.map((r) => r.records)).toEqual([['{"a":1}']]);
  });

  it('keeps the order of the records with concurrency 1', async () => {
    server = await ScriptedServer.start((req) => new Promise((resolve) => setTimeout(() => resolve(accepted(req)), 5 + Math.random() * 20)));
    const client = createClient({ url: server.url, maxBatchRecords: 7, concurrency: 1, lingerMs: 60_000 });
    for (let i = 0; i < 100; i++) client.send({ i });
    await client.close();
    expect(server.seen.flatMap((r) => r.records.map((t) => (JSON.parse(t) as { i: number }).i))).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('sends up to `concurrency` batches at once', async () => {
    let open = 0;
    let most = 0;
    server = await ScriptedServer.start((req) => {
      open++;
      most = Math.max(most, open);
      return new Promise((resolve) => setTimeout(() => {
        open--;
        resolve(accepted(req));
      }, 30));
    });
    const client = createClient({ url: server.url, maxBatchRecords: 1, concurrency: 3 });
    for (let i = 0; i < 12; i++) client.send({ i });
    expect(client.stats()).toMatchObject({ batchesInFlight: 3, batchesWaiting: 9, queuedRecords: 12 });
    expect(await client.close()).toMatchObject({ batches: 12, accepted: 12 });
    expect(most).toBe(3);
    expect(client.stats()).toMatchObject({ batchesInFlight: 0, batchesWaiting: 0, queuedRecords: 0, queuedBytes: 0, batches: 12, acceptedRecords: 12 });
  });

  it('an onBatch callback that throws leaves the client working', async () => {
    server = await ScriptedServer.start();
    const thrown: unknown[] = [];
    const onError = (err: unknown) => thrown.push(err);
    process.on('uncaughtException', onError);
    try {
      const client = createClient({ url: server.url, maxBatchRecords: 1, onBatch: () => {
        throw new Error('the callback broke');
      } });
      client.send({ a: 1 });
      client.send({ a: 2 });
      expect(await client.close()).toMatchObject({ batches: 2, accepted: 2 });
      await until(() => thrown.length === 2);
      expect(String(thrown[0])).toMatch(/the callback broke/);
    } finally {
      process.off('uncaughtException', onError);
    }
  });
});

describe('options', () => {
  it('refuses settings that cannot work, naming them', () => {
    const url = 'http://127.0.0.1:1/stream/1/s/x';
    expect(() => createClient({ url: 'localhost:8000' as string })).toThrow(/url must be http: or https:/);
    expect(() => createClient({ url: 'not a url' })).toThrow(/url must be the source's ingestion URL/);
    expect(() => createClient({ url, maxBatchRecords: 0 })).toThrow(/maxBatchRecords must be a whole number of at least 1, not 0/);
    expect(() => createClient({ url, lingerMs: -1 })).toThrow(/lingerMs/);
    expect(() => createClient({ url, concurrency: 1.5 })).toThrow(/concurrency/);
    expect(() => createClient({ url, compression: 'br' as 'gzip' })).toThrow(/compression must be "gzip" or "none"/);
    expect(() => createClient({ url, maxQueueRecords: 10, maxBatchRecords: 20 })).toThrow(/maxQueueRecords \(10\) must be at least maxBatchRecords \(20\)/);
    expect(() => createClient({ url, maxQueueBytes: 100, maxBatchBytes: 200 })).toThrow(/maxQueueBytes/);
    expect(() => createClient({ url, retry: { initialDelayMs: 100, maxDelayMs: 10 } })).toThrow(/retry.maxDelayMs/);
    expect(() => createClient({ url, onBatch: 'log' as unknown as () => void })).toThrow(/onBatch must be a function/);
    expect(() => createClient({ url, retry: { giveUpAfterMs: Infinity } })).not.toThrow();
  });

  it('asks for compression "none" on a platform without CompressionStream', () => {
    const url = 'http://127.0.0.1:1/stream/1/s/x';
    const platform = globalThis.CompressionStream;
    try {
      (globalThis as { CompressionStream?: unknown }).CompressionStream = undefined;
      expect(() => createClient({ url })).toThrow(/compression "gzip" needs CompressionStream, which this platform lacks: pass compression: "none"/);
      expect(() => createClient({ url, compression: 'none' })).not.toThrow();
    } finally {
      globalThis.CompressionStream = platform;
    }
  });

  it('asks for a fetch on a platform without one', () => {
    const url = 'http://127.0.0.1:1/stream/1/s/x';
    const platform = globalThis.fetch;
    try {
      (globalThis as { fetch?: unknown }).fetch = undefined;
      expect(() => createClient({ url })).toThrow(/This platform has no fetch: pass options.fetch/);
      expect(() => createClient({ url, fetch: platform })).not.toThrow();
    } finally {
      globalThis.fetch = platform;
    }
  });
});
