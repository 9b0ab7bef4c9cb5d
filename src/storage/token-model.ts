/** A Storage API token as stored (the secret itself only as a hash). */
export interface Token {
  id: string;
  description: string;
  /** sha256 hex of the token string. */
  hash: string;
  isMasterToken: boolean;
  canManageBuckets: boolean;
  canManageTokens: boolean;
  canReadAllFileUploads: boolean;
  /** bucket id -> permission */
  bucketPermissions: Record<string, 'read' | 'write'>;
  /** When set, the token may only use these components' configurations. */
  componentAccess?: string[];
  /** ISO time or null. */
  expires: string | null;
  created: string;
  /** The user behind a master token. */
  admin?: { id: number; name: string; role: string };
}
