/**
 * Answers of the ingestion endpoint: the Stream envelope
 * {statusCode, error: "stream.in.<name>", message[, exceptionId]} for request errors, and the
 * verbose/failure JSON {statusCode, error?, message, sources: [...]} of the reference.
 */
import { randomBytes } from 'node:crypto';
import { ApiError, sentence } from '../../http/errors.js';
import { applicationErrorMessage, type ErrorFormatter } from '../../http/error-handler.js';
import { EventLogFullError } from '../../ports/event-log.js';
import type { IngestTarget } from './sources.js';
import type { QuotaVerdict } from './quota.js';

const PREFIX = 'stream.in.';

export const NO_SOURCE_FOUND = 'The specified combination of projectID, sourceID and secret was not found.';
export const NO_ENABLED_SINK = 'No enabled sink found. The record is kept and will be delivered to sinks enabled later.';
export const LOG_FULL = 'The event log cannot accept more data at the moment, please retry later.';
export const SHUTTING_DOWN = 'The node is shutting down, please retry later.';
export const SINKS_BEHIND = 'The sinks of this source are too far behind its records at the moment, please retry later.';
export const ROUTE_NOT_FOUND = 'Not found, please send data using POST /stream/<projectID>/<sourceID>/<secret>';

export const noSourceFound = (): ApiError => new ApiError(404, 'noSourceFound', NO_SOURCE_FOUND);

