/**
 * OTLP over gRPC: a grpc-js server with the three collector services (services.ts) on a port of
 * its own (`--otlp-grpc-port`, 4317 by default). A call is admitted on its metadata
 * (admission.ts: the Bearer secret finds the source); its message, inflated by grpc-js when
 * the client compressed it (gzip, deflate) and bounded by `--otlp-max-body-size` before and
 * after inflating (grpc-js's max_receive_message_length: RESOURCE_EXHAUSTED beyond, while
 * inflating, so a bomb stops at the limit), is exported by the same core as OTLP/HTTP
 * (sources/otlp/ingest.ts) and answered with the signal's Export*ServiceResponse
 * (partial_success as on HTTP) or a status (status.ts).
 *
 * What a client may hold is bounded (limits.ts): grpc-js enforces calls per connection, idle
 * and age; the port is bound here so that connections are capped before grpc-js takes them
 * (connections.ts), and its HTTP/2 sessions and streams are watched for pings (pings.ts) and for
 * every call's status, also those grpc-js answers itself (call-answers.ts).
 */
import type { Http2Server } from 'node:http2';
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import type { Logger } from '../../logger.js';
import { SIGNALS, type Signal } from '../../model/definition.js';
import type { IngestSources } from '../ingest/sources.js';
import { encodeExportResponse } from '../otlp/encode.js';
import type { OtlpIngest } from '../otlp/ingest.js';
import { admission, type AdmittedCall } from './admission.js';
import { countCallAnswers, type CallAnswered } from './call-answers.js';
import { listenCapped, type ConnectionEvents, type ConnectionGate } from './connections.js';
import { grpcJsOptions, type GrpcLimits } from './limits.js';
import { enforcePingInterval } from './pings.js';
import { StartFailure } from '../../start-failure.js';
import { EXPORT, exportService } from './services.js';
import { GrpcCode, INTERNAL, refusalOf, statusOf, type CallRefusal } from './status.js';

export interface OtlpGrpcOptions {
  /** The export core, shared with OTLP/HTTP (its in-flight budget too). */
  ingest: OtlpIngest;
  sources: IngestSources;
  /** Largest request message, as sent and after grpc-js inflated it (`--otlp-max-body-size`). */
  maxBodyBytes: number;
  /** What one client may hold (the `--otlp-grpc-*` flags). */
  limits: GrpcLimits;
  /** The node's connection cap, shared with the HTTP listeners (`--max-connections`); none: only `limits.maxConnections`. */
  nodeConnections?: ConnectionGate;
  isShuttingDown: () => boolean;
  logger: Logger;
  /** Called once per call, whoever answered it: its code and seconds (the ingestion metrics). */
  answered?: CallAnswered;
  /** Connections refused by a cap, opened and closed, closed for their pings (the listener's metrics). */
  events?: ListenerEvents;
}

export interface ListenerEvents extends ConnectionEvents {
  tooManyPings?(): void;
}

export interface OtlpGrpcListener {
  /** `host:port` as bound. */
  address: string;
  port: number;
  /** Refuses new calls, waits for the running ones (at most `graceMs`), then closes every connection. */
  close(graceMs?: number): Promise<void>;
}

/** How long close() waits for running calls by default before it cuts them. */
const CLOSE_GRACE_MS = 5000;

/**
 * Starts the listener on `host:port` (port 0: a free one, for tests; the flag's 0 means off and
 * never gets here).
 */
