/**
 * Failures of the domain, typed by what went wrong rather than by HTTP status: the ground floor
 * of the code (this module imports nothing from the project). Services below api/ (definition/,
 * storage/, queue/) throw these; the HTTP edge alone turns the kind into a status (http/errors.ts, one
 * table) and each API family renders the code and message in its own envelope
 * (http/error-handler.ts).
 */

/**
 * What went wrong, a closed set:
 * - invalid: the input cannot be used (a bad id, a missing field, a malformed value)
 * - unauthorized: no valid credentials
 * - forbidden: the credentials or the object's protection do not allow it
 * - notFound: the object the request names does not exist
 * - alreadyExists: the object the request would create exists
 * - conflict: the object's state does not allow the change (e.g. a job's status transition)
 * - limitReached: a count limit (sources per branch, versions per object) is reached
 * - unavailable: the node cannot do it now (it does not run the role, a dependency is down)
 */
export type ErrorKind = 'invalid' | 'unauthorized' | 'forbidden' | 'notFound' | 'alreadyExists' | 'conflict' | 'limitReached' | 'unavailable';

export interface DomainErrorOptions {
  /**
   * An answer's status that does not follow from the kind. Only for the reference's quirks,
   * each explained where it is used (e.g. the Storage API answers 400, not 409, for a bucket,
   * table or configuration that already exists).
   */
  status?: number;
}

/**
 * A failure with a kind and the reference's machine-readable code (e.g. "sinkNotFound",
 * "storage.tables.notFound"; empty for the Queue API's errors that have none), and a message
 * written for the client.
 */
export class DomainError extends Error {
  readonly status?: number;

  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    options?: DomainErrorOptions,
  ) {
    super(message);
    if (options?.status !== undefined) this.status = options.status;
  }
}

/** Whether `err` is a DomainError (of the given kind). */
export function isDomainError(err: unknown, kind?: ErrorKind): err is DomainError {
  return err instanceof DomainError && (kind === undefined || err.kind === kind);
}
