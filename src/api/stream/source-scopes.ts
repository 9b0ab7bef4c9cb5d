/**
 * What a token may see and do of a source beyond its definition, judged by the buckets its sinks
 * write to (disabled sinks included: they write again once enabled). The ingestion secret lets
 * anyone write into those buckets, so only a token that may write to every one of them sees it;
 * raw records (bodies, senders' addresses and headers) need read on every one of them. A source
 * without sinks belongs to no bucket a grant could name: only the tokens that see every bucket
 * (master, canManageBuckets) pass.
 */
import type { Sink } from '../../model/definition.js';
import type { Token } from '../../storage/token-model.js';
import { bucketOf } from '../../definition/sink-lifecycle.js';
import { canReadAllBuckets, canWriteAllBuckets, canReadBucket, canWriteBucket } from '../../storage/token-scopes.js';
import { ApiError } from '../../http/errors.js';

/** What the documentation of the raw-record routes (records, failures) says of their rights. */
export const RAW_RECORDS_RIGHTS = 'Needs read on the buckets of all the source\'s sinks (403 otherwise). The senders\' Authorization, Cookie, Proxy-Authorization and X-StorageApi-Token headers are answered as "*****".';

/** The buckets the sinks write to, each once, in the sinks' order. */
export function bucketsOfSinks(sinks: readonly Sink[]): string[] {
  return [...new Set(sinks.map((s) => bucketOf(s.table.tableId)))];
}

/** Whether the token sees the source's ingestion secret (http.url, otlp.url, otlp.secret). */
export function showsSourceSecret(token: Token, sinks: readonly Sink[]): boolean {
  return canWriteAllBuckets(token, bucketsOfSinks(sinks));
}

/** 403 stream.api.forbidden unless the token may read every bucket of the source's sinks. */
export function requireSourceRead(token: Token, sourceId: string, sinks: readonly Sink[], action: string): void {
  const buckets = bucketsOfSinks(sinks);
  if (canReadAllBuckets(token, buckets)) return;
  throw refused(action, sourceId, 'read', buckets.find((b) => !canReadBucket(token, b)));
}

/** 403 stream.api.forbidden unless the token may write every bucket of the source's sinks. */
export function requireSourceWrite(token: Token, sourceId: string, sinks: readonly Sink[], action: string): void {
  const buckets = bucketsOfSinks(sinks);
  if (canWriteAllBuckets(token, buckets)) return;
  throw refused(action, sourceId, 'write', buckets.find((b) => !canWriteBucket(token, b)));
}

function refused(action: string, sourceId: string, permission: 'read' | 'write', bucket: string | undefined): ApiError {
  const why = bucket === undefined
    ? 'the source has no sinks, so only the master token or a token with canManageBuckets may'
    : `this token has no ${permission} permission on bucket "${bucket}"`;
  return new ApiError(403, 'forbidden',
    `This token may not ${action} source "${sourceId}": that needs ${permission} permission on the buckets of all the source's sinks, and ${why}.`);
}
