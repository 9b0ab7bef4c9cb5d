import type { FastifyRequest } from 'fastify';
import type { TokenService } from '../../storage/tokens.js';
import type { Token } from '../../storage/token-model.js';
import { tokenFromRequest } from '../auth.js';
import { accessDenied, tokenInvalid } from './envelope.js';
import { canReadBucket } from '../../storage/token-scopes.js';

/** Storage API authentication: every route needs a valid, unexpired X-StorageApi-Token. */
export function storageAuthHook(tokens: Pick<TokenService, 'authenticateCaughtUp'>) {
  return async (req: FastifyRequest): Promise<void> => {
    const secret = tokenFromRequest(req);
    const token = secret === undefined ? undefined : await tokens.authenticateCaughtUp(secret);
    if (!token) throw tokenInvalid();
    req.token = token;
  };
}

/** 403 accessDenied unless the token may read the bucket. */
export function requireBucketRead(token: Token, bucketId: string): void {
  if (!canReadBucket(token, bucketId)) throw accessDenied();
}

/** 403 accessDenied unless the token may manage tokens (the master token). */
export function requireManageTokens(token: Token): void {
  if (!token.canManageTokens) throw accessDenied();
}
