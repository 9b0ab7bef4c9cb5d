/**
 * Answers of the OTLP endpoints, in the request's encoding:
 * Export*ServiceResponse (empty, or with partial_success) and google.rpc.Status for errors
 * (OTLP/gRPC: with a google.rpc.RetryInfo detail when the client may retry).
 */
import protobuf from 'protobufjs';
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

/** A google.protobuf.Any: the packed message's type URL and its bytes. */
export interface AnyMessage {
  typeUrl: string;
  value: Uint8Array;
}

/** A google.rpc.Status in protobuf, with its details (none by default). */
export function encodeRpcStatus(code: number, message: string, details: readonly AnyMessage[] = []): Buffer {
  const type = otlpTypes().rpcStatus;
  // protobufjs' built-in google.protobuf.Any keeps the proto's field name, type_url.
  const status = details.length === 0 ? { code, message } : { code, message, details: details.map((d) => ({ type_url: d.typeUrl, value: d.value })) };
  return Buffer.from(type.encode(type.create(status)).finish());
}

export const RETRY_INFO_TYPE_URL = 'type.googleapis.com/google.rpc.RetryInfo';

/**
 * A google.rpc.RetryInfo (error_details.proto) of `ms` milliseconds, packed in an Any: its one
 * field, retry_delay = 1, a google.protobuf.Duration (seconds = 1, int64; nanos = 2, int32).
 * Written field by field: the message is this small, and the rest of error_details.proto is
 * not needed.
 */
export function retryInfo(ms: number): AnyMessage {
  const whole = Math.max(0, Math.round(ms));
  const seconds = Math.floor(whole / 1000);
  const nanos = (whole % 1000) * 1_000_000;
  const duration = protobuf.Writer.create();
  if (seconds > 0) duration.uint32(8).int64(seconds);
  if (nanos > 0) duration.uint32(16).int32(nanos);
  return { typeUrl: RETRY_INFO_TYPE_URL, value: protobuf.Writer.create().uint32(10).bytes(duration.finish()).finish() };
}
