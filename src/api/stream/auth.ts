import type { FastifyRequest } from 'fastify';
import type { TokenService } from '../../storage/tokens.js';
import { ApiError } from '../../http/errors.js';
import { tokenFromRequest } from '../auth.js';

/**
 * Stream API authentication: every /v1 route but the index needs X-StorageApi-Token; write
 * operations need an admin (master) token, as in the reference.
 */
export function streamAuthHook(tokens: Pick<TokenService, 'authenticateCaughtUp'>) {
  return async (req: FastifyRequest): Promise<void> => {
    const secret = tokenFromRequest(req);
    if (secret === undefined) throw new ApiError(400, 'missingField', '"X-StorageApi-Token" is missing from header.');
    const token = await tokens.authenticateCaughtUp(secret);
    if (!token) throw new ApiError(401, 'unauthorized', 'Invalid storage token.');
    req.token = token;
    if (req.method !== 'GET' && req.method !== 'HEAD' && !token.isMasterToken && !isTestEndpoint(req)) {
      throw new ApiError(403, 'forbidden', 'Only admin token can do write operations on streams.');
    }
  };
}

function isTestEndpoint(req: FastifyRequest): boolean {
  return req.routeOptions.url?.endsWith('/test') ?? false;
}
