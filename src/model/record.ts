import type { Signal } from './definition.js';

/**
 * One received event, as the ingest layer cuts it from a request. It is what every column
 * renderer and template global reads; the body is parsed at most once per record and the
 * parsed value shared by all columns of all sinks (see RecordContext in columns/).
 */
export interface IngestRecord {
  /** Receive time: the `datetime` column and `Now()` use it, never the wall clock. */
  receivedAt: Date;
  /** Client IP address. */
  ip: string;
  /** Canonical header names (Go CanonicalHeaderKey), first value of each. */
  headers: Record<string, string>;
  /** Raw body bytes, unchanged. */
  body: Buffer;
  /** '' for HTTP records; the OTLP signal otherwise. */
  signal: Signal | '';
}
