/**
 * The OTLP/gRPC listener's bounds on what a client may hold (src/sources/otlp-grpc/limits.ts,
 * connections.ts, pings.ts), each against real sockets: @grpc/grpc-js clients for the well-behaved
 * and raw node:http2 sessions for the hostile (connections over the cap, streams beyond the
 * advertised limit, a connection that sends nothing, a call that never ends, a ping flood). Each
 * shows the bound holds and that the listener goes on answering other clients.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, constants as h2, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LmdbMetadataStore } from '../../src/adapters/metadata/lmdb-store.js';
import { keys } from '../../src/definition/repository.js';
import type { Sink, Source } from '../../src/model/definition.js';
import { compileMapping } from '../../src/pipeline/columns/index.js';
import { MetadataIngestSources } from '../../src/sources/http/index.js';
import { startOtlpGrpc, UNLIMITED, type ConnectionGate, type GrpcLimits, type OtlpGrpcListener } from '../../src/sources/otlp-grpc/index.js';
import { InflightBudget } from '../../src/sources/otlp/inflight.js';
import { OtlpIngest } from '../../src/sources/otlp/ingest.js';
import { MemoryEventLog } from '../helpers/memory-event-log.js';
import { EXPORT_PATHS, logsRequest, OtlpGrpcClient } from '../helpers/otlp-grpc.js';

const PROJECT = 11;
const BRANCH = 22;
const SECRET = 'L'.repeat(48);
const at = { at: '2024-01-01T00:00:00.000Z', by: { type: 'user' as const, tokenId: '1' } };
const version = { ...at, number: 1, hash: '0123456789abcdef', description: 'New.' };

let dir: string;
let store: LmdbMetadataStore;
const log = new MemoryEventLog();
const open: Array<{ close(): unknown }> = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-otlp-grpc-limits-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
  const source: Source = { projectId: PROJECT, branchId: BRANCH, sourceId: 'app', name: 'app', description: '', type: 'otlp', secret: SECRET, version, created: at };
  const sink: Sink = {
    projectId: PROJECT, branchId: BRANCH, sourceId: 'app', sinkId: 'all', name: 'all', description: '', type: 'table',
    table: { type: 'keboola', tableId: 'in.c-app.all', mapping: { columns: [{ type: 'body', name: 'body' }] } }, version, created: at,
  };
  store.transact((tx) => {
    tx.put(keys.source(BRANCH, 'app'), source);
    tx.put(keys.sink(BRANCH, 'app', 'all'), sink);
  });
});

afterEach(async () => {
  log.releaseDurable();
  log.durableMode = 'immediate';
  for (const o of open.splice(0).reverse()) await o.close();
});

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Events {
  refused: string[];
  open: number;
  tooManyPings: number;
}

/** A listener with these limits (the rest unlimited), closed after the test. */
async function listener(limits: Partial<GrpcLimits>, nodeConnections?: ConnectionGate): Promise<{ grpc: OtlpGrpcListener; events: Events }> {
  const sources = new MetadataIngestSources(store, BRANCH);
  const mappings = { get: async (sink: Sink) => compileMapping(sink.table.mapping.columns) };
  const ingest = new OtlpIngest({ eventLog: log, mappings, projectId: PROJECT, maxBodyBytes: 1 << 20, inflight: new InflightBudget(1 << 24) });
  const events: Events = { refused: [], open: 0, tooManyPings: 0 };
  const grpc = await startOtlpGrpc({
    ingest, sources, maxBodyBytes: 1 << 20, limits: { ...UNLIMITED, ...limits }, nodeConnections, isShuttingDown: () => false, logger: pino({ level: 'silent' }),
    events: { refused: (limit) => events.refused.push(limit), open: (d) => (events.open += d), tooManyPings: () => events.tooManyPings++ },
  }, '127.0.0.1', 0);
  open.push({ close: () => grpc.close(500) });
  return { grpc, events };
}

/** A grpc-js client on a connection of its own (grpc-js shares one between clients of the same address by default). */
function client(address: string): OtlpGrpcClient {
  const c = new OtlpGrpcClient(address, { ownConnection: true });
  open.push(c);
  return c;
}

interface Raw {
  session: ClientHttp2Session;
  /** true once the server's SETTINGS arrived (the connection was taken), false when it closed first. */
  taken: Promise<boolean>;
  closed: Promise<void>;
  /** The GOAWAY the server sent, if one came. */
  goaway: { code: number; data: string } | undefined;
}

