/**
 * Error answers of the OTLP endpoint. OTLP/HTTP wants a google.rpc.Status in the request's
 * encoding: protobuf requests get exactly that; JSON requests (and requests whose encoding is
 * unknown) get its JSON form `{"code", "message"}` together with Sluice's ingestion envelope
 * `{"statusCode", "error": "stream.in.<name>"}`, so both kinds of clients can read it.
 * 429 and 503 carry `Retry-After`, which OTLP exporters honour.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, sentence } from '../errors.js';
import { EventLogFullError } from '../../connectors/event-log/event-log.js';
import { encodeRpcStatus, RPC_CODE } from '../../connectors/otlp/encode.js';
import { encodingOf, OtlpDecodeError } from '../../connectors/otlp/decode.js';
import { FlattenLimitError } from '../../pipeline/otlp/flatten.js';
import { bodyTooLarge } from './body.js';

export const LOG_FULL = 'The event log cannot accept more data at the moment, please retry later.';

function rpcCode(status: number): number {
  if (status === 404) return RPC_CODE.NOT_FOUND;
  if (status === 429) return RPC_CODE.RESOURCE_EXHAUSTED;
  if (status === 503) return RPC_CODE.UNAVAILABLE;
  if (status >= 500) return RPC_CODE.INTERNAL;
  return RPC_CODE.INVALID_ARGUMENT;
}

function toApiError(err: unknown, maxBodyBytes: number): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof OtlpDecodeError) return new ApiError(400, 'badRequest', sentence(err.message));
  if (err instanceof FlattenLimitError) return new ApiError(413, 'bodyTooLarge', sentence(err.message));
  if (err instanceof EventLogFullError) return new ApiError(503, 'logFull', LOG_FULL);
  const fe = err as FastifyError | undefined;
  if (fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return bodyTooLarge(maxBodyBytes);
  if (fe?.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) return new ApiError(fe.statusCode, 'badRequest', sentence(fe.message));
  return new ApiError(500, 'genericError', 'Internal error.');
}

export function renderOtlpError(err: unknown, req: FastifyRequest, reply: FastifyReply, maxBodyBytes: number): FastifyReply {
  const e = toApiError(err, maxBodyBytes);
  if (e.statusCode === 500) req.log.error({ err }, 'OTLP ingestion failed');
  else if (e.statusCode >= 429) req.log.warn({ code: e.code }, 'OTLP ingestion refused');
  if (e.statusCode === 429 || e.statusCode === 503) reply.header('retry-after', '1');
  const code = rpcCode(e.statusCode);
  if (encodingOf(req.headers['content-type']) === 'protobuf') {
    return reply.code(e.statusCode).type('application/x-protobuf').send(encodeRpcStatus(code, e.message));
  }
  return reply
    .code(e.statusCode)
    .type('application/json')
    .send({ code, message: e.message, statusCode: e.statusCode, error: `stream.in.${e.code}` });
}
