import { TargetUnavailableError } from '../storage/target.js';

/**
 * A failure with an HTTP status and a machine-readable code. Services throw these; each API
 * family's plugin renders them in its own envelope (the Stream API as
 * {statusCode, error: "stream.api.<code>", message}, the Storage API as {error, code, status}).
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

/** Reference messages are sentences: first letter capitalised, trailing period. */
export function sentence(message: string): string {
  const m = message.trim();
  if (m === '') return m;
  const first = m[0].toUpperCase() + m.slice(1);
  return /[.!?)]$/.test(first) ? first : first + '.';
}

/**
 * Domain failures every API family answers alike (each in its own envelope): the target being
 * unreachable is a 503 with the reason, not an application error.
 */
export function fromDomainError(err: unknown): ApiError | undefined {
  if (err instanceof TargetUnavailableError) {
    return new ApiError(503, 'targetUnavailable', `The tables cannot be reached now; try again in a moment (${err.message}).`);
  }
  return undefined;
}
