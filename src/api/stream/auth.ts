import type { FastifyRequest } from 'fastify';
import type { TokenService } from '../../storage/tokens.js';
import { ApiError } from '../../http/errors.js';
import { tokenFromRequest } from '../auth.js';

/**
 * Stream API authentication: every /v1 route but the index needs X-StorageApi-Token; write
 * operations need an admin (master) token, as in the reference. Sluice's POSTs that write
 * nothing (the test endpoint, the mapping proposal) check their own rights instead.
 */
export function streamAuthHook(tokens: Pick<TokenService, 'authenticateCaughtUp'>) {
  return async (req: FastifyRequest): Promise<void> => {
    const secret = tokenFromRequest(req);
    if (secret === undefined) throw new ApiError(400, 'missingField', '"X-StorageApi-Token" is missing from header.');
    const token = await tokens.authenticateCaughtUp(secret);
    if (!token) throw new ApiError(401, 'unauthorized', 'Invalid storage token.');
    req.token = token;
    if (req.method !== 'GET' && req.method !== 'HEAD' && !token.isMasterToken && !isReadOnlyPost(req)) {
      throw new ApiError(403, 'forbidden', 'Only admin token can do write operations on streams.');
    }
  };
}

const READ_ONLY_POSTS = ['/sources/:sourceId/test', '/sources/:sourceId/sinks/infer'];

function isReadOnlyPost(req: FastifyRequest): boolean {
  const url = req.routeOptions.url;
  return req.method === 'POST' && url !== undefined && READ_ONLY_POSTS.some((tail) => url.endsWith(tail));
}
