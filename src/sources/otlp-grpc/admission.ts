/**
 * Who may call: a grpc-js server interceptor that decides on the call's metadata alone, before
 * grpc-js reads (or inflates) the request message: the node stopping (UNAVAILABLE), the
 * `authorization: Bearer <secret>` metadata that finds the OTLP source (UNAUTHENTICATED when
 * missing or unknown), the source disabled (PERMISSION_DENIED: the secret is right, the source
 * refuses), its sinks too far behind (RESOURCE_EXHAUSTED + RetryInfo). An admitted call's
 * source, address and headers wait for its handler (`admitted`). (Every call's status is
 * counted on its stream, call-answers.ts.)
 */
import {
  ServerInterceptingCall, type Metadata, type ServerInterceptingCallInterface, type ServerInterceptor,
} from '@grpc/grpc-js';
import { normalizeIp } from '../../pipeline/columns/ip.js';
import { headersFromRaw } from '../../pipeline/headers.js';
import type { IngestSources, IngestTarget } from '../ingest/sources.js';
import type { OtlpIngest } from '../otlp/ingest.js';
import { GrpcCode, GrpcRefusal, INTERNAL, refusalOf, statusOf } from './status.js';

/** What an admitted call's handler needs beside its message. */
export interface AdmittedCall {
  target: IngestTarget;
  ip: string;
  /** The call's metadata as the records' headers: canonical names, without Authorization and binary values. */
  headers: Record<string, string>;
}

export interface AdmissionOptions {
  sources: IngestSources;
  ingest: Pick<OtlpIngest, 'admit'>;
  isShuttingDown: () => boolean;
  /** Where an unexpected failure of the admission is logged (answered INTERNAL). */
  log: { error(obj: object, msg: string): void };
}

const BEARER = /^bearer\s+(\S+)\s*$/i;
export const SHUTTING_DOWN = 'The node is shutting down, please retry later.';
export const NO_SECRET = 'Missing metadata "authorization: Bearer <secret>" with the OTLP source\'s secret.';
export const UNKNOWN_SECRET = 'No OTLP source has this secret.';

/** The interceptor, and the admitted calls by their metadata (the handler's `call.metadata`). */
export function admission(opts: AdmissionOptions): { interceptor: ServerInterceptor; admitted: WeakMap<Metadata, AdmittedCall> } {
  const admitted = new WeakMap<Metadata, AdmittedCall>();

  function admit(metadata: Metadata, call: ServerInterceptingCallInterface): AdmittedCall {
    if (opts.isShuttingDown()) throw new GrpcRefusal(GrpcCode.UNAVAILABLE, SHUTTING_DOWN, 1000);
    const secret = bearerSecret(metadata);
    if (secret === undefined) throw new GrpcRefusal(GrpcCode.UNAUTHENTICATED, NO_SECRET);
    const target = opts.sources.lookupBySecret(secret, 'otlp');
    if (!target) throw new GrpcRefusal(GrpcCode.UNAUTHENTICATED, UNKNOWN_SECRET);
    if (target.source.disabled) throw new GrpcRefusal(GrpcCode.PERMISSION_DENIED, `The source "${target.source.sourceId}" is disabled.`);
    opts.ingest.admit(target);
    return { target, ip: normalizeIp(call.getConnectionInfo().remoteAddress) ?? '', headers: recordHeaders(metadata) };
  }

  const interceptor: ServerInterceptor = (_method, call) => {
    const intercepted: ServerInterceptingCall = new ServerInterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(metadata, nextListener) {
            let admittedCall: AdmittedCall;
            try {
              admittedCall = admit(metadata, call);
            } catch (err) {
              const refusal = refusalOf(err);
              if (!refusal) opts.log.error({ err }, 'OTLP/gRPC admission failed');
              // Not passed on: the handler never asks for the message, which is never read.
              intercepted.sendStatus(statusOf(refusal ?? INTERNAL));
              return;
            }
            admitted.set(metadata, admittedCall);
            nextListener(metadata);
          },
        });
      },
    });
    return intercepted;
  };
  return { interceptor, admitted };
}

/** The secret of `authorization: Bearer <secret>` (scheme in any case), or undefined. */
export function bearerSecret(metadata: Metadata): string | undefined {
  const values = metadata.get('authorization');
  const first = values.length > 0 ? values[0] : undefined;
  if (typeof first !== 'string') return undefined;
  return BEARER.exec(first)?.[1];
}

/** Metadata the records never carry: the secret. */
const OMITTED_HEADERS: ReadonlySet<string> = new Set(['Authorization']);

/** The call's text metadata as a record's headers (binary `-bin` values are left out). */
export function recordHeaders(metadata: Metadata): Record<string, string> {
  const raw: string[] = [];
  for (const [name, values] of Object.entries(metadata.toJSON())) {
    const first = values[0];
    if (typeof first === 'string' && !name.startsWith(':')) raw.push(name, first);
  }
  return headersFromRaw(raw, OMITTED_HEADERS);
}
