/**
 * The bounded queue against a local HTTP server that holds its answers: send() throws
 * QueueFullError (or calls onFull) once the queue holds maxQueueRecords or maxQueueBytes,
 * sendAsync() waits for room and is let in, oldest first, as batches finish.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, QueueFullError } from '@sluice/client';
import { accepted, ScriptedServer, type SeenRequest, until } from './scripted-server.js';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server whose answers wait until the test releases them, one by one. */
async function heldServer(): Promise<{ release(): void; held(): number }> {
  const held: Array<() => void> = [];
  server = await ScriptedServer.start((req: SeenRequest) => new Promise((resolve) => held.push(() => resolve(accepted(req)))));
  return { release: () => held.shift()?.(), held: () => held.length };
}

describe('the bounded queue', () => {
  it('send() throws QueueFullError once maxQueueRecords are queued (in flight included), and takes records again once a batch is answered', async () => {
    const gate = await heldServer();
    const client = createClient({ url: server!.url, maxBatchRecords: 2, maxQueueRecords: 4, concurrency: 1, lingerMs: 60_000 });
    for (let i = 0; i < 4; i++) client.send({ i });
    let error: unknown;
    try {
      client.send({ i: 4 });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(QueueFullError);
    expect(error).toMatchObject({ queuedRecords: 4, name: 'QueueFullError' });
    expect(String((error as Error).message)).toMatch(/queue is full \(4 records, 28 bytes queued; limits maxQueueRecords 4, maxQueueBytes 67108864\).*await sendAsync\(record\)/);
    expect(client.stats()).toMatchObject({ queuedRecords: 4, batchesInFlight: 1, batchesWaiting: 1 });
    await until(() => gate.held() === 1);
    gate.release();
    await until(() => client.stats().queuedRecords === 2);
    client.send({ i: 4 });
    client.send({ i: 5 });
    const closing = client.close();
    for (let i = 0; i < 2; i++) {
      await until(() => gate.held() === 1);
      gate.release();
    }
    expect(await closing).toMatchObject({ records: 6, accepted: 6 });
    expect(server!.seen.flatMap((r) => r.records)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `{"i":${i}}`));
  });

  it('counts bytes too: maxQueueBytes', async () => {
    const gate = await heldServer();
    const client = createClient({ url: server!.url, maxBatchRecords: 1, maxBatchBytes: 20, maxQueueBytes: 40, lingerMs: 60_000 });
    client.send('{"s":"0123456789"}'); // 18 bytes
    client.send('{"s":"0123456789"}');
    expect(() => client.send('{"s":"0123456"}')).toThrow(QueueFullError); // 15 more would be 51
    client.send('1234'); // 4 more: 40
    await until(() => gate.held() === 2);
    gate.release();
    gate.release();
    await until(() => gate.held() === 1);
    gate.release();
    expect(await client.close()).toMatchObject({ records: 3, accepted: 3 });
  });

  it('calls onFull instead of throwing: the record is not queued', async () => {
    const gate = await heldServer();
    const dropped: unknown[] = [];
    const client = createClient({
      url: server!.url, maxBatchRecords: 1, maxQueueRecords: 1, lingerMs: 60_000,
      onFull: (record, error) => dropped.push([record, error.name]),
    });
    client.send({ i: 0 });
    client.send({ i: 1 });
    expect(dropped).toEqual([[{ i: 1 }, 'QueueFullError']]);
    await until(() => gate.held() === 1);
    gate.release();
    expect(await client.close()).toMatchObject({ records: 1 });
  });

  it('sendAsync() waits for room and lets the waiting in oldest first; send() does not jump the line', async () => {
    const gate = await heldServer();
    const client = createClient({ url: server!.url, maxBatchRecords: 1, maxQueueRecords: 2, concurrency: 1, lingerMs: 60_000 });
    await client.sendAsync({ i: 0 });
    await client.sendAsync({ i: 1 });
    const order: number[] = [];
    const third = client.sendAsync({ i: 2 }).then(() => order.push(2));
    const fourth = client.sendAsync({ i: 3 }).then(() => order.push(3));
    // Someone is waiting: send() throws even if room opened, until the waiting are in.
    expect(() => client.send({ i: 9 })).toThrow(QueueFullError);
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual([]);
    for (let answered = 0; answered < 4; answered++) {
      await until(() => gate.held() === 1);
      gate.release();
    }
    await Promise.all([third, fourth]);
    expect(order).toEqual([2, 3]);
    await client.close();
    expect(server!.seen.flatMap((r) => r.records)).toEqual([0, 1, 2, 3].map((i) => `{"i":${i}}`));
  });

  it('close() rejects the sendAsync() calls still waiting for room', async () => {
    const gate = await heldServer();
    const client = createClient({ url: server!.url, maxBatchRecords: 1, maxQueueRecords: 1, lingerMs: 60_000 });
    client.send({ i: 0 });
    const waiting = client.sendAsync({ i: 1 });
    const closing = client.close();
    await expect(waiting).rejects.toThrow(/The client is closed/);
    await until(() => gate.held() === 1);
    gate.release();
    expect(await closing).toMatchObject({ records: 1, accepted: 1 });
  });

  it('a producer loop on sendAsync stays within the bound while a slow server drains it', async () => {
    server = await ScriptedServer.start((req) => new Promise((resolve) => setTimeout(() => resolve(accepted(req)), 10)));
    const client = createClient({ url: server.url, maxBatchRecords: 50, maxQueueRecords: 200, lingerMs: 5 });
    let most = 0;
    for (let i = 0; i < 2000; i++) {
      await client.sendAsync({ i });
      most = Math.max(most, client.stats().queuedRecords);
    }
    expect(await client.close()).toMatchObject({ records: 2000, accepted: 2000 });
    expect(most).toBe(200);
    expect(server.seen.reduce((n, r) => n + r.records.length, 0)).toBe(2000);
  });
});
