/**
 * The node's HTTP servers (the API listener and the --metrics-port one) with the limits that keep
 * a client from holding a connection for nothing (docs/configuration.md, "Server timeouts and connections"):
 *
 * - headers: the request line and headers must arrive within `headersTimeoutMs`, counted from
 *   the connection (a client that sends nothing) or from the request's first byte. Node's server
 *   enforces it (headersTimeout, checked every connectionsCheckingInterval) and reports it as a
 *   client error; the answer is a 408 in the Stream envelope, then the connection is closed.
 * - body: a request body that brings no byte for `bodyIdleTimeoutMs` is dropped (408, closed),
 *   whoever reads it: fastify's parsers, the ingestion fast path, OTLP, connector batches; so is
 *   one that trickles, slower on average than `bodyMinRate` bytes a second once the first
 *   `bodyIdleTimeoutMs` have passed (the rule of Apache's mod_reqtimeout: each byte buys time).
 *   There is no total limit, so a large upload that keeps flowing is never cut. Checked here, at
 *   the socket, by a sweep over the open connections that compares each one's bytesRead with
 *   the previous sweep's: a request pays one property write, a chunk of body nothing. A body
 *   still arriving after its answer (a request refused before its body was read) counts too.
 * - connections: at most `maxConnections` are open at once, over all the node's listeners (they
 *   share the file descriptors; the OTLP/gRPC listener's count too, through tryCount). One more
 *   is answered 503 with Retry-After and closed without reading its request; beyond a few such
 *   refusals in flight, closed at once.
 * - keep-alive: an idle connection between requests is closed after 72 s, as fastify's default.
 *
 * Requests themselves have no total time limit: a long export or SQL query keeps its connection.
 */
