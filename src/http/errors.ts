import { DomainError, type ErrorKind } from '../domain-errors.js';
import { TargetUnavailableError } from '../ports/target.js';

/**
 * A failure of the HTTP layer with its status and a machine-readable code (authentication,
 * routes, request parsing). Services below api/ throw DomainErrors instead (src/domain-errors.ts);
 * both are rendered by the error handler (error-handler.ts) in each API family's envelope.
 */
export class ApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A refusal whose cause is logged once where it starts and ends (back-pressure: a source's
 * sinks too far behind), not once per request refused meanwhile (debug).
 */
export class LoggedRefusal extends ApiError {}

/** Reference messages are sentences: first letter capitalised, trailing period. */
export function sentence(message: string): string {
  const m = message.trim();
  if (m === '') return m;
  const first = m[0].toUpperCase() + m.slice(1);
  return /[.!?)]$/.test(first) ? first : first + '.';
}

/** The one table of statuses: a domain error's kind -> the HTTP status of its answer. */
export const STATUS_OF_KIND: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  notFound: 404,
  alreadyExists: 409,
  conflict: 409,
  limitReached: 422,
  unavailable: 503,
};

/** The status of a domain error's answer: its kind's, unless it carries a reference quirk. */
export function statusOf(err: DomainError): number {
  return err.status ?? STATUS_OF_KIND[err.kind];
}

/**
 * A failure of the domain as the APIs answer it, or undefined for any other error. Domain
 * failures of other classes are mapped here, once for every API family: the target being
 * unreachable is a 503 with the reason, not an application error.
 */
export function asDomainError(err: unknown): DomainError | undefined {
  if (err instanceof DomainError) return err;
  if (err instanceof TargetUnavailableError) {
    return new DomainError('unavailable', 'targetUnavailable', `The tables cannot be reached now; try again in a moment (${err.message}).`);
  }
  return undefined;
}

/**
 * The Retry-After of every 503 an ingestion path answers because the log refused the records,
 * of every 429 because the sinks are behind, and of a connection refused at the server's limit.
 */
export const RETRY_AFTER = '1';
