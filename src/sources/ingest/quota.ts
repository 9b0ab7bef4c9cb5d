/**
 * Per-source quotas: how many records and bytes a source may send each second on this node.
 * Every ingestion path (single HTTP records, connector batches, the fast path, OTLP over HTTP
 * and gRPC) asks `take` once per request, after it knows the request's records and their
 * bytes and before it appends them to the log. A refused request takes nothing from the
 * buckets and stores nothing; its answer says when to come back:
 *
 * - HTTP ingestion: 429 with `Retry-After` (whole seconds) and the IETF `RateLimit-Policy` /
 *   `RateLimit` headers (`headers` below), in the path's own envelope;
 * - OTLP/HTTP: 429 with `Retry-After` and a google.rpc.Status (RESOURCE_EXHAUSTED) body;
 * - OTLP/gRPC: RESOURCE_EXHAUSTED with a google.rpc.RetryInfo detail (`retryAfterMs`).
 *
 * The implementation (token buckets, the settings keys, the node-wide default flag, metrics of
 * throttled records) lives beside this file; the paths depend only on this interface.
 */
import type { IngestTarget } from './sources.js';

/** Header name → value, to add to an HTTP answer (lower-case names). */
export type QuotaHeaders = Readonly<Record<string, string>>;

export type QuotaVerdict =
  | {
      readonly ok: true;
      /** RateLimit headers to add to the success answer, when the source has a quota (else undefined). */
      readonly headers?: QuotaHeaders;
    }
  | {
      readonly ok: false;
      /** Which budget ran out. */
      readonly limit: 'records' | 'bytes';
      /** When the request would fit again, in milliseconds (gRPC RetryInfo); at least 1. */
      readonly retryAfterMs: number;
      /** `retry-after` (whole seconds, rounded up, at least 1), `ratelimit-policy`, `ratelimit`. */
      readonly headers: QuotaHeaders;
      /** A sentence for the answer's message, naming the source and its limit. */
      readonly message: string;
    };

export interface SourceQuotas {
  /**
   * Takes `records` records and `bytes` bytes (the request's records as stored: bodies after
   * decompression) from the source's buckets, or refuses the whole request and takes nothing.
   * Synchronous and cheap: called on the hot path of every request.
   */
  take(target: IngestTarget, records: number, bytes: number): QuotaVerdict;
}

const ALLOWED: QuotaVerdict = { ok: true };

/** No quota anywhere: every request passes (tests, and paths built without quotas). */
export const NO_QUOTAS: SourceQuotas = { take: () => ALLOWED };
