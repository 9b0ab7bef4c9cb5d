import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { ApiError, sentence } from '../../http/errors.js';
import { renderError, type ErrorFormatter } from '../../http/error-handler.js';
import { goaValidationError } from './validation.js';
import { unsupportedMediaType } from './body.js';

const PREFIX = 'stream.api.';

/** The Stream API envelope {statusCode, error: "stream.api.<code>", message[, exceptionId]}. */
export const streamErrors: ErrorFormatter = {
  logMessage: 'request failed',
  refused({ type, statusCode, error }, req) {
    switch (type) {
      case 'validation': return goaValidationError(error);
      // The request's type, not fastify's message ("Unsupported Media Type").
      case 'mediaType': return unsupportedMediaType(req.headers['content-type']);
      case 'emptyJson': return new ApiError(400, 'badRequest', 'Request body is empty, JSON expected.');
      case 'tooLarge': return new ApiError(413, 'bodyTooLarge', 'Request body is too large.');
      case 'invalidJson': return new ApiError(400, 'badRequest', sentence(`Invalid JSON body: ${error.message}`));
      default: return new ApiError(statusCode, 'badRequest', sentence(error.message));
    }
  },
  internal: { code: 'internalError', message: 'Internal error.' },
  exceptionId: { make: (req) => `sluice-stream-api-${req.id}-${randomBytes(4).toString('hex')}` },
  applicationError: true,
  write(f, _req, reply) {
    // Messages the application throws are made sentences, as the reference writes them.
    const body: Record<string, unknown> = { statusCode: f.statusCode, error: PREFIX + f.code, message: f.origin === 'thrown' ? sentence(f.message) : f.message };
    if (f.exceptionId !== undefined) body.exceptionId = f.exceptionId;
    return reply.status(f.statusCode).type('application/json').send(body);
  },
};

export function streamNotFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = req.url.split('?')[0];
  return renderError(streamErrors, new ApiError(404, 'endpointNotFound', `No endpoint found for path "${path}".`), req, reply);
}
