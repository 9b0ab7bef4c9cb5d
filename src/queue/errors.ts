/**
 * Queue API errors: an HTTP status and a message; rendered in the Queue envelope
 * {"error","code":<int>,"exceptionId","status":"error","context":{}} (reference §3.7).
 */
export class QueueError extends Error {
  constructor(readonly statusCode: number, message: string, readonly errorCode?: string) {
    super(message);
  }
}

export const jobNotFound = (id: string): QueueError => new QueueError(404, `Job "${id}" not found`, 'job.notFound');
