import { DomainError, type ErrorKind } from '../domain-errors.js';

/**
 * Queue API errors: a kind, a message and, for some, the reference's error code; rendered in the
 * Queue envelope {"error","code":<int>,"exceptionId","status":"error","context":{}}, the code
 * as context.errorCode. A QueueError's message is written for the client, also
 * when the node is unavailable (503).
 */
export class QueueError extends DomainError {
  constructor(kind: ErrorKind, message: string, errorCode?: string) {
    super(kind, errorCode ?? '', message);
  }
}

export const jobNotFound = (id: string): QueueError => new QueueError('notFound', `Job "${id}" not found`, 'job.notFound');
