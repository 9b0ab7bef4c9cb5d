/**
 * The rules behind the token scopes (src/storage/token-scopes.ts, src/api/stream/source-scopes.ts)
 * and the masking of senders' credential headers (src/pipeline/headers.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Token } from '../../../src/storage/token-model.js';
import type { Sink } from '../../../src/model/definition.js';
import { canReadAllBuckets, canWriteAllBuckets, canWriteBucket } from '../../../src/storage/token-scopes.js';
import { bucketsOfSinks, requireSourceRead, requireSourceWrite, showsSourceSecret } from '../../../src/api/stream/source-scopes.js';
import { MASKED_HEADER_VALUE, maskCredentialHeaders } from '../../../src/pipeline/headers.js';

function token(overrides: Partial<Token> = {}): Token {
  return {
    id: '7', description: 't', hash: '', isMasterToken: false, canManageBuckets: false, canManageTokens: false,
    canReadAllFileUploads: false, bucketPermissions: {}, expires: null, created: '', ...overrides,
  };
}

const sink = (tableId: string) => ({ table: { type: 'keboola', tableId, mapping: { columns: [] } } }) as unknown as Sink;

describe('bucket scopes', () => {
  it('give every bucket to the master token and canManageBuckets, and only the granted ones to others', () => {
    for (const all of [token({ isMasterToken: true }), token({ canManageBuckets: true })]) {
      expect(canWriteAllBuckets(all, [])).toBe(true);
      expect(canWriteAllBuckets(all, ['in.c-a', 'in.c-b'])).toBe(true);
    }
    const reader = token({ bucketPermissions: { 'in.c-a': 'read', 'in.c-b': 'write' } });
    expect(canReadAllBuckets(reader, ['in.c-a', 'in.c-b'])).toBe(true);
    expect(canWriteAllBuckets(reader, ['in.c-b'])).toBe(true);
    expect(canWriteAllBuckets(reader, ['in.c-a', 'in.c-b'])).toBe(false);
    expect(canReadAllBuckets(reader, ['in.c-a', 'in.c-c'])).toBe(false);
    expect(canWriteBucket(reader, 'in.c-a')).toBe(false);
  });

  it('give an empty list of buckets (a source without sinks) only to tokens that see every bucket', () => {
    const granted = token({ bucketPermissions: { 'in.c-a': 'write' } });
    expect(canReadAllBuckets(granted, [])).toBe(false);
    expect(canWriteAllBuckets(granted, [])).toBe(false);
    expect(showsSourceSecret(granted, [])).toBe(false);
    expect(showsSourceSecret(token({ canManageBuckets: true }), [])).toBe(true);
  });
});

describe('source scopes', () => {
  const sinks = [sink('in.c-a.x'), sink('in.c-a.y'), sink('in.c-b.z')];

  it('judge a source by the buckets of all its sinks', () => {
    expect(bucketsOfSinks(sinks)).toEqual(['in.c-a', 'in.c-b']);
    expect(showsSourceSecret(token({ bucketPermissions: { 'in.c-a': 'write' } }), sinks)).toBe(false);
    expect(showsSourceSecret(token({ bucketPermissions: { 'in.c-a': 'write', 'in.c-b': 'write' } }), sinks)).toBe(true);
    expect(showsSourceSecret(token({ bucketPermissions: { 'in.c-a': 'write', 'in.c-b': 'read' } }), sinks)).toBe(false);
  });

  it('refuse with 403 naming the bucket the token lacks', () => {
    const reader = token({ bucketPermissions: { 'in.c-a': 'read', 'in.c-b': 'read' } });
    expect(() => requireSourceRead(reader, 'shop', sinks, 'read the records of')).not.toThrow();
    expect(() => requireSourceWrite(reader, 'shop', sinks, 'replay the records of')).toThrow(expect.objectContaining({
      statusCode: 403,
      code: 'forbidden',
      message: 'This token may not replay the records of source "shop": that needs write permission on the buckets of all the source\'s sinks, and this token has no write permission on bucket "in.c-a".',
    }));
    expect(() => requireSourceWrite(token({ isMasterToken: true }), 'shop', sinks, 'replay the records of')).not.toThrow();
  });
});

describe('credential headers', () => {
  it('are masked in what is answered, whatever their case; other headers and the original stay', () => {
    const headers = { Authorization: 'Bearer x', cookie: 'a=b', 'PROXY-AUTHORIZATION': 'Basic y', 'X-Storageapi-Token': 't', 'X-Order': '1' };
    expect(maskCredentialHeaders(headers)).toEqual({
      Authorization: MASKED_HEADER_VALUE, cookie: MASKED_HEADER_VALUE, 'PROXY-AUTHORIZATION': MASKED_HEADER_VALUE,
      'X-Storageapi-Token': MASKED_HEADER_VALUE, 'X-Order': '1',
    });
    expect(MASKED_HEADER_VALUE).toBe('*****');
    expect(headers.Authorization).toBe('Bearer x');
  });
});
