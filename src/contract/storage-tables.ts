/**
 * The API contract (see stream-sources.ts for why the types are the source): the Storage API's
 * buckets and tables (src/api/storage/format.ts builds them) and the read-only SQL answer.
 */

/** Key/value metadata in Keboola's list shape (Sluice keeps no per-entry id or time: both derived). */
export interface MetadataJson {
  id: string;
  key: string;
  value: string;
  provider: string;
  timestamp: string;
}

/** A bucket as GET /v2/storage/buckets answers it. */
export interface BucketJson {
  uri: string;
  /** e.g. "in.c-my-bucket" */
  id: string;
  name: string;
  displayName: string;
  stage: 'in' | 'out';
  description: string;
  tables: string;
  /** Storage date, e.g. "2017-02-14T14:38:26+0000". */
  created: string;
  isReadOnly: boolean;
  backend: string;
  metadata: MetadataJson[];
}

/** A column of a typed table's `definition`, as Keboola Storage answers it for its typed tables. */
export interface ColumnDefinitionJson {
  name: string;
  /** The target's native type ("BIGINT", "DECIMAL" with length "38,9", "TEXT", ...) and whether it takes NULL. */
  definition: { type: string; nullable: boolean; length?: string };
  /** The base type; "STRING" for an untyped column; absent for a native type with no base type. */
  basetype?: string;
}

/** A typed table's column definitions and primary key (`definition` of the table detail and list). */
export interface TableDefinitionJson {
  primaryKeysNames: string[];
  columns: ColumnDefinitionJson[];
}

/**
 * A table as GET /v2/storage/tables answers it; `columns` only with include=columns (and on one
 * table). A typed table (one column or more with a base type) has `isTyped` and `definition`
 * too; an untyped table answers without them, as before typed columns.
 */
export interface TableJson {
  uri: string;
  /** e.g. "in.c-my-bucket.my-table" */
  id: string;
  name: string;
  displayName: string;
  transactional: boolean;
  primaryKey: string[];
  created: string;
  lastImportDate: string | null;
  lastChangeDate: string;
  rowsCount: number;
  isAlias: boolean;
  isTyped?: true;
  definition?: TableDefinitionJson;
  columns?: string[];
  bucket: { id: string; stage: 'in' | 'out'; name: string; displayName: string };
  metadata: MetadataJson[];
}

/** POST /v2/storage/sql: the body. */
export interface SqlBody {
  query: string;
  limit?: number;
  /** Seconds. */
  timeout?: number;
}

/** POST /v2/storage/sql: the answer. */
export interface SqlAnswer {
  columns: { name: string; type: string }[];
  /** Values as JSON: strings, numbers, booleans, null (64-bit integers and decimals as strings, times ISO). */
  rows: unknown[][];
  rowsCount: number;
  /** More rows than the limit were there. */
  truncated: boolean;
  durationMs: number;
  /** The SQL the target speaks: DuckDB's or PostgreSQL's. */
  dialect?: 'DuckDB' | 'PostgreSQL';
}
