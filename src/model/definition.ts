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
  table: { type: 'keboola'; tableId: string; mapping: { columns: Column[] } };
  allowedSignals?: Signal[];
}

/**
 * Whether a sink takes records of a signal: HTTP records ('') go to every sink; OTLP records to
 * sinks without an allowedSignals filter or whose filter names the signal.
 */
export function acceptsSignal(sink: { allowedSignals?: readonly Signal[] }, signal: Signal | ''): boolean {
  const allowed = sink.allowedSignals;
  return signal === '' || !allowed || allowed.length === 0 || allowed.includes(signal);
}
