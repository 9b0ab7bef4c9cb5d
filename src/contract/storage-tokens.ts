/**
 * The API contract (see stream-sources.ts for why the types are the source): the Storage API's
 * tokens (src/api/storage/format.ts tokenJson builds them).
 */

/** A token as GET /v2/storage/tokens/verify and the token list answer it. */
export interface TokenJson {
  id: string;
  /** The secret: only when the caller holds it (the new token on create, the presented one on verify). */
  token?: string;
  description: string;
  /** Storage date. */
  created: string;
  isMasterToken: boolean;
  canManageBuckets: boolean;
  canManageTokens: boolean;
  canReadAllFileUploads: boolean;
  canPurgeTrash: boolean;
  expires: string | null;
  isExpired: boolean;
  isDisabled: boolean;
  /** bucket id -> permission */
  bucketPermissions: Record<string, string>;
  componentAccess?: string[];
  /** The user behind a master token. */
  admin?: { id: number; name: string; role: string };
  owner: { id: number; name: string };
}
