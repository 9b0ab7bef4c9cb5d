/**
 * Retries against a local HTTP server that answers 429/503/200 as scripted: Retry-After honoured
 * (seconds and dates), jittered exponential back-off without it, network errors retried, other
 * answers not, a batch given up after giveUpAfterMs; partial answers read into rejections.
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, type BatchResult } from '@sluice/client';
import { accepted, ScriptedServer } from './scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const refusal = (status: number, headers: Record<string, string> = {}) => ({
  status,
  headers,
  body: { statusCode: status, error: status === 429 ? 'stream.in.tooManyRequests' : 'stream.in.logFull', message: 'please retry later.' },
});

describe('retries', () => {
  it('waits out a 429\'s Retry-After (seconds) and sends the same body again', async () => {
    server = await ScriptedServer.start((req, i) => (i === 0 ? refusal(429, { 'retry-after': '1' }) : accepted(req)));
    const client = createClient({ url: server.url, lingerMs: 60_000 });
    client.send({ a: 1 });
    client.send({ a: 2 });
    const result = await client.close();
    expect(result).toMatchObject({ batches: 1, accepted: 2, rejected: 0 });
    const [first, second] = server.seen;
    // At least the second asked for, at most a fifth more (the spread) and the machine's delay.
    expect(second.at - first.at).toBeGreaterThanOrEqual(990);
    expect(second.at - first.at).toBeLessThan(2500);
    expect(second.raw.equals(first.raw)).toBe(true);
    expect(client.stats().retries).toEqual({ 429: 1 });
  });

  it('honours a Retry-After given as an HTTP date', async () => {
    let asked = 0;
    server = await ScriptedServer.start((req, i) => {
      if (i > 0) return accepted(req);
      // Two seconds from now, rounded down to the second as a date is: between 1 and 2 s.
      asked = Math.floor(Date.now() / 1000) * 1000 + 2000;
      return refusal(503, { 'retry-after': new Date(asked).toUTCString() });
    });
    const results: BatchResult[] = [];
    const client = createClient({ url: server.url, lingerMs: 60_000, onBatch: (r) => results.push(r) });
    client.send({ a: 1 });
    await client.close();
    expect(Date.now()).toBeGreaterThanOrEqual(asked - 20);
    expect(results[0]).toMatchObject({ accepted: 1, status: 200, attempts: 2 });
  });

  it('backs off exponentially with jitter on 503 without Retry-After: each wait at least half its step, the steps doubling', async () => {
    server = await ScriptedServer.start((req, i) => (i < 4 ? refusal(503) : accepted(req)));
    const client = createClient({ url: server.url, lingerMs: 60_000, retry: { initialDelayMs: 100, maxDelayMs: 10_000 } });
    client.send({ a: 1 });
    expect(await client.close()).toMatchObject({ accepted: 1 });
    const waits = server.seen.slice(1).map((r, i) => r.at - server!.seen[i].at);
    expect(waits).toHaveLength(4);
    // Steps 100, 200, 400, 800 ms: each wait within [step/2, step] (and the machine's delay).
    waits.forEach((wait, i) => {
      const step = 100 * 2 ** i;
      expect(wait).toBeGreaterThanOrEqual(step / 2 - 5);
      expect(wait).toBeLessThan(step + 400);
    });
    expect(client.stats().retries).toEqual({ 503: 4 });
  });

  it('uses the random source for the jitter: the waits follow it', async () => {
    server = await ScriptedServer.start((req, i) => (i < 2 ? refusal(503) : accepted(req)));
    // random() = 0: exactly half of each step (100, then 200 ms) -> 50 and 100 ms.
    const client = createClient({ url: server.url, lingerMs: 60_000, random: () => 0, retry: { initialDelayMs: 100 } });
    client.send({ a: 1 });
    await client.close();
    const waits = server.seen.slice(1).map((r, i) => r.at - server!.seen[i].at);
    expect(waits[0]).toBeGreaterThanOrEqual(45);
    expect(waits[1]).toBeGreaterThanOrEqual(95);
    expect(waits[1]).toBeLessThan(400);
  });

  it('retries a connection closed without an answer, and a 502 or 504', async () => {
    server = await ScriptedServer.start((req, i) => (i === 0 ? 'drop' : i === 1 ? { status: 502, body: 'Bad Gateway' } : i === 2 ? { status: 504 } : accepted(req)));
    const client = createClient({ url: server.url, lingerMs: 60_000, retry: { initialDelayMs: 10 } });
    client.send({ a: 1 });
    expect(await client.close()).toMatchObject({ accepted: 1, rejected: 0 });
    expect(server.seen).toHaveLength(4);
    expect(client.stats().retries).toEqual({ 0: 1, 502: 1, 504: 1 });
  });

  it('retries a request that gets no answer within requestTimeoutMs', async () => {
    server = await ScriptedServer.start((req, i) => (i === 0 ? new Promise(() => {}) : accepted(req)));
    const client = createClient({ url: server.url, lingerMs: 60_000, requestTimeoutMs: 200, retry: { initialDelayMs: 10 } });
    client.send({ a: 1 });
    expect(await client.close()).toMatchObject({ accepted: 1 });
    expect(server.seen).toHaveLength(2);
  });

  it('retries when nothing listens (connection refused), and gives up after giveUpAfterMs with the reason', async () => {
    const results: BatchResult[] = [];
    const client = createClient({ url: `http://127.0.0.1:${await closedPort()}/stream/1/s/x`, lingerMs: 60_000, retry: { initialDelayMs: 20, giveUpAfterMs: 300 }, onBatch: (r) => results.push(r) });
    client.send({ a: 1 });
    client.send({ a: 2 });
    const t0 = Date.now();
    const result = await client.close();
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(result).toMatchObject({ batches: 1, records: 2, accepted: 0, rejected: 2, failedBatches: 1 });
    expect(results[0].attempts).toBeGreaterThan(2);
    expect(results[0].status).toBe(0);
    expect(results[0].error).toMatch(/^Gave up after \d+ attempts over [\d.]+ s \(giveUpAfterMs 300\); the last attempt got no answer: fetch failed: ECONNREFUSED/);
    expect(result.rejections).toEqual([
      { batch: 1, index: 0, record: '{"a":1}', reason: results[0].error },
      { batch: 1, index: 1, record: '{"a":2}', reason: results[0].error },
    ]);
  });

  it('gives up on a server that keeps answering 503, naming the last answer', async () => {
    server = await ScriptedServer.start(() => refusal(503, { 'retry-after': '1' }));
    const client = createClient({ url: server.url, lingerMs: 60_000, retry: { giveUpAfterMs: 1500 } });
    client.send({ a: 1 });
    const result = await client.close();
    expect(result.failedBatches).toBe(1);
    expect(result.rejections[0].reason).toMatch(/Gave up after 2 attempts .*the last answer was 503: stream.in.logFull: please retry later\./);
  });

  it('does not retry other answers: every record of the batch is rejected with the server\'s reason', async () => {
    const message = 'The specified combination of projectID, sourceID and secret was not found.';
    server = await ScriptedServer.start(() => ({ status: 404, body: { statusCode: 404, error: 'stream.in.noSourceFound', message } }));
    const results: BatchResult[] = [];
    const client = createClient({ url: server.url, lingerMs: 60_000, onBatch: (r) => results.push(r) });
    client.send({ a: 1 });
    client.send({ a: 2 });
    const result = await client.close();
    expect(server.seen).toHaveLength(1);
    const reason = `The server answered 404: stream.in.noSourceFound: ${message}`;
    expect(results).toEqual([{
      batch: 1, records: 2, accepted: 0, rejected: 2, status: 404, attempts: 1, error: reason,
      rejections: [{ batch: 1, index: 0, record: '{"a":1}', reason }, { batch: 1, index: 1, record: '{"a":2}', reason }],
    }]);
    expect(result).toMatchObject({ accepted: 0, rejected: 2, failedBatches: 1 });
    expect(client.stats().retries).toEqual({});
  });

  it('reads a partial answer: the rejected records with their reasons, matched to the records sent', async () => {
    server = await ScriptedServer.start(() => ({
      status: 200,
      body: { statusCode: 200, message: 'Successfully written 2 of 3 records; 1 rejected.', accepted: 2, rejected: 1, errors: [{ index: 1, message: 'The record is not valid JSON: Unexpected end of JSON input.' }] },
    }));
    const client = createClient({ url: server.url, lingerMs: 60_000, validate: false });
    client.send({ a: 1 });
    client.send('{"a":');
    client.send({ a: 3 });
    const result = await client.close();
    expect(result).toMatchObject({ accepted: 2, rejected: 1, failedBatches: 0 });
    expect(result.rejections).toEqual([{ batch: 1, index: 1, record: '{"a":', reason: 'The record is not valid JSON: Unexpected end of JSON input.' }]);
  });

  it('leaves a rejection unmatched when the server counted other records than were sent', async () => {
    // One string record the endpoint cut in two: positions are the endpoint's, not the client's.
    server = await ScriptedServer.start(() => ({ status: 200, body: { accepted: 1, rejected: 1, errors: [{ index: 1, message: 'bad' }] } }));
    const client = createClient({ url: server.url, lingerMs: 60_000, validate: false });
    client.send('{"a":1},{"a":');
    const result = await client.close();
    expect(result).toMatchObject({ records: 1, accepted: 1, rejected: 0 });
    expect(result.rejections).toEqual([{ batch: 1, index: 1, reason: 'bad' }]);
  });
});

/** A port nothing listens on: one the system gave a moment ago, closed again. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  await new Promise((resolve) => srv.close(resolve));
  return port;
}
