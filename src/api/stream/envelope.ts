import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { ApiError, fromDomainError, sentence } from '../errors.js';
import { goaValidationError } from './validation.js';
import { unsupportedMediaType } from './body.js';

const PREFIX = 'stream.api.';

/** Renders any error in the Stream API envelope {statusCode, error, message[, exceptionId]}. */
export function renderStreamError(err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const apiErr = toApiError(err, req);
  const body: Record<string, unknown> = {
    statusCode: apiErr.statusCode,
    error: PREFIX + apiErr.code,
    message: apiErr.message,
  };
  if (apiErr.statusCode >= 500) {
    const exceptionId = `sluice-stream-api-${req.id}-${randomBytes(4).toString('hex')}`;
    req.log.error({ err, exceptionId }, 'request failed');
    body.exceptionId = exceptionId;
    if (!(err instanceof ApiError) && !fromDomainError(err)) {
      body.message = `Application error. Please contact our support with exception id (${exceptionId}) attached.`;
    }
  }
  return reply.status(apiErr.statusCode).type('application/json').send(body);
}

export function streamNotFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = req.url.split('?')[0];
  return renderStreamError(new ApiError(404, 'endpointNotFound', `No endpoint found for path "${path}".`), req, reply);
}

function toApiError(err: unknown, req: FastifyRequest): ApiError {
  const domain = fromDomainError(err);
  if (domain) return domain;
  if (err instanceof ApiError) return new ApiError(err.statusCode, err.code, sentence(err.message));
  const fe = err as FastifyError;
  if (fe && Array.isArray(fe.validation)) return goaValidationError(fe);
  // The request's type, not fastify's message ("Unsupported Media Type").
  if (fe?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return unsupportedMediaType(req.headers['content-type']);
  if (fe?.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return new ApiError(400, 'badRequest', 'Request body is empty, JSON expected.');
  if (fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new ApiError(413, 'bodyTooLarge', 'Request body is too large.');
  if (fe?.statusCode === 400 && (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError)) {
    return new ApiError(400, 'badRequest', sentence(`Invalid JSON body: ${fe.message}`));
  }
  if (fe?.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ApiError(fe.statusCode, 'badRequest', sentence(fe.message));
  }
  return new ApiError(500, 'internalError', 'Internal error.');
}
