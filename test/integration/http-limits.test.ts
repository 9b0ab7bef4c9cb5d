/**
 * The HTTP server's limits over real sockets (node:net) against a real service: the headers
 * timeout (a client that sends nothing, one whose headers trickle), the body idle timeout and
 * the minimum body rate on every path that reads bodies (the ingestion fast path, fastify's
 * parsers, connector batches), a large upload that keeps flowing taken whole, the --metrics-port
 * listener with the same timeouts, and the connection cap (503 with Retry-After beyond it, the
 * server still answering on its open connections, and again on new ones once some close).
 * Timeouts are 1 s here; each bound is asserted with a margin for a loaded machine.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';

const TIMEOUT_MS = 1_000;
/** The earliest a timeout may close (timers are not exact to the millisecond) and the latest we wait. */
const NOT_BEFORE_MS = TIMEOUT_MS - 50;
const AT_MOST_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw client connection: what it received, and when it was closed. */
class RawClient {
  data = '';
  openedAt = 0;
  closedAt?: number;
  readonly closed: Promise<number>;
  private constructor(readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (this.data += d));
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) => socket.on('close', () => {
      this.closedAt = Date.now();
      resolve(this.closedAt - this.openedAt);
    }));
  }

  static open(address: string): Promise<RawClient> {
    const { hostname, port } = new URL(address);
    return new Promise((resolve, reject) => {
      const client = new RawClient(connect(Number(port), hostname));
      client.socket.once('connect', () => {
        client.openedAt = Date.now();
        resolve(client);
      });
      client.socket.once('error', reject);
    });
  }

  write(text: string | Buffer): void {
    if (!this.socket.destroyed) this.socket.write(text);
  }

  /** Writes one byte of `text` every `everyMs` until the connection closes. */
  trickle(text: string, everyMs: number): void {
    let i = 0;
    const timer = setInterval(() => {
      if (this.socket.destroyed || this.closedAt !== undefined || i >= text.length) return clearInterval(timer);
      this.write(text[i++]);
    }, everyMs);
  }

  /** Waits for the close, at most AT_MOST_MS; the milliseconds from the connection. */
  async closesWithin(): Promise<number> {
    const ms = await Promise.race([this.closed, sleep(AT_MOST_MS).then(() => Infinity)]);
    expect(ms, 'the connection was not closed').toBeLessThan(AT_MOST_MS);
    return ms;
  }

  /** The answer received: status line, headers (lower-case names) and the JSON body. */
  answer(): { status: number; headers: Record<string, string>; json: any; body: string } {
    const end = this.data.indexOf('\r\n\r\n');
    expect(end, `no complete answer in ${JSON.stringify(this.data)}`).toBeGreaterThan(0);
    const [statusLine, ...lines] = this.data.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const body = this.data.slice(end + 4);
    let json: any;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    return { status: Number(statusLine.split(' ')[1]), headers, json, body };
  }

  /** Waits until a complete answer of `Content-Length` bytes has arrived. */
  async answered(timeoutMs = AT_MOST_MS): Promise<ReturnType<RawClient['answer']>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = this.data.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: *(\d+)/i.exec(this.data.slice(0, end))?.[1];
      if (end > 0 && length !== undefined && this.data.length >= end + 4 + Number(length)) return this.answer();
      if (Date.now() > deadline || this.closedAt !== undefined) return this.answer();
      await sleep(10);
    }
  }
}

