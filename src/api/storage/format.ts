import type { Config } from '../../config.js';
import type { Project } from '../../storage/project.js';
import type { Token } from '../../storage/token-model.js';
import { isExpired } from '../../storage/tokens.js';
import type { Bucket, Table, TableService } from '../../storage/tables.js';
import { parseBucketId } from '../../storage/tables.js';
import { seesAllBuckets } from '../../storage/token-scopes.js';
import type { BucketJson, MetadataJson, TableDefinitionJson, TableJson } from '../../contract/storage-tables.js';
import { isUntypedColumn } from '../../ports/target-columns.js';
import type { TokenJson } from '../../contract/storage-tokens.js';

/** Keboola's Storage date format: "2017-02-14T14:38:26+0000" (we keep UTC). */
export function storageDate(iso: string): string;
export function storageDate(iso: string | null): string | null;
export function storageDate(iso: string | null): string | null {
  if (iso === null) return null;
  return new Date(iso).toISOString().slice(0, 19) + '+0000';
}

/** Key/value metadata in Keboola's list shape. Sluice keeps no per-entry id or time, so both are derived. */
function metadataJson(metadata: Record<string, string>, timestamp: string): MetadataJson[] {
  return Object.entries(metadata).map(([key, value], i) => ({
    id: String(i + 1),
    key,
    value,
    provider: 'sluice',
    timestamp: storageDate(timestamp),
  }));
}

export function bucketJson(config: Pick<Config, 'publicApiUrl'>, bucket: Bucket): BucketJson {
  const base = config.publicApiUrl;
  return {
    uri: `${base}/v2/storage/buckets/${bucket.id}`,
    id: bucket.id,
    name: bucket.name,
    displayName: parseBucketId(bucket.id).displayName,
    stage: bucket.stage,
    description: '',
    tables: `${base}/v2/storage/buckets/${bucket.id}/tables`,
    created: storageDate(bucket.created),
    isReadOnly: false,
    backend: 'duckdb',
    metadata: metadataJson(bucket.metadata, bucket.created),
  };
}

/**
 * A typed table's `definition` (Keboola Storage's shape): each column's native type split into
 * `type` and `length` ("DECIMAL(38,9)": "DECIMAL", "38,9"), upper case, and its base type.
 */
export function tableDefinitionJson(table: Table): TableDefinitionJson {
  return {
    primaryKeysNames: [...table.primaryKey],
    columns: table.definitions.map((c) => {
      const [, type, length] = /^([^(]*?)\s*(?:\((.*)\))?$/.exec(c.nativeType)!;
      const basetype = c.type ?? (isUntypedColumn(c) ? 'STRING' : undefined);
      return {
        name: c.name,
        definition: { type: type.toUpperCase(), nullable: c.nullable, ...(length !== undefined ? { length } : {}) },
        ...(basetype !== undefined ? { basetype } : {}),
      };
    }),
  };
}

/** Table JSON; `withColumns` false drops the column list (table listings without include=columns). */
export function tableJson(config: Pick<Config, 'publicApiUrl'>, table: Table, bucket: Bucket, withColumns = true): TableJson {
  const base = config.publicApiUrl;
  // An untyped table answers as before typed columns (the reference's untyped tables have no definition).
  const typed = table.definitions.some((c) => c.type !== undefined);
  return {
    uri: `${base}/v2/storage/tables/${table.id}`,
    id: table.id,
    name: table.name,
    displayName: table.name,
    transactional: false,
    primaryKey: [...table.primaryKey],
    created: storageDate(table.created),
    lastImportDate: storageDate(table.lastImportDate),
    lastChangeDate: storageDate(table.lastImportDate ?? table.created),
    rowsCount: table.rowsCount,
    isAlias: false,
    ...(typed ? { isTyped: true as const, definition: tableDefinitionJson(table) } : {}),
    ...(withColumns ? { columns: table.columns } : {}),
    bucket: { id: bucket.id, stage: bucket.stage, name: bucket.name, displayName: parseBucketId(bucket.id).displayName },
    metadata: metadataJson(table.metadata, table.created),
  };
}

/**
 * Token JSON as `tokens/verify` gives it. `secret` is included only when the caller holds it
 * (the new token on create, the presented token on verify): only a hash is stored.
 */
/** What a token's JSON reads: the buckets a bucket manager sees, the project it belongs to. */
export interface TokenJsonContext {
  tables: Pick<TableService, 'listBuckets'>;
  project: Pick<Project, 'id'>;
}

export async function tokenJson(ctx: TokenJsonContext, token: Token, secret?: string): Promise<TokenJson> {
  const bucketPermissions: Record<string, string> = { ...token.bucketPermissions };
  if (seesAllBuckets(token)) {
    for (const b of await ctx.tables.listBuckets()) bucketPermissions[b.id] = 'manage';
  }
  return {
    id: token.id,
    ...(secret !== undefined ? { token: secret } : {}),
    description: token.description,
    created: storageDate(token.created),
    isMasterToken: token.isMasterToken,
    canManageBuckets: token.canManageBuckets,
    canManageTokens: token.canManageTokens,
    canReadAllFileUploads: token.canReadAllFileUploads,
    canPurgeTrash: false,
    expires: storageDate(token.expires),
    isExpired: isExpired(token),
    isDisabled: false,
    bucketPermissions,
    ...(token.componentAccess ? { componentAccess: token.componentAccess } : {}),
    ...(token.admin ? { admin: token.admin } : {}),
    owner: { id: ctx.project.id, name: `Project ${ctx.project.id}` },
  };
}
