/**
 * The gRPC status of every refusal of an OTLP/gRPC call, as the OTLP specification prescribes:
 * the client retries UNAVAILABLE, and RESOURCE_EXHAUSTED only when the status carries a
 * google.rpc.RetryInfo (in the `grpc-status-details-bin` trailer, a google.rpc.Status with the
 * RetryInfo packed in an Any); every other code is final. The export core (sources/otlp/ingest.ts)
 * throws its refusals as OTLP/HTTP answers them; they map here:
 *
 * | refusal | OTLP/HTTP | gRPC |
 * | --- | --- | --- |
 * | undecodable request | 400 | INVALID_ARGUMENT |
 * | too large (flattened records) | 413 | RESOURCE_EXHAUSTED, no RetryInfo (final, as grpc-js's own "message larger than max") |
 * | in-flight budget used up, sinks too far behind | 429 | RESOURCE_EXHAUSTED + RetryInfo 1 s |
 * | the source's quota | 429 | RESOURCE_EXHAUSTED + RetryInfo (the quota's delay) |
 * | log full, write failed, node stopping | 503 | UNAVAILABLE + RetryInfo 1 s |
 * | anything unexpected | 500 | INTERNAL (logged) |
 *
 * Authentication (admission.ts) adds UNAUTHENTICATED and PERMISSION_DENIED.
 */
import { Metadata, status as GrpcCode, type StatusObject } from '@grpc/grpc-js';
import { ApiError, RETRY_AFTER, sentence } from '../../http/errors.js';
import { EventLogFullError } from '../../ports/event-log.js';
import { LOG_FULL, QuotaRefusal, rpcCode } from '../otlp/answers.js';
import { OtlpDecodeError } from '../otlp/decode.js';
import { encodeRpcStatus, retryInfo } from '../otlp/encode.js';
import { FlattenLimitError } from '../otlp/flatten.js';

export { status as GrpcCode } from '@grpc/grpc-js';

/** A call's refusal: its code, its message, and when the client may retry (RetryInfo), if it may. */
export interface CallRefusal {
  code: GrpcCode;
  details: string;
  retryAfterMs?: number;
}

/** A refusal of the gRPC transport itself (authentication, the node stopping). */
export class GrpcRefusal extends Error {
  constructor(
    readonly code: GrpcCode,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** The delay of the refusals that OTLP/HTTP answers with `Retry-After: 1`. */
const RETRY_MS = Number(RETRY_AFTER) * 1000;

/** The refusal an error stands for, or undefined when it is unexpected (INTERNAL, logged by the caller). */
export function refusalOf(err: unknown): CallRefusal | undefined {
  if (err instanceof GrpcRefusal) return { code: err.code, details: err.message, retryAfterMs: err.retryAfterMs };
  if (err instanceof QuotaRefusal) return { code: GrpcCode.RESOURCE_EXHAUSTED, details: err.message, retryAfterMs: err.verdict.retryAfterMs };
  if (err instanceof OtlpDecodeError) return { code: GrpcCode.INVALID_ARGUMENT, details: sentence(err.message) };
  if (err instanceof FlattenLimitError) return { code: GrpcCode.RESOURCE_EXHAUSTED, details: sentence(err.message) };
  if (err instanceof EventLogFullError) return { code: GrpcCode.UNAVAILABLE, details: LOG_FULL, retryAfterMs: RETRY_MS };
  if (err instanceof ApiError) return fromHttpStatus(err.statusCode, err.message);
  return undefined;
}

function fromHttpStatus(statusCode: number, details: string): CallRefusal {
  if (statusCode === 413) return { code: GrpcCode.RESOURCE_EXHAUSTED, details };
  if (statusCode === 429) return { code: GrpcCode.RESOURCE_EXHAUSTED, details, retryAfterMs: RETRY_MS };
  if (statusCode === 503) return { code: GrpcCode.UNAVAILABLE, details, retryAfterMs: RETRY_MS };
  return { code: rpcCode(statusCode), details };
}

export const INTERNAL: CallRefusal = { code: GrpcCode.INTERNAL, details: 'Internal error.' };

/** The status to send: code, message, and the RetryInfo in `grpc-status-details-bin` when the client may retry. */
export function statusOf(refusal: CallRefusal): StatusObject {
  const metadata = new Metadata();
  if (refusal.retryAfterMs !== undefined) {
    metadata.set('grpc-status-details-bin', encodeRpcStatus(refusal.code, refusal.details, [retryInfo(refusal.retryAfterMs)]));
  }
  return { code: refusal.code, details: refusal.details, metadata };
}
