/**
 * Answers of the OTLP/HTTP endpoint, in the request's encoding:
 * Export*ServiceResponse (empty, or with partial_success) and google.rpc.Status for errors.
 */
import type { Signal } from '../../model/definition.js';
import type { OtlpEncoding } from './decode.js';
import { otlpTypes } from './schema.js';

export interface PartialSuccess {
  rejected: number;
  errorMessage: string;
}

/** The count field of partial_success per signal (protobufjs and OTLP/JSON name). */
const REJECTED_FIELD: Record<Signal, string> = {
  logs: 'rejectedLogRecords',
  metrics: 'rejectedDataPoints',
  traces: 'rejectedSpans',
};

/** The Export*ServiceResponse; empty (zero bytes / `{}`) when partial is undefined. */
export function encodeExportResponse(signal: Signal, encoding: OtlpEncoding, partial?: PartialSuccess): Buffer {
  if (encoding === 'json') {
    if (!partial) return Buffer.from('{}');
    // protojson writes int64 as a string.
    return Buffer.from(JSON.stringify({ partialSuccess: { [REJECTED_FIELD[signal]]: String(partial.rejected), errorMessage: partial.errorMessage } }));
  }
  if (!partial) return Buffer.alloc(0);
  const t = otlpTypes();
  const type = signal === 'logs' ? t.logsResponse : signal === 'metrics' ? t.metricsResponse : t.traceResponse;
  const msg = type.fromObject({ partialSuccess: { [REJECTED_FIELD[signal]]: partial.rejected, errorMessage: partial.errorMessage } });
  return Buffer.from(type.encode(msg).finish());
}

/** gRPC status codes used by the HTTP answers (google.rpc.Code). */
export const RPC_CODE = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/** A google.rpc.Status in protobuf. */
export function encodeRpcStatus(code: number, message: string): Buffer {
  const type = otlpTypes().rpcStatus;
  return Buffer.from(type.encode(type.fromObject({ code, message })).finish());
}
