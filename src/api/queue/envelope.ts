import { createHash } from 'node:crypto';
import { QueueError } from '../../queue/errors.js';
import { ApiError } from '../../http/errors.js';
import type { ErrorFormatter } from '../../http/error-handler.js';

const INTERNAL = 'Internal Server Error occurred.';

/**
 * The Queue API's error body (keboola/api-error-control, as the reference answers):
 * {"error": "<msg>", "code": <HTTP status>, "exceptionId": "exception-<md5>", "status": "error", "context": {}}.
 */
export const queueErrors: ErrorFormatter = {
  logMessage: 'queue request failed',
  refused({ type, statusCode, error }) {
    switch (type) {
      case 'mediaType': return new ApiError(415, '', 'Unsupported content type: send application/json.');
      case 'tooLarge': return new ApiError(413, '', 'Request body is too large.');
      case 'invalidJson': return new ApiError(400, '', `Invalid JSON body: ${error.message}`);
      default: return new ApiError(statusCode, '', error.message);
    }
  },
  internal: { code: '', message: INTERNAL },
  // Every answer has one.
  exceptionId: { make: (req) => 'exception-' + createHash('md5').update(`${req.id}-${Date.now()}-${Math.random()}`).digest('hex'), always: true },
  write(f, _req, reply) {
    return reply.status(f.statusCode).type('application/json').send({
      // A QueueError's message is written for the client (e.g. 503 "this node does not run jobs"); other failures stay hidden.
      error: f.statusCode >= 500 && !(f.cause instanceof QueueError) ? INTERNAL : f.message,
      code: f.statusCode,
      exceptionId: f.exceptionId,
      status: 'error',
      context: f.code ? { errorCode: f.code } : {},
    });
  },
};
