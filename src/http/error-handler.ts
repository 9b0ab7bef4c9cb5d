/**
 * The one error handler of every API family: maps a thrown error (a DomainError, an ApiError, a
 * request fastify refused: schema validation, body parsing; anything else: a 500) to a status,
 * code and message, makes the exception id, logs, hides the message of an unexpected failure,
 * and leaves the body to the family's formatter (stream/envelope.ts, storage/envelope.ts,
 * queue/envelope.ts, ingest/envelope.ts, otlp/answers.ts). Only failures pass here: the
 * success path (and the ingestion fast path) pays nothing.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, asDomainError, LoggedRefusal, RETRY_AFTER, statusOf } from './errors.js';

/** What fastify refused before a route's handler ran. */
export interface RequestRefusal {
  /**
   * validation: the route's schema; mediaType: no parser for the Content-Type; emptyJson,
   * invalidJson: the JSON body; tooLarge: over the body limit; other: any other 4xx.
   */
  type: 'validation' | 'mediaType' | 'emptyJson' | 'tooLarge' | 'invalidJson' | 'other';
  statusCode: number;
  error: FastifyError;
}

/** A failure as a family's formatter renders it. */
export interface Failure {
  statusCode: number;
  code: string;
  message: string;
  /**
   * thrown: an error the application threw on purpose (DomainError, ApiError, a family's own
   * class), its message written for the client; refused: a request fastify refused; unexpected:
   * anything else, a 500 whose message says only where it was logged.
   */
  origin: 'thrown' | 'refused' | 'unexpected';
  /** The error as classified (e.g. a StorageValidationError with its per-field list). */
  error: ApiError;
  exceptionId?: string;
  /** What was thrown. */
  cause: unknown;
}

export interface ErrorFormatter {
  /** The log message of a failed request (5xx). */
  logMessage: string;
  /** Errors of the family's own classes (e.g. the event log being full), checked first. */
  own?(err: unknown): ApiError | undefined;
  /** The family's answer to a request fastify refused. */
  refused(refusal: RequestRefusal, req: FastifyRequest): ApiError;
  /** Code and message of an unexpected failure (500). */
  internal: { code: string; message: string };
  /** The family's exception ids: on 5xx answers (on every answer with `always`); without, none. */
  exceptionId?: { make(req: FastifyRequest): string; always?: boolean };
  /** An unexpected failure's message is "Application error ..." with its exception id. */
  applicationError?: boolean;
  /**
   * Statuses that are refusals of the node (log full, too many requests), not failures: logged
   * as warnings and answered with Retry-After: 1.
   */
  refusals?: { statuses: readonly number[]; logMessage: string };
  /** The family's envelope. */
  write(failure: Failure, req: FastifyRequest, reply: FastifyReply): FastifyReply;
}

/** The message of an unexpected failure: no detail, only the id under which it was logged. */
export function applicationErrorMessage(exceptionId: string): string {
  return `Application error. Please contact our support with exception id (${exceptionId}) attached.`;
}

/** Answers `err` in the family's envelope. */
export function renderError(formatter: ErrorFormatter, err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const failure = classify(formatter, err, req);
  const { statusCode } = failure;
  const ids = formatter.exceptionId;
  if (ids && (statusCode >= 500 || ids.always)) failure.exceptionId = ids.make(req);
  if (formatter.refusals?.statuses.includes(statusCode)) {
    reply.header('retry-after', RETRY_AFTER);
    req.log[failure.error instanceof LoggedRefusal ? 'debug' : 'warn']({ code: failure.code, exceptionId: failure.exceptionId }, formatter.refusals.logMessage);
  } else if (statusCode >= 500) {
    req.log.error({ err, exceptionId: failure.exceptionId }, formatter.logMessage);
    if (failure.origin === 'unexpected' && formatter.applicationError && failure.exceptionId !== undefined) {
      failure.message = applicationErrorMessage(failure.exceptionId);
    }
  }
  return formatter.write(failure, req, reply);
}

/** Makes `formatter` the error handler of `app`'s plugin context (and of the contexts it registers). */
export function answerErrorsWith(app: FastifyInstance, formatter: ErrorFormatter): void {
  app.setErrorHandler((err, req, reply) => renderError(formatter, err, req, reply));
}

function classify(formatter: ErrorFormatter, err: unknown, req: FastifyRequest): Failure {
  const own = formatter.own?.(err);
  if (own) return failure(own, 'thrown', err);
  const domain = asDomainError(err);
  if (domain) return failure(new ApiError(statusOf(domain), domain.code, domain.message), 'thrown', err);
  if (err instanceof ApiError) return failure(err, 'thrown', err);
  const refusal = requestRefusal(err);
  if (refusal) return failure(formatter.refused(refusal, req), 'refused', err);
  return failure(new ApiError(500, formatter.internal.code, formatter.internal.message), 'unexpected', err);
}

function failure(error: ApiError, origin: Failure['origin'], cause: unknown): Failure {
  return { statusCode: error.statusCode, code: error.code, message: error.message, origin, error, cause };
}

/** A request fastify (or a body parser) refused with a 4xx, or undefined. */
export function requestRefusal(err: unknown): RequestRefusal | undefined {
  const fe = err as FastifyError | undefined;
  if (!fe) return undefined;
  const refusal = (type: RequestRefusal['type']): RequestRefusal => ({ type, statusCode: fe.statusCode ?? 400, error: fe });
  if (Array.isArray(fe.validation)) return refusal('validation');
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return refusal('mediaType');
  if (fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return refusal('emptyJson');
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return refusal('tooLarge');
  if (fe.statusCode === 400 && (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError)) return refusal('invalidJson');
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) return refusal('other');
  return undefined;
}