import { createServer as createNodeServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { goDurationString } from '../pipeline/units.js';
import { RETRY_AFTER } from './errors.js';
import type { Config } from '../config.js';
import { defaultMaxConnections } from './open-files.js';

export interface HttpLimits {
  /** The request line and headers arrive within this; 0: no limit. */
  headersTimeoutMs: number;
  /** A request body that brings no byte for this long is dropped; 0: no limit (and no minimum rate). */
  bodyIdleTimeoutMs: number;
  /** After the first bodyIdleTimeoutMs, a body averages at least this many bytes a second; 0: no minimum. */
  bodyMinRate: number;
  /** Open connections of all the node's listeners together; 0: no cap. */
  maxConnections: number;
}

/** The limits of the configuration; --max-connections unset: sized from the open-files limit. */
export function httpLimits(config: Pick<Config, 'headersTimeoutMs' | 'bodyIdleTimeoutMs' | 'bodyMinRate' | 'maxConnections'>): HttpLimits {
  const { bodyIdleTimeoutMs, bodyMinRate } = config;
  return {
    // Node's server takes whole milliseconds ("1.5ms" is a valid duration).
    headersTimeoutMs: Math.ceil(config.headersTimeoutMs),
    bodyIdleTimeoutMs,
    bodyMinRate,
    maxConnections: config.maxConnections ?? defaultMaxConnections(),
  };
}

/** What the servers log: refused connections (throttled) and dropped requests. */
export interface HttpServerLog {
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

/** Longer than the 60 s idle timeout of common load balancers, so that they close first (fastify's default). */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;
/** A refused client has this long to read its 503 and close before the connection is dropped. */
const REFUSAL_GRACE_MS = 2_000;
/** Refusals in flight at most (each holds a descriptor for up to REFUSAL_GRACE_MS); beyond: closed unanswered. */
const MAX_REFUSALS_IN_FLIGHT = 64;
/** At most one warning about refused connections per this interval, with the count since the last. */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

/** Client errors of the body checks, answered like Node's own timeouts. */
const BODY_IDLE = 'SLUICE_BODY_IDLE_TIMEOUT';
const BODY_SLOW = 'SLUICE_BODY_TOO_SLOW';

/**
 * Per connection: the response of its current request (set at each request), and what the sweeps
 * saw of it: when its body was first seen and with how many bytes read, and when bytesRead last moved.
 */
interface BodyWatch {
  res: ServerResponse | undefined;
  seen: ServerResponse | undefined;
  firstSeen: number;
  firstBytes: number;
  moved: number;
  bytesRead: number;
}
const WATCH = Symbol('sluice.bodyWatch');
type WatchedSocket = Socket & { [WATCH]?: BodyWatch };

/** How often timeouts are checked: a quarter of the shortest, between 50 ms and 1 s. */
export function checkIntervalOf(limits: Pick<HttpLimits, 'headersTimeoutMs' | 'bodyIdleTimeoutMs'>): number {
  const timeouts = [limits.headersTimeoutMs, limits.bodyIdleTimeoutMs].filter((t) => t > 0);
  if (timeouts.length === 0) return 30_000;
  return Math.min(1_000, Math.max(50, Math.floor(Math.min(...timeouts) / 4)));
}

/** A raw HTTP answer in the Stream envelope (the application's answer to unknown routes), closing the connection. */
function rawAnswer(status: number, reason: string, code: string, message: string, headers = ''): string {
  const body = JSON.stringify({ statusCode: status, error: `stream.api.${code}`, message });
  return `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}\r\n${body}`;
}

/**
 * The servers of one node, sharing the connection cap. `createServer` replaces node:http's for
 * every listener of the node.
 */
export class HttpServers {
  private open = 0;
  private refusing = 0;
  private refusedSinceLog = 0;
  private lastRefusalLog = 0;
  private readonly checkIntervalMs: number;

  constructor(
    readonly limits: HttpLimits,
    private readonly log?: HttpServerLog,
  ) {
    this.checkIntervalMs = checkIntervalOf(limits);
  }

  createServer(listener: RequestListener): Server {
    const { headersTimeoutMs, bodyIdleTimeoutMs } = this.limits;
    const watchBodies = bodyIdleTimeoutMs > 0;
    const server = createNodeServer(
      { headersTimeout: headersTimeoutMs, requestTimeout: 0, keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS, connectionsCheckingInterval: this.checkIntervalMs },
      watchBodies ? (req, res) => {
        const watch = (req.socket as WatchedSocket)[WATCH];
        if (watch) watch.res = res;
        listener(req, res);
      } : listener,
    );
    server.setTimeout(0);
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => this.answerClientError(err, socket));
    const sockets = new Set<WatchedSocket>();
    this.capConnections(server, (socket) => {
      if (!watchBodies) return;
      socket[WATCH] = { res: undefined, seen: undefined, firstSeen: 0, firstBytes: 0, moved: 0, bytesRead: 0 };
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    if (watchBodies) {
      let sweep: NodeJS.Timeout | undefined;
      server.on('listening', () => {
        sweep = setInterval(() => this.dropIdleBodies(sockets), this.checkIntervalMs);
        sweep.unref();
      });
      server.on('close', () => clearInterval(sweep));
    }
    return server;
  }

  /**
   * Counts the server's connections against the cap: node:http takes a connection through its one
   * 'connection' listener, which is called here only for the connections within the cap.
   */
  private capConnections(server: Server, accepted: (socket: WatchedSocket) => void): void {
    const listeners = server.listeners('connection');
    if (listeners.length !== 1) throw new Error(`node:http's server has ${listeners.length} connection listeners, 1 expected`);
    const accept = listeners[0] as (socket: Socket) => void;
    server.removeAllListeners('connection');
    server.on('connection', (socket: WatchedSocket) => {
      if (!this.tryCount(socket)) return this.refuse(socket);
      accepted(socket);
      accept.call(server, socket);
    });
  }

  /**
   * Counts a connection of another listener (OTLP/gRPC, which answers its own refusals) against
   * the cap until it closes; false, not counted, when the node is at the cap.
   */
  tryCount(socket: Socket): boolean {
    const { maxConnections } = this.limits;
    if (maxConnections > 0 && this.open >= maxConnections) return false;
    this.open++;
    socket.once('close', () => this.open--);
    return true;
  }

  /** A 503 with Retry-After, the request read and dropped, the connection closed. */
  private refuse(socket: Socket): void {
    this.noteRefusal();
    socket.on('error', () => undefined);
    if (this.refusing >= MAX_REFUSALS_IN_FLIGHT) {
      socket.destroy();
      return;
    }
    this.refusing++;
    socket.once('close', () => this.refusing--);
    socket.setTimeout(REFUSAL_GRACE_MS, () => socket.destroy());
    // Read (and drop) what the client sends: closing with unread bytes would reset the
    // connection, and the client could lose the answer.
    socket.resume();
    const { maxConnections } = this.limits;
    socket.end(rawAnswer(503, 'Service Unavailable', 'tooManyConnections',
      `The server has reached its limit of ${maxConnections} open connections; try again in a moment.`, `Retry-After: ${RETRY_AFTER}\r\n`));
  }

  private noteRefusal(): void {
    this.refusedSinceLog++;
    const now = Date.now();
    if (now - this.lastRefusalLog < REFUSAL_LOG_INTERVAL_MS) return;
    this.log?.warn({ refused: this.refusedSinceLog, maxConnections: this.limits.maxConnections }, 'connections refused: the node is at its connection limit (--max-connections)');
    this.lastRefusalLog = now;
    this.refusedSinceLog = 0;
  }

  /** Drops the requests whose body stopped, or trickles below the minimum rate. */
  private dropIdleBodies(sockets: Set<WatchedSocket>): void {
    const now = performance.now();
    const { bodyIdleTimeoutMs, bodyMinRate } = this.limits;
    for (const socket of sockets) {
      const watch = socket[WATCH]!;
      const res = watch.res;
      if (res === undefined) continue;
      // Complete: received, whatever the application does with it (an answer to a request
      // refused before its body was read does not complete it: the rest is still read).
      if (res.req.complete) {
        watch.res = watch.seen = undefined;
        continue;
      }
      const bytesRead = socket.bytesRead;
      if (watch.seen !== res) {
        watch.seen = res;
        watch.firstSeen = watch.moved = now;
        watch.firstBytes = watch.bytesRead = bytesRead;
        continue;
      }
      if (bytesRead !== watch.bytesRead) {
        watch.bytesRead = bytesRead;
        watch.moved = now;
      }
      const idle = now - watch.moved >= bodyIdleTimeoutMs;
      const slow = bodyMinRate > 0 && bytesRead - watch.firstBytes < (bodyMinRate * (now - watch.firstSeen - bodyIdleTimeoutMs)) / 1000;
      if (!idle && !slow) continue;
      watch.res = watch.seen = undefined;
      this.log?.debug({ url: res.req.url, bytesRead, idle }, 'request body stopped or too slow: connection closed');
      const err: NodeJS.ErrnoException = new Error(idle ? 'request body idle' : 'request body too slow');
      err.code = idle ? BODY_IDLE : BODY_SLOW;
      // Answered only when the application has not started its own answer.
      this.answerClientError(err, socket, res.headersSent);
    }
  }

  /**
   * Node's client errors (headers timeout, malformed request, headers too large) and the body
   * idle timeout: an answer in the Stream envelope when nothing of an answer was written, then
   * the connection is closed.
   */
  answerClientError(err: NodeJS.ErrnoException, socket: Duplex, answering = false): void {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (socket.writable && !answering) socket.write(this.clientErrorAnswer(err));
    socket.destroy();
  }

  private clientErrorAnswer(err: NodeJS.ErrnoException): string {
    switch (err.code) {
      case 'ERR_HTTP_REQUEST_TIMEOUT':
        return rawAnswer(408, 'Request Timeout', 'requestTimeout',
          `The request's headers did not arrive within ${goDurationString(this.limits.headersTimeoutMs)}.`);
      case BODY_IDLE:
        return rawAnswer(408, 'Request Timeout', 'requestTimeout',
          `No byte of the request body arrived for ${goDurationString(this.limits.bodyIdleTimeoutMs)}.`);
      case BODY_SLOW:
        return rawAnswer(408, 'Request Timeout', 'requestTimeout',
          `The request body arrives slower than ${this.limits.bodyMinRate} bytes a second.`);
      case 'HPE_HEADER_OVERFLOW':
        return rawAnswer(431, 'Request Header Fields Too Large', 'headersTooLarge', 'The request headers are too large.');
      default:
        return rawAnswer(400, 'Bad Request', 'badRequest', `The request is not valid HTTP${err.code ? ` (${err.code})` : ''}.`);
    }
  }
}
