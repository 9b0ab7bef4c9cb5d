import type { FastifyRequest } from 'fastify';
import type { Token } from '../storage/token-model.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated Storage API token, set by the family's auth hook. */
    token?: Token;
  }
}

export const TOKEN_HEADER = 'x-storageapi-token';

export function tokenFromRequest(req: FastifyRequest): string | undefined {
  const v = req.headers[TOKEN_HEADER];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s === '' ? undefined : s;
}

export function requireToken(req: FastifyRequest): Token {
  if (!req.token) throw new Error('route is missing its authentication hook');
  return req.token;
}
