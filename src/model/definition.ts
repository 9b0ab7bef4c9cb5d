/**
 * Definitions of the stream service: sources, sinks and their versions, as stored in the
 * metadata store and (after flattening) shown by the API.
 */

export type SourceType = 'http' | 'otlp';
export const SOURCE_TYPES: SourceType[] = ['http', 'otlp'];

export type Signal = 'logs' | 'metrics' | 'traces';
export const SIGNALS: Signal[] = ['logs', 'metrics', 'traces'];

/** Who did something: the token behind an API call, or the system itself. */
export interface By {
  type: 'user' | 'system';
  tokenId?: string;
  tokenDesc?: string;
  userId?: string;
  userName?: string;
}

export interface At {
  at: string;
  by: By;
}

export interface Version extends At {
  number: number;
  hash: string;
  description: string;
}

export interface SettingValue {
  key: string;
  value: unknown;
}

export type ColumnType = 'uuid' | 'datetime' | 'ip' | 'body' | 'headers' | 'path' | 'template';
export const COLUMN_TYPES: ColumnType[] = ['uuid', 'datetime', 'ip', 'body', 'headers', 'path', 'template'];

/**
 * Keboola's base types (the Storage API's `basetype`): a mapping column's optional `dataType`, a
 * Sluice extension the reference's clients can ignore. Without one a column is the untyped
 * string column of the reference (never NULL, '' for a missing value); with one the table has
 * the target's native type (adapters/target) and a missing value is NULL.
 */
export type BaseType = 'STRING' | 'INTEGER' | 'NUMERIC' | 'FLOAT' | 'BOOLEAN' | 'DATE' | 'TIMESTAMP' | 'JSON';
export const BASE_TYPES: BaseType[] = ['STRING', 'INTEGER', 'NUMERIC', 'FLOAT', 'BOOLEAN', 'DATE', 'TIMESTAMP', 'JSON'];

/** The base types each column type may have (Column.dataType): what its values can be. */
export const DATA_TYPES_OF: Readonly<Record<ColumnType, readonly BaseType[]>> = {
  uuid: ['STRING'],
  datetime: ['STRING', 'TIMESTAMP'],
  ip: ['STRING'],
  headers: ['STRING', 'JSON'],
  body: ['STRING', 'JSON'],
  path: BASE_TYPES,
  template: BASE_TYPES,
};

/**
 * The column types that may be part of the primary key. Not `body` and `headers`: their values
 * have no size bound, and a key's values go into one index entry (MAX_PRIMARY_KEY_BYTES); the
 * part of a body that identifies a record is a path or a template column.
 */
export const KEY_COLUMN_TYPES: readonly ColumnType[] = ['path', 'template', 'uuid', 'datetime', 'ip'];

/** A sink's record filter: a Jsonnet expression over the record (as template columns see it) that returns a boolean. */
export interface MappingFilter {
  language: 'jsonnet';
  content: string;
}

export interface Column {
  type: ColumnType;
  name: string;
  /** type path: dot-separated path in the JSON body ("" = whole body). */
  path?: string;
  /** type path: used when the path does not exist. */
  defaultValue?: string;
  /** type path and template: a JSON string result is written without quotes. */
  rawString?: boolean;
  /** type template. */
  template?: { language: 'jsonnet'; content: string };
  /** The column's base type (see BaseType); absent: the untyped string column. */
  dataType?: BaseType;
  /** Part of the table's primary key: an import upserts by the key (the last record by event order wins). */
  primaryKey?: boolean;
}

export interface Entity {
  projectId: number;
  branchId: number;
  name: string;
  description: string;
  /** Own settings overrides (only the keys the user set). */
  config?: SettingValue[];
  version: Version;
  created: At;
  deleted?: At;
  disabled?: At & { reason: string };
}

export interface Source extends Entity {
  sourceId: string;
  type: SourceType;
  /** 48-character secret of the ingestion URL. */
  secret: string;
}

export interface Sink extends Entity {
  sourceId: string;
  sinkId: string;
  type: 'table';
  table: { type: 'keboola'; tableId: string; mapping: SinkMapping };
  allowedSignals?: Signal[];
}

export interface SinkMapping {
  columns: Column[];
  /** Records for which it is false are skipped (counted as filtered); absent: every record. */
  filter?: MappingFilter;
}

/**
 * Whether a sink takes records of a signal: HTTP records ('') go to every sink; OTLP records to
 * sinks without an allowedSignals filter or whose filter names the signal.
 */
export function acceptsSignal(sink: { allowedSignals?: readonly Signal[] }, signal: Signal | ''): boolean {
  const allowed = sink.allowedSignals;
  return signal === '' || !allowed || allowed.length === 0 || allowed.includes(signal);
}
