/**
 * Error answers of the OTLP endpoint. OTLP/HTTP wants a google.rpc.Status in the request's
 * encoding: protobuf requests get exactly that; JSON requests (and requests whose encoding is
 * unknown) get its JSON form `{"code", "message"}` together with Sluice's ingestion envelope
 * `{"statusCode", "error": "stream.in.<name>"}`, so both kinds of clients can read it.
 * 429 and 503 carry `Retry-After`, which OTLP exporters honour; a quota's 429 carries its own
 * `Retry-After` and the RateLimit headers.
 */
import { ApiError, LoggedRefusal, sentence } from '../../http/errors.js';
import type { ErrorFormatter } from '../../http/error-handler.js';
import { EventLogFullError } from '../../ports/event-log.js';
import { encodeRpcStatus, RPC_CODE } from './encode.js';
import { encodingOf, OtlpDecodeError } from './decode.js';
import { FlattenLimitError } from './flatten.js';
import { bodyTooLarge } from '../ingest/content-encoding.js';
import type { QuotaVerdict } from '../ingest/quota.js';

export const LOG_FULL = 'The event log cannot accept more data at the moment, please retry later.';

/** The source is over its quota: the whole request is refused, nothing stored (a refusal per request: logged at debug). */
export class QuotaRefusal extends LoggedRefusal {
  constructor(readonly verdict: Extract<QuotaVerdict, { ok: false }>) {
    super(429, 'tooManyRequests', verdict.message);
  }
}

/** The google.rpc.Code of an OTLP/HTTP error status (the body's `code`). */
export function rpcCode(status: number): number {
  if (status === 404) return RPC_CODE.NOT_FOUND;
  if (status === 429) return RPC_CODE.RESOURCE_EXHAUSTED;
  if (status === 503) return RPC_CODE.UNAVAILABLE;
  if (status >= 500) return RPC_CODE.INTERNAL;
  return RPC_CODE.INVALID_ARGUMENT;
}

/** The OTLP answers: a google.rpc.Status (protobuf), or its JSON form with the ingestion envelope. */
export function otlpErrors(maxBodyBytes: number): ErrorFormatter {
  return {
    logMessage: 'OTLP ingestion failed',
    own(err) {
      if (err instanceof OtlpDecodeError) return new ApiError(400, 'badRequest', sentence(err.message));
      if (err instanceof FlattenLimitError) return new ApiError(413, 'bodyTooLarge', sentence(err.message));
      if (err instanceof EventLogFullError) return new ApiError(503, 'logFull', LOG_FULL);
      return undefined;
    },
    refused: ({ type, statusCode, error }) =>
      (type === 'tooLarge' ? bodyTooLarge(maxBodyBytes) : new ApiError(statusCode, 'badRequest', sentence(error.message))),
    internal: { code: 'genericError', message: 'Internal error.' },
    refusals: { statuses: [429, 503], logMessage: 'OTLP ingestion refused' },
    write(f, req, reply) {
      const code = rpcCode(f.statusCode);
      // After the error handler's Retry-After: 1, which the quota's own replaces.
      if (f.error instanceof QuotaRefusal) reply.headers(f.error.verdict.headers);
      if (encodingOf(req.headers['content-type']) === 'protobuf') {
        return reply.code(f.statusCode).type('application/x-protobuf').send(encodeRpcStatus(code, f.message));
      }
      return reply
        .code(f.statusCode)
        .type('application/json')
        .send({ code, message: f.message, statusCode: f.statusCode, error: `stream.in.${f.code}` });
    },
  };
}