const requestHead = (method: string, path: string, headers: Record<string, string | number>): string =>
  `${method} ${path} HTTP/1.1\r\nHost: test\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;

describe('timeouts', () => {
  let svc: TestService;
  let ingestPath: string;
  const B = () => `/v1/branches/${svc.branchId}`;

  const recordCount = async (): Promise<number> => (await svc.call('GET', `${B()}/sources/limits/records?limit=20`)).json.records.length;
  const tokenCount = async (): Promise<number> => (await svc.call('GET', '/v2/storage/tokens')).json.length;

  beforeAll(async () => {
    svc = await TestService.start({
      args: ['--headers-timeout', '1s', '--body-idle-timeout', '1s', '--body-min-rate', '500B', '--metrics-port', '0'],
    });
    expect((await svc.task('POST', `${B()}/sources`, { json: { name: 'Limits', type: 'http' } })).status).toBe('success');
    ingestPath = await svc.ingestPath('limits');
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('closes a connection that sends nothing, and one whose headers trickle, after the headers timeout, with a 408', async () => {
    const silent = await RawClient.open(svc.server.address);
    const trickling = await RawClient.open(svc.server.address);
    trickling.trickle(requestHead('GET', '/v2/storage/tokens', { 'X-StorageApi-Token': MASTER_TOKEN, 'X-Padding': 'p'.repeat(200) }), 100);
    for (const client of [silent, trickling]) {
      const ms = await client.closesWithin();
      expect(ms).toBeGreaterThanOrEqual(NOT_BEFORE_MS);
      const answer = client.answer();
      expect(answer.status).toBe(408);
      expect(answer.headers.connection).toBe('close');
      expect(answer.json).toEqual({ statusCode: 408, error: 'stream.api.requestTimeout', message: "The request's headers did not arrive within 1s." });
    }
    // Meanwhile, and after, the server answers.
    expect((await svc.call('GET', '/v2/storage/tokens')).status).toBe(200);
  });

  it('drops a body that stops, on the ingestion fast path and in fastify, and stores nothing of it', async () => {
    const records = await recordCount();
    const tokens = await tokenCount();
    const ingest = await RawClient.open(svc.server.address);
    ingest.write(requestHead('POST', ingestPath, { 'Content-Type': 'application/json', 'Content-Length': 100 }) + '{"half":');
    const token = await RawClient.open(svc.server.address);
    token.write(requestHead('POST', '/v2/storage/tokens', { 'X-StorageApi-Token': MASTER_TOKEN, 'Content-Type': 'application/json', 'Content-Length': 100 }) + '{"description":');
    for (const client of [ingest, token]) {
      const ms = await client.closesWithin();
      expect(ms).toBeGreaterThanOrEqual(NOT_BEFORE_MS);
      expect(client.answer().json).toEqual({ statusCode: 408, error: 'stream.api.requestTimeout', message: 'No byte of the request body arrived for 1s.' });
    }
    expect(await recordCount()).toBe(records);
    expect(await tokenCount()).toBe(tokens);
  });

  it('drops a body that trickles slower than the minimum rate, even after an early answer', async () => {
    const records = await recordCount();
    // A connector batch (fastify's route): one byte every 100 ms, 10 bytes a second.
    const batch = await RawClient.open(svc.server.address);
    batch.write(requestHead('POST', `${ingestPath}/batch`, { 'Content-Type': 'application/json', 'Content-Length': 10_000 }));
    batch.trickle(`[${'{"n":1},'.repeat(1_200)}`, 100);
    // Refused at once (no token: 401) while its body is still arriving: the connection is not kept for the rest.
    const refused = await RawClient.open(svc.server.address);
    refused.write(requestHead('POST', '/v2/storage/tokens', { 'Content-Type': 'application/json', 'Content-Length': 10_000 }));
    refused.trickle('x'.repeat(10_000), 100);
    const batchMs = await batch.closesWithin();
    expect(batchMs).toBeGreaterThanOrEqual(NOT_BEFORE_MS);
    expect(batch.answer().json).toEqual({ statusCode: 408, error: 'stream.api.requestTimeout', message: 'The request body arrives slower than 500 bytes a second.' });
    expect(await refused.closesWithin()).toBeGreaterThanOrEqual(NOT_BEFORE_MS);
    expect(refused.answer().status).toBe(401);
    expect(await recordCount()).toBe(records);
  });

  it('takes whole a large upload that keeps flowing for longer than the timeouts, through the fast path and fastify', async () => {
    const records = await recordCount();
    const line = JSON.stringify({ pad: 'x'.repeat(1_000) });
    const body = Buffer.from(`[${Array.from({ length: 200 }, () => line).join(',')}]`);
    // About 200 kB in 25 writes 150 ms apart: 3.75 s, well above 500 B/s and never idle for 1 s.
    const send = async (path: string): Promise<RawClient> => {
      const client = await RawClient.open(svc.server.address);
      client.write(requestHead('POST', path, { 'Content-Type': 'application/json', 'Content-Length': body.length }));
      const chunk = Math.ceil(body.length / 25);
      for (let at = 0; at < body.length; at += chunk) {
        client.write(body.subarray(at, at + chunk));
        await sleep(150);
      }
      return client;
    };
    const [fast, viaFastify] = await Promise.all([send(ingestPath), send(`${ingestPath}/batch`)]);
    const started = Math.min(fast.openedAt, viaFastify.openedAt);
    expect(Date.now() - started).toBeGreaterThan(3 * TIMEOUT_MS);
    expect((await fast.answered()).status).toBe(200);
    const batch = await viaFastify.answered();
    expect(batch.status).toBe(200);
    expect(batch.json).toMatchObject({ statusCode: 200 });
    fast.socket.destroy();
    viaFastify.socket.destroy();
    // One record of the whole body, and the 200 of the batch: 201 records in all.
    await svc.until('the records', async () => ((await recordCount()) >= Math.min(20, records + 201) ? true : undefined));
    const newest = (await svc.call('GET', `${B()}/sources/limits/records?limit=20`)).json.records;
    expect(newest.some((r: { body: string }) => r.body === line)).toBe(true);
  });

  it('gives the --metrics-port listener the same headers timeout', async () => {
    expect(svc.server.metricsAddress).toBeDefined();
    const silent = await RawClient.open(svc.server.metricsAddress!);
    expect(await silent.closesWithin()).toBeGreaterThanOrEqual(NOT_BEFORE_MS);
    expect(silent.answer().status).toBe(408);
    expect((await fetch(`${svc.server.metricsAddress}/metrics`)).status).toBe(200);
  });
});

describe('the connection cap', () => {
  const CAP = 6;
  let svc: TestService;

  beforeAll(async () => {
    // Timeouts long enough that the idle connections stay for the whole test.
    svc = await TestService.start({ args: ['--max-connections', String(CAP), '--headers-timeout', '60s', '--metrics-port', '0'] });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('answers 503 with Retry-After beyond it, without reading the request, and keeps answering on open connections', async () => {
    // A client connected before the flood, with keep-alive (the only connection: fetch's pool would hold another).
    const kept = await RawClient.open(svc.server.address);
    const countTokens = async (): Promise<number> => {
      kept.data = '';
      kept.write(requestHead('GET', '/v2/storage/tokens', { 'X-StorageApi-Token': MASTER_TOKEN }));
      const answer = await kept.answered();
      expect(answer.status).toBe(200);
      return answer.json.length;
    };
    const tokens = await countTokens();
    kept.data = '';
    // Idle connections up to the cap (the server accepts in order: they are in before the next ones).
    const idle: RawClient[] = [];
    for (let i = 1; i < CAP; i++) idle.push(await RawClient.open(svc.server.address));
    const refused = await RawClient.open(svc.server.address);
    const refusedWrite = await RawClient.open(svc.server.address);
    refusedWrite.write(requestHead('POST', '/v2/storage/tokens', { 'X-StorageApi-Token': MASTER_TOKEN, 'Content-Type': 'application/json', 'Content-Length': 23 }) + '{"description":"flood"}');
    const metrics = await RawClient.open(svc.server.metricsAddress!);
    for (const client of [refused, refusedWrite, metrics]) {
      await client.closesWithin();
      const answer = client.answer();
      expect(answer.status).toBe(503);
      expect(answer.headers['retry-after']).toBe('1');
      expect(answer.json).toEqual({
        statusCode: 503, error: 'stream.api.tooManyConnections', message: `The server has reached its limit of ${CAP} open connections; try again in a moment.`,
      });
    }
    // A client that opens a new connection is told the same.
    const busy = await fetch(`${svc.server.address}/health-check`);
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('1');
    // The connection that was in before still works.
    kept.data = '';
    kept.write(requestHead('GET', '/health-check', {}));
    const again = await kept.answered();
    expect(again.status).toBe(200);
    expect(again.body).toBe('OK\n');
    // Once some connections close, new ones are taken again; the refused request changed nothing.
    for (const client of idle.splice(0, 3)) client.socket.destroy();
    await svc.until('a connection taken', async () => ((await fetch(`${svc.server.address}/health-check`)).status === 200 ? true : undefined));
    expect(await countTokens()).toBe(tokens);
    for (const client of [...idle, kept]) client.socket.destroy();
  });
});