/** A bare HTTP/2 connection (node:http2), as a client that does what it likes. */
function raw(address: string, options: { peerMaxConcurrentStreams?: number } = {}): Raw {
  const session = connect(`http://${address}`, options);
  session.on('error', () => undefined);
  const r: Raw = {
    session,
    taken: new Promise((res) => {
      session.once('remoteSettings', () => res(true));
      session.once('close', () => res(false));
    }),
    closed: new Promise((res) => session.once('close', () => res())),
    goaway: undefined,
  };
  session.on('goaway', (code, _last, data) => (r.goaway = { code, data: data?.toString() ?? '' }));
  open.push({ close: () => session.destroy() });
  return r;
}

/** A logs Export call on a raw session; `message` false sends its headers only (the call then waits for a message that never comes). */
function rawExport(session: ClientHttp2Session, message = true): { stream: ClientHttp2Stream; status: Promise<number | undefined> } {
  const stream = session.request({
    [h2.HTTP2_HEADER_METHOD]: 'POST', [h2.HTTP2_HEADER_PATH]: EXPORT_PATHS.logs, 'content-type': 'application/grpc', te: 'trailers', authorization: `Bearer ${SECRET}`,
  });
  stream.on('error', () => undefined);
  let code: number | undefined;
  stream.on('response', (h) => (code = h['grpc-status'] === undefined ? code : Number(h['grpc-status'])));
  stream.on('trailers', (t) => (code = Number(t['grpc-status'])));
  stream.resume();
  if (message) {
    const body = logsRequest(1);
    const frame = Buffer.alloc(5);
    frame.writeUInt32BE(body.length, 1);
    stream.end(Buffer.concat([frame, body]));
  }
  return { stream, status: new Promise((res) => stream.once('close', () => res(code))) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the OTLP/gRPC connection cap', () => {
  it('resets a connection over --otlp-grpc-max-connections at once and counts it; the open ones keep working; a closed one frees its place', async () => {
    const { grpc, events } = await listener({ maxConnections: 2 });
    const a = raw(grpc.address);
    const b = raw(grpc.address);
    expect(await a.taken).toBe(true);
    expect(await b.taken).toBe(true);
    const c = raw(grpc.address);
    expect(await c.taken).toBe(false);
    expect(events.refused).toEqual(['otlp-grpc']);
    // A gRPC client meets the cap as a failed connection: UNAVAILABLE, which exporters retry.
    expect((await client(grpc.address).export('logs', logsRequest(1), SECRET)).codeName).toBe('UNAVAILABLE');
    expect(events.open).toBe(2);
    // The connections within the cap are served.
    expect(await rawExport(a.session).status).toBe(0);
    b.session.destroy();
    await b.closed;
    await vi.waitFor(() => expect(events.open).toBe(1), { timeout: 5000 });
    expect((await client(grpc.address).export('logs', logsRequest(1), SECRET)).codeName).toBe('OK');
  });

  it("counts its connections in the node's cap (--max-connections), and is refused by it", async () => {
    let nodeOpen = 0;
    const counted: Socket[] = [];
    const gate: ConnectionGate = {
      tryCount(socket) {
        if (nodeOpen >= 1) return false;
        nodeOpen++;
        counted.push(socket);
        socket.once('close', () => nodeOpen--);
        return true;
      },
    };
    const { grpc, events } = await listener({ maxConnections: 10 }, gate);
    const a = raw(grpc.address);
    expect(await a.taken).toBe(true);
    expect(counted).toHaveLength(1);
    expect(await raw(grpc.address).taken).toBe(false);
    expect(events.refused).toEqual(['node']);
    a.session.destroy();
    await vi.waitFor(() => expect(nodeOpen).toBe(0), { timeout: 5000 });
    expect((await client(grpc.address).export('logs', logsRequest(1), SECRET)).codeName).toBe('OK');
  });
});

describe('OTLP/gRPC calls at once on a connection', () => {
  it('advertises --otlp-grpc-max-concurrent-streams, refuses the streams of a client that opens more, and goes on serving', async () => {
    const { grpc } = await listener({ maxConcurrentStreams: 2 });
    // The client's streams leave before the server's SETTINGS arrive (it assumes 100 until then).
    const r = raw(grpc.address, { peerMaxConcurrentStreams: 100 });
    const calls = [rawExport(r.session, false), rawExport(r.session, false), rawExport(r.session, false)];
    expect(await r.taken).toBe(true);
    expect(r.session.remoteSettings.maxConcurrentStreams).toBe(2);
    // The third is refused (REFUSED_STREAM), or the whole connection is, for a protocol error.
    await vi.waitFor(() => expect(calls[2].stream.closed || r.session.destroyed).toBe(true), { timeout: 5000 });
    expect(calls[2].stream.rstCode === h2.NGHTTP2_REFUSED_STREAM || r.goaway?.code === h2.NGHTTP2_PROTOCOL_ERROR).toBe(true);
    expect(calls[0].stream.closed && calls[1].stream.closed).toBe(r.session.destroyed);
    // A well-behaved client waits for a free stream: 4 calls at once on one connection all pass.
    log.durableMode = 'hold';
    const c = client(grpc.address);
    const answers = Promise.all([1, 2, 3, 4].map(() => c.export('logs', logsRequest(1), SECRET)));
    await sleep(300);
    log.releaseDurable();
    log.durableMode = 'immediate';
    expect((await answers).map((a) => a.codeName)).toEqual(['OK', 'OK', 'OK', 'OK']);
  });
});

