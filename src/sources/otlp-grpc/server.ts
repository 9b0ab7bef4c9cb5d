/**
 * OTLP over gRPC: a grpc-js server with the three collector services (services.ts) on a port of
 * its own (`--otlp-grpc-port`, 4317 by default). A call is admitted on its metadata
 * (admission.ts: the Bearer secret finds the source); its message, inflated by grpc-js when
 * the client compressed it (gzip, deflate) and bounded by `--otlp-max-body-size` before and
 * after inflating (grpc-js's max_receive_message_length: RESOURCE_EXHAUSTED beyond, while
 * inflating, so a bomb stops at the limit), is exported by the same core as OTLP/HTTP
 * (sources/otlp/ingest.ts) and answered with the signal's Export*ServiceResponse
 * (partial_success as on HTTP) or a status (status.ts).
 */
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import type { Logger } from '../../logger.js';
import { SIGNALS, type Signal } from '../../model/definition.js';
import type { IngestSources } from '../ingest/sources.js';
import { encodeExportResponse } from '../otlp/encode.js';
import type { OtlpIngest } from '../otlp/ingest.js';
import { admission, type AdmittedCall } from './admission.js';
import { StartFailure } from '../../start-failure.js';
import { EXPORT, exportService } from './services.js';
import { GrpcCode, INTERNAL, refusalOf, statusOf, type CallRefusal } from './status.js';

export interface OtlpGrpcOptions {
  /** The export core, shared with OTLP/HTTP (its in-flight budget too). */
  ingest: OtlpIngest;
  sources: IngestSources;
  /** Largest request message, as sent and after grpc-js inflated it (`--otlp-max-body-size`). */
  maxBodyBytes: number;
  isShuttingDown: () => boolean;
  logger: Logger;
  /** Called once per answered call: its code and seconds (the ingestion metrics). */
  answered?: (code: number, seconds: number) => void;
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
  const { interceptor, admitted } = admission({ sources: opts.sources, ingest: opts.ingest, isShuttingDown: opts.isShuttingDown, answered: opts.answered, log });
  const server = new Server({
    // Bounds the message as sent and while grpc-js inflates it (RESOURCE_EXHAUSTED beyond).
    'grpc.max_receive_message_length': opts.maxBodyBytes,
    interceptors: [interceptor],
  });
  for (const signal of SIGNALS) server.addService(exportService(signal), { [EXPORT]: exportHandler(signal, opts.ingest, admitted, log) });

  const hostPort = `${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`;
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(hostPort, ServerCredentials.createInsecure(), (err, boundPort) => {
      if (err) {
        reject(new StartFailure(`OTLP/gRPC cannot listen on ${hostPort} (--otlp-grpc-port, SLUICE_OTLP_GRPC_PORT; 0 turns it off): ${err.message}`));
      } else {
        resolve(boundPort);
      }
    });
  });
  const address = `${hostPort.slice(0, hostPort.lastIndexOf(':'))}:${bound}`;
  log.info({ address }, 'OTLP/gRPC listening');
  let closing: Promise<void> | undefined;
  return {
    address,
    port: bound,
    close(graceMs = CLOSE_GRACE_MS) {
      closing ??= new Promise<void>((resolve) => {
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
