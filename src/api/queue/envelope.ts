import { createHash } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { QueueError } from '../../queue/errors.js';
import { ApiError, fromDomainError } from '../errors.js';

/**
 * The Queue API's error body (keboola/api-error-control, reference §3.7):
 * {"error": "<msg>", "code": <HTTP status>, "exceptionId": "exception-<md5>", "status": "error", "context": {}}.
 */
export function renderQueueError(err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { statusCode, message, errorCode } = toQueueError(err);
  const exceptionId = 'exception-' + createHash('md5').update(`${req.id}-${Date.now()}-${Math.random()}`).digest('hex');
  if (statusCode >= 500) req.log.error({ err, exceptionId }, 'queue request failed');
  return reply.status(statusCode).type('application/json').send({
    // A QueueError's message is written for the client (e.g. 503 "this node does not run jobs"); other failures stay hidden.
    error: statusCode >= 500 && !(err instanceof QueueError) ? 'Internal Server Error occurred.' : message,
    code: statusCode,
    exceptionId,
    status: 'error',
    context: errorCode ? { errorCode } : {},
  });
}

function toQueueError(err: unknown): { statusCode: number; message: string; errorCode?: string } {
  if (err instanceof QueueError) return { statusCode: err.statusCode, message: err.message, errorCode: err.errorCode };
  const domain = fromDomainError(err);
  if (domain) return { statusCode: domain.statusCode, message: domain.message, errorCode: domain.code };
  if (err instanceof ApiError) return { statusCode: err.statusCode, message: err.message, errorCode: err.code };
  const fe = err as FastifyError;
  if (fe?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return { statusCode: 415, message: 'Unsupported content type: send application/json.' };
  if (fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { statusCode: 413, message: 'Request body is too large.' };
  if (fe?.statusCode === 400 && (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError)) {
    return { statusCode: 400, message: `Invalid JSON body: ${fe.message}` };
  }
  if (fe && Array.isArray(fe.validation)) return { statusCode: 400, message: fe.message };
  if (fe?.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) return { statusCode: fe.statusCode, message: fe.message };
  return { statusCode: 500, message: 'Internal Server Error occurred.' };
}