describe('OTLP/gRPC idle and old connections', () => {
  it('closes a connection without a call after --otlp-grpc-max-connection-idle, also one that never sent a byte; a client reconnects', async () => {
    const { grpc, events } = await listener({ maxConnectionIdleMs: 400 });
    const r = raw(grpc.address);
    expect(await r.taken).toBe(true);
    const started = performance.now();
    await r.closed;
    expect(performance.now() - started).toBeGreaterThanOrEqual(350);
    // A bare TCP connection that never speaks HTTP/2 is closed too.
    const silent = createConnection({ host: '127.0.0.1', port: grpc.port });
    open.push({ close: () => silent.destroy() });
    silent.on('error', () => undefined);
    // Read what the server sends (its SETTINGS, then a GOAWAY), to see its end.
    silent.resume();
    await new Promise((res) => silent.once('close', res));
    await vi.waitFor(() => expect(events.open).toBe(0), { timeout: 5000 });
    const c = client(grpc.address);
    expect((await c.export('logs', logsRequest(1), SECRET)).codeName).toBe('OK');
    await sleep(800);
    expect((await c.export('logs', logsRequest(1), SECRET)).codeName).toBe('OK');
  });

  it('sends GOAWAY after --otlp-grpc-max-connection-age and cuts a call still running after the grace; clients move to a new connection', async () => {
    const { grpc, events } = await listener({ maxConnectionAgeMs: 500, maxConnectionAgeGraceMs: 400 });
    const r = raw(grpc.address);
    expect(await r.taken).toBe(true);
    const started = performance.now();
    // A call whose message never comes holds the connection past its age.
    const stuck = rawExport(r.session, false);
    await vi.waitFor(() => expect(r.goaway).toBeDefined(), { timeout: 5000 });
    expect(r.goaway?.code).toBe(h2.NGHTTP2_NO_ERROR);
    await r.closed;
    const lived = performance.now() - started;
    expect(lived).toBeGreaterThanOrEqual(450 + 350);
    expect(await stuck.status).toBeUndefined();
    await vi.waitFor(() => expect(events.open).toBe(0), { timeout: 5000 });
    // A grpc-js client sends on across the GOAWAYs without an error.
    const c = client(grpc.address);
    for (let i = 0; i < 6; i++) {
      expect((await c.export('logs', logsRequest(1), SECRET)).codeName).toBe('OK');
      await sleep(250);
    }
  });
});

describe('OTLP/gRPC pings', () => {
  const ping = (s: ClientHttp2Session) => new Promise<boolean>((res) => {
    if (!s.ping((err) => res(!err))) res(false);
  });

  it('closes a connection that floods pings with GOAWAY ENHANCE_YOUR_CALM "too_many_pings", and counts it', async () => {
    const { grpc, events } = await listener({ minPingIntervalMs: 60_000 });
    const r = raw(grpc.address);
    expect(await r.taken).toBe(true);
    for (let i = 0; i < 10 && !r.session.destroyed && !r.goaway; i++) await ping(r.session);
    await vi.waitFor(() => expect(r.goaway).toEqual({ code: h2.NGHTTP2_ENHANCE_YOUR_CALM, data: 'too_many_pings' }), { timeout: 5000 });
    await r.closed;
    expect(events.tooManyPings).toBe(1);
    expect((await client(grpc.address).export('logs', logsRequest(1), SECRET)).codeName).toBe('OK');
  });

  it('takes pings between calls however close (a grpc-go client pings after answers)', async () => {
    const { grpc, events } = await listener({ minPingIntervalMs: 60_000 });
    const r = raw(grpc.address);
    expect(await r.taken).toBe(true);
    for (let i = 0; i < 6; i++) {
      expect(await rawExport(r.session).status).toBe(0);
      expect(await ping(r.session)).toBe(true);
    }
    // Two strikes are within the allowance.
    expect(await ping(r.session)).toBe(true);
    expect(await ping(r.session)).toBe(true);
    expect(r.goaway).toBeUndefined();
    expect(events.tooManyPings).toBe(0);
  });
});
