/**
 * The listener's socket and its connection cap. grpc-js has no option for a cap, so the port is
 * bound here (node:net) and each accepted connection is handed to grpc-js through its connection
 * injector, within two caps: the listener's own (`--otlp-grpc-max-connections`) and the node's
 * (`--max-connections`, shared with the HTTP listeners: they all use file descriptors). A
 * connection over either is reset at once (TCP RST, before any HTTP/2 byte: a gRPC client sees
 * UNAVAILABLE and retries after its back-off), counted, and warned about at most every 10 s.
 */
import { createServer, type Server as NetServer, type Socket } from 'node:net';

/** The node-wide connection cap (http/http-server.ts's HttpServers): counts the socket until it closes, or says no. */
export interface ConnectionGate {
  tryCount(socket: Socket): boolean;
}

/** Which cap refused a connection: the listener's own, or the node's. */
export type ConnectionLimit = 'otlp-grpc' | 'node';

export interface ConnectionEvents {
  refused?(limit: ConnectionLimit): void;
  /** A connection was taken (+1) or closed (-1). */
  open?(delta: 1 | -1): void;
}

export interface CappedListenerOptions {
  host: string;
  port: number;
  /** The listener's own cap; 0: none (the node's still applies). */
  maxConnections: number;
  node?: ConnectionGate;
  /** Hands an accepted connection to grpc-js. */
  accept(socket: Socket): void;
  events?: ConnectionEvents;
  log: { warn(obj: object, msg: string): void };
}

/** At most one warning about refused connections per this interval, with the count since the last. */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

/** Binds `host:port` and accepts connections within the caps. Rejects with the bind error (EADDRINUSE, ...). */
export async function listenCapped(opts: CappedListenerOptions): Promise<NetServer> {
  let open = 0;
  let refusedSinceLog = 0;
  let lastRefusalLog = 0;
  const refuse = (socket: Socket, limit: ConnectionLimit) => {
    socket.on('error', () => undefined);
    socket.resetAndDestroy();
    opts.events?.refused?.(limit);
    refusedSinceLog++;
    const now = Date.now();
    if (now - lastRefusalLog < REFUSAL_LOG_INTERVAL_MS) return;
    opts.log.warn({ refused: refusedSinceLog, maxConnections: opts.maxConnections, limit }, `OTLP/gRPC connections refused: ${limit === 'node' ? 'the node is at its connection limit (--max-connections)' : 'the listener is at its connection limit (--otlp-grpc-max-connections)'}`);
    lastRefusalLog = now;
    refusedSinceLog = 0;
  };
  // noDelay: gRPC answers are small frames that must not wait for Nagle's algorithm.
  const server = createServer({ noDelay: true }, (socket) => {
    if (opts.maxConnections > 0 && open >= opts.maxConnections) return refuse(socket, 'otlp-grpc');
    if (opts.node && !opts.node.tryCount(socket)) return refuse(socket, 'node');
    open++;
    opts.events?.open?.(1);
    socket.once('close', () => {
      open--;
      opts.events?.open?.(-1);
    });
    opts.accept(socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: opts.host, port: opts.port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}
