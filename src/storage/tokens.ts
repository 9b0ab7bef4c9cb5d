import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sequenceIds } from './id-sequence.js';
import type { IdAllocator } from '../ports/id-allocator.js';
import { findCaughtUp, type KeySpace, type MetadataStore, type MetadataTx } from '../ports/metadata-store.js';
import type { Token } from './token-model.js';

export type { Token };

const TOKEN_PREFIX = 'storage/token/';
const HASH_INDEX = 'storage/tokenByHash/';
/** The Storage API tokens and their hash index, shared by the cluster's nodes. */
export const TOKEN_KEY_SPACES: readonly KeySpace[] = [
  { prefix: TOKEN_PREFIX, shared: true },
  { prefix: HASH_INDEX, shared: true },
];

export interface NewToken {
  description: string;
  canManageBuckets?: boolean;
  canManageTokens?: boolean;
  canReadAllFileUploads?: boolean;
  bucketPermissions?: Record<string, 'read' | 'write'>;
  componentAccess?: string[];
  /** Seconds from now; undefined or null = never expires. */
  expiresIn?: number | null;
}

export function hashToken(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * Storage API tokens: the master token and scoped tokens. Only a sha256 hash of each token
 * is stored; a presented token is found through its hash and compared in constant time.
 */
export class TokenService {
  constructor(
    private readonly store: MetadataStore,
    private readonly projectId: number,
    private readonly ids: IdAllocator = sequenceIds,
  ) {}

  /**
   * Makes `secret` the master token (replacing an earlier master token's hash if it differs).
   * Returns the master token record.
   */
  ensureMaster(secret: string): Token {
    return this.store.transact((tx) => {
      const hash = hashToken(secret);
      const existing = tx.list<Token>(TOKEN_PREFIX).map((e) => e.value).find((t) => t.isMasterToken);
      if (existing && existing.hash === hash) return existing;
      if (existing) tx.delete(HASH_INDEX + existing.hash);
      const token: Token = {
        id: existing?.id ?? this.nextId(tx),
        description: existing?.description ?? 'Master Token',
        hash,
        isMasterToken: true,
        canManageBuckets: true,
        canManageTokens: true,
        canReadAllFileUploads: true,
        bucketPermissions: {},
        expires: null,
        created: existing?.created ?? new Date().toISOString(),
        admin: { id: 1, name: 'Sluice Admin', role: 'admin' },
      };
      tx.put(TOKEN_PREFIX + token.id, token);
      tx.put(HASH_INDEX + hash, token.id);
      return token;
    });
  }

  /** Generates a token string in the Keboola shape `<projectId>-<tokenId>-<40 chars>`. */
  generateSecret(tokenId: string): string {
    return `${this.projectId}-${tokenId}-${randomBytes(30).toString('base64url').slice(0, 40)}`;
  }

  /** The valid (known, unexpired) token for a presented secret, or undefined. */
  authenticate(secret: string, now = new Date()): Token | undefined {
    const hash = hashToken(secret);
    const id = this.store.get<string>(HASH_INDEX + hash);
    if (id === undefined) return undefined;
    const token = this.store.get<Token>(TOKEN_PREFIX + id);
    if (!token) return undefined;
    if (!timingSafeEqual(Buffer.from(token.hash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
    if (isExpired(token, now)) return undefined;
    return token;
  }

  /**
   * authenticate() for API calls: a secret this node does not know is looked up once more after
   * the node caught up with the cluster's metadata (a token another node has just created).
   */
  authenticateCaughtUp(secret: string): Promise<Token | undefined> {
    return findCaughtUp(this.store, () => this.authenticate(secret));
  }

  create(spec: NewToken, tx?: MetadataTx): { token: Token; secret: string } {
    const run = (t: MetadataTx) => {
      const id = this.nextId(t);
      const secret = this.generateSecret(id);
      const token: Token = {
        id,
        description: spec.description,
        hash: hashToken(secret),
        isMasterToken: false,
        canManageBuckets: spec.canManageBuckets ?? false,
        canManageTokens: spec.canManageTokens ?? false,
        canReadAllFileUploads: spec.canReadAllFileUploads ?? false,
        bucketPermissions: spec.bucketPermissions ?? {},
        ...(spec.componentAccess ? { componentAccess: spec.componentAccess } : {}),
        expires: spec.expiresIn ? new Date(Date.now() + spec.expiresIn * 1000).toISOString() : null,
        created: new Date().toISOString(),
      };
      t.put(TOKEN_PREFIX + id, token);
      t.put(HASH_INDEX + token.hash, id);
      return { token, secret };
    };
    return tx ? run(tx) : this.store.transact(run);
  }

  get(id: string): Token | undefined {
    return this.store.get<Token>(TOKEN_PREFIX + id);
  }

  list(): Token[] {
    return this.store.list<Token>(TOKEN_PREFIX).map((e) => e.value).sort((a, b) => Number(a.id) - Number(b.id));
  }

  /** Deletes a token; returns false when it did not exist. */
  delete(id: string, tx?: MetadataTx): boolean {
    const run = (t: MetadataTx) => {
      const token = t.get<Token>(TOKEN_PREFIX + id);
      if (!token) return false;
      t.delete(TOKEN_PREFIX + id);
      t.delete(HASH_INDEX + token.hash);
      return true;
    };
    return tx ? run(tx) : this.store.transact(run);
  }

  private nextId(tx: MetadataTx): string {
    return this.ids.next(tx, 'token');
  }
}

export function isExpired(token: Token, now = new Date()): boolean {
  return token.expires !== null && Date.parse(token.expires) <= now.getTime();
}