/** A byte limit as the reference prints it (c2h5oh/datasize): the largest exact unit, "1MB", "8000B". */
export function formatByteLimit(bytes: number): string {
  const units: Array<[number, string]> = [[1024 ** 4, 'TB'], [1024 ** 3, 'GB'], [1024 ** 2, 'MB'], [1024, 'KB']];
  for (const [size, suffix] of units) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${suffix}`;
  }
  return `${bytes}B`;
}

export { applicationErrorMessage };

/** `requestId`: fastify's request id, or any id of the request (the fast path's). */
export function exceptionId(requestId: string): string {
  return `sluice-stream-in-${requestId}-${randomBytes(4).toString('hex')}`;
}

/**
 * The ingestion envelope {statusCode, error: "stream.in.<code>", message[, exceptionId]}.
 * `maxBodyBytes`: the limit a too large body is told (the route's own limit first).
 */
export function ingestErrors(maxBodyBytes: number): ErrorFormatter {
  return {
    logMessage: 'ingestion failed',
    own: (err) => (err instanceof EventLogFullError ? new ApiError(503, 'logFull', LOG_FULL) : undefined),
    refused({ type, statusCode, error }, req) {
      if (type === 'tooLarge') {
        return new ApiError(413, 'bodyTooLarge', `Request body size is over the maximum "${formatByteLimit(req.routeOptions.bodyLimit ?? maxBodyBytes)}".`);
      }
      return new ApiError(statusCode, 'badRequest', sentence(error.message));
    },
    internal: { code: 'genericError', message: 'Internal error.' },
    exceptionId: { make: (req) => exceptionId(req.id) },
    applicationError: true,
    refusals: { statuses: [503], logMessage: 'ingestion refused' },
    // Messages are sent as written, the way the reference prints them (routeNotFound has no period).
    write(f, _req, reply) {
      const body: Record<string, unknown> = { statusCode: f.statusCode, error: PREFIX + f.code, message: f.message };
      if (f.exceptionId !== undefined) body.exceptionId = f.exceptionId;
      return reply.code(f.statusCode).type('application/json; charset=utf-8').send(body);
    },
  };
}

export interface SinkResult {
  sinkId: string;
  statusCode: number;
  error?: string;
  message: string;
  /**
   * Verbose answers: why the sink will not be able to map the record (its reason as the sink's
   * failures list shows it). The record is accepted all the same (the statusCode says so) and
   * kept as a mapping failure of the sink, to be reprocessed once the mapping is fixed.
   */
  mappingError?: string;
}

export interface SourceResult {
  projectId: number;
  sourceId: string;
  branchId: number;
  statusCode: number;
  error?: string;
  message: string;
  sinks: SinkResult[];
}

export interface IngestResult {
  statusCode: number;
  error?: string;
  message: string;
  exceptionId?: string;
  sources: SourceResult[];
}

/**
 * The verbose answer of an acknowledged record: 200 "processed" (durable) or 202 "accepted".
 * `notMapped`: the reasons of the sinks that will not be able to map it, by sink id; those sinks
 * say so (same status: the record is accepted and kept as their mapping failure).
 */
export function successResult(projectId: number, target: IngestTarget, statusCode: 200 | 202, notMapped?: ReadonlyMap<string, string>): IngestResult {
  const n = target.enabledSinks.length;
  const failing = target.enabledSinks.filter((s) => notMapped?.has(s.sinkId)).length;
  const message = n === 0
    ? NO_ENABLED_SINK
    : `Successfully written to ${n - failing}/${n} sinks.${failing > 0 ? ` ${failing} could not map the record: kept as a mapping failure.` : ''}`;
  const sinkMessage = statusCode === 200 ? 'processed' : 'accepted';
  const sinkResult = (sinkId: string): SinkResult => {
    const reason = notMapped?.get(sinkId);
    if (reason === undefined) return { sinkId, statusCode, message: sinkMessage };
    return { sinkId, statusCode, message: `${sinkMessage}; not mapped, kept as a mapping failure: ${reason}`, mappingError: reason };
  };
  return {
    statusCode,
    message,
    sources: [{
      projectId,
      sourceId: target.source.sourceId,
      branchId: target.source.branchId,
      statusCode,
      message,
      sinks: target.enabledSinks.map((s) => sinkResult(s.sinkId)),
    }],
  };
}

/** Why appendToLog refused a request, by its status: nothing was acknowledged. */
const REFUSALS = {
  /** The source's sinks are too far behind (actors/backlog-gate.ts). */
  429: { name: 'tooManyRequests', message: SINKS_BEHIND },
  /** The log refused the records (full, or the durable write failed). */
  503: { name: 'logFull', message: LOG_FULL },
} as const;

/**
 * The answer to a request appendToLog refused (429 or 503), or the source's quota refused
 * (429, `message`: the quota's sentence, quota.ts).
 */
export function refusalResult(statusCode: 429 | 503, requestId: string, projectId: number, target: IngestTarget, quotaMessage?: string): IngestResult {
  const { name } = REFUSALS[statusCode];
  const message = quotaMessage ?? REFUSALS[statusCode].message;
  const n = target.enabledSinks.length;
  const error = PREFIX + name;
  return {
    statusCode,
    error,
    message,
    exceptionId: exceptionId(requestId),
    sources: [{
      projectId,
      sourceId: target.source.sourceId,
      branchId: target.source.branchId,
      statusCode,
      error,
      message: n === 0 ? message : `Written to 0/${n} sinks.`,
      sinks: target.enabledSinks.map((s) => ({ sinkId: s.sinkId, statusCode, error, message })),
    }],
  };
}

/** Lets a browser client read the quota's headers (ingestion answers allow any origin). */
export const QUOTA_CORS = { 'access-control-expose-headers': 'retry-after, ratelimit, ratelimit-policy' } as const;

/**
 * Puts the quota's headers on a fastify answer (RateLimit on a success, with Retry-After on a
 * refusal) and returns the refusal's message, or undefined when the request may go on.
 */
export function withQuota(reply: { headers(values: Record<string, string>): unknown }, verdict: QuotaVerdict): string | undefined {
  if (verdict.headers) reply.headers({ ...verdict.headers, ...QUOTA_CORS });
  return verdict.ok ? undefined : verdict.message;
}

/** At most this many rejected records are described in a batch answer; the count covers all. */
const MAX_REPORTED_REJECTIONS = 10;

export interface BatchResult {
  statusCode: 200 | 202;
  message: string;
  accepted: number;
  rejected: number;
  errors: Array<{ index: number; message: string }>;
}

/**
 * The answer to a connector batch: 200 once durable (202 with sync.wait=false) with the counts
 * of accepted and rejected records and the first rejections (OTLP partial_success, Tinybird
 * successful_rows/quarantined_rows in spirit).
 */
export function batchResult(statusCode: 200 | 202, batch: { records: unknown[]; rejected: Array<{ index: number; message: string }> }): BatchResult {
  const accepted = batch.records.length;
  const rejected = batch.rejected.length;
  const verb = statusCode === 200 ? 'Successfully written' : 'Accepted';
  return {
    statusCode,
    message: `${verb} ${accepted} of ${accepted + rejected} records${rejected > 0 ? `; ${rejected} rejected` : ''}.`,
    accepted,
    rejected,
    errors: batch.rejected.slice(0, MAX_REPORTED_REJECTIONS),
  };
}
