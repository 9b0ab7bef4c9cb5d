/**
 * What a Storage API token may do with buckets, in one place for every API family and the job
 * runner: the master token and tokens with canManageBuckets see and manage every bucket (and
 * create new ones); any other token only the buckets its `bucketPermissions` name.
 */
import type { Token } from './token-model.js';

/** The master token and tokens with canManageBuckets see and manage every bucket. */
export function seesAllBuckets(token: Token): boolean {
  return token.isMasterToken || token.canManageBuckets;
}

/** The token's permission on a bucket: "manage" for bucket managers, else its own grant. */
export function bucketPermission(token: Token, bucketId: string): 'manage' | 'write' | 'read' | undefined {
  if (seesAllBuckets(token)) return 'manage';
  return token.bucketPermissions[bucketId];
}

export function canReadBucket(token: Token, bucketId: string): boolean {
  return bucketPermission(token, bucketId) !== undefined;
}

export function canWriteBucket(token: Token, bucketId: string): boolean {
  const permission = bucketPermission(token, bucketId);
  return permission === 'manage' || permission === 'write';
}

/**
 * Whether the token may read every one of these buckets. An empty list belongs to no bucket a
 * grant could name, so only the tokens that see every bucket pass.
 */
export function canReadAllBuckets(token: Token, bucketIds: readonly string[]): boolean {
  if (seesAllBuckets(token)) return true;
  return bucketIds.length > 0 && bucketIds.every((id) => canReadBucket(token, id));
}

/** As canReadAllBuckets, for write (an empty list: only the tokens that see every bucket). */
export function canWriteAllBuckets(token: Token, bucketIds: readonly string[]): boolean {
  if (seesAllBuckets(token)) return true;
  return bucketIds.length > 0 && bucketIds.every((id) => canWriteBucket(token, id));
}