export async function startOtlpGrpc(opts: OtlpGrpcOptions, host: string, port: number): Promise<OtlpGrpcListener> {
  const log = opts.logger;
  const { interceptor, admitted } = admission({ sources: opts.sources, ingest: opts.ingest, isShuttingDown: opts.isShuttingDown, log });
  const server = new Server({
    ...grpcJsOptions(opts.limits),
    // Bounds the message as sent and while grpc-js inflates it (RESOURCE_EXHAUSTED beyond).
    'grpc.max_receive_message_length': opts.maxBodyBytes,
    interceptors: [interceptor],
  });
  for (const signal of SIGNALS) server.addService(exportService(signal), { [EXPORT]: exportHandler(signal, opts.ingest, admitted, log) });
  const injector = server.createConnectionInjector(ServerCredentials.createInsecure());
  const http2 = injectorHttp2Server(server);
  if (opts.answered) countCallAnswers(http2, opts.answered);
  const { minPingIntervalMs } = opts.limits;
  if (minPingIntervalMs > 0) {
    http2.on('session', (session) => enforcePingInterval(session, minPingIntervalMs, () => {
      log.warn({ remoteAddress: session.socket?.remoteAddress }, 'OTLP/gRPC connection closed: too many pings (--otlp-grpc-min-ping-interval)');
      opts.events?.tooManyPings?.();
    }));
  }

  const hostPort = `${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
  const listener = await listenCapped({
    host, port, maxConnections: opts.limits.maxConnections, node: opts.nodeConnections, events: opts.events, log,
    accept: (socket) => injector.injectConnection(socket),
  }).catch((err: unknown) => {
    server.forceShutdown();
    throw new StartFailure(`OTLP/gRPC cannot listen on ${hostPort} (--otlp-grpc-port, SLUICE_OTLP_GRPC_PORT; 0 turns it off): ${(err as Error).message}`);
  });
  const bound = (listener.address() as { port: number }).port;
  const address = `${hostPort.slice(0, hostPort.lastIndexOf(':'))}:${bound}`;
  log.info({ limits: opts.limits, address }, 'OTLP/gRPC listening');
  let closing: Promise<void> | undefined;
  return {
    address,
    port: bound,
    close(graceMs = CLOSE_GRACE_MS) {
      closing ??= new Promise<void>((resolve) => {
        // No new connection; grpc-js answers the new calls of open ones UNAVAILABLE and waits for the running.
        listener.close();
        const force = setTimeout(() => {
          log.warn({ address }, 'OTLP/gRPC calls still running at shutdown were cut');
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return closing;
    },
  };
}

/**
 * The HTTP/2 server grpc-js made for the connection injector. grpc-js has no hook for its
 * sessions or streams; its servers are in the private `http2Servers` map (grpc-js 1.10 to 1.14,
 * the version in package-lock.json): if that changes, the start fails here, loudly.
 */
function injectorHttp2Server(server: Server): Http2Server {
  const servers = (server as unknown as { http2Servers?: unknown }).http2Servers;
  const found = servers instanceof Map ? [...(servers as Map<unknown, unknown>).keys()] : [];
  const h2 = found[0] as Partial<Http2Server> | undefined;
  if (found.length !== 1 || typeof h2?.on !== 'function' || typeof h2.listeners !== 'function' || h2.listeners('session').length === 0) {
    throw new Error(`grpc-js changed: its connection injector's HTTP/2 server is not where Sluice looks for it (${found.length} servers)`);
  }
  return h2 as Http2Server;
}

/** The Export handler of one signal: the admitted call's message through the export core. */
function exportHandler(signal: Signal, ingest: OtlpIngest, admitted: WeakMap<object, AdmittedCall>, log: Logger) {
  return (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>): void => {
    const admittedCall = admitted.get(call.metadata);
    if (!admittedCall) {
      // Every registered call passes the interceptor; this would be a bug.
      log.error({ signal }, 'OTLP/gRPC call reached its handler without admission');
      callback(statusOf(INTERNAL));
      return;
    }
    const { target, ip, headers } = admittedCall;
    ingest.export({ target, signal, encoding: 'protobuf', body: call.request, ip, headers, log }).then(
      (result) => callback(null, encodeExportResponse(signal, 'protobuf', result.partial)),
      (err: unknown) => callback(statusOf(refusal(err, target.source.sourceId, log))),
    );
  };
}

/** The refusal to answer; unexpected errors are logged (INTERNAL), the node's refusals warned about. */
function refusal(err: unknown, sourceId: string, log: Logger): CallRefusal {
  const known = refusalOf(err);
  if (!known) {
    log.error({ err, sourceId }, 'OTLP/gRPC ingestion failed');
    return INTERNAL;
  }
  if (known.code === GrpcCode.UNAVAILABLE) log.warn({ sourceId, details: known.details }, 'OTLP/gRPC ingestion refused');
  return known;
}
