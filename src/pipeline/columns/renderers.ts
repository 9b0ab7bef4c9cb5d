/**
 * Renderers of the columns that need no template. Each takes the shared record context
 * and returns the CSV field text.
 */
import type { RecordContext } from '../template-engine.js';
import { MappingError } from './errors.js';
import { bodyFormat } from './record-context.js';
import { goJsonString } from './json.js';
import { cachedPath, type BodyPath } from './path.js';
import { uuidV7 } from './uuid-v7.js';

/** `uuid`: a new UUID v7 per row (per sink: two sinks get two ids for one record). */
export const renderUuid: () => string = uuidV7;

/** `datetime`: receive time, UTC, `2006-01-02T15:04:05.000Z` (fixed length). */
export const renderDatetime = (ctx: RecordContext): string => ctx.datetime();

/** `ip`: the record's client IP (the ingest layer resolves it; see ip.ts). */
export const renderIp = (ctx: RecordContext): string => ctx.record.ip;

/** `body`: the raw body (decoded as UTF-8). */
export const renderBody = (ctx: RecordContext): string => ctx.bodyString();

/** `headers`: compact JSON, canonical names sorted, first value of each. */
export const renderHeaders = (ctx: RecordContext): string => ctx.headersJson();

export interface PathColumnSpec {
  path: string;
  defaultValue?: string;
  rawString?: boolean;
}

/** A `path` column with its path parsed and its default encoded once. */
export interface CompiledPathColumn {
  readonly path: string;
  readonly steps: BodyPath;
  readonly rawString: boolean;
  /** The CSV text used when the path is missing; undefined = the record fails. */
  readonly fallback: string | undefined;
}

export function compilePathColumn(spec: PathColumnSpec): CompiledPathColumn {
  const rawString = spec.rawString === true;
  let fallback: string | undefined;
  if (spec.defaultValue !== undefined && spec.defaultValue !== null) {
    const d: unknown = spec.defaultValue;
    // The API types defaultValue as a string; a stored non-string is JSON-encoded as is.
    fallback = typeof d === 'string' ? (rawString ? d : goJsonString(d)) : JSON.stringify(d);
  }
  return { path: spec.path, steps: cachedPath(spec.path), rawString, fallback };
}

/**
 * A path that is not in a form body most often was JSON sent as form data (`curl -d` says
 * application/x-www-form-urlencoded): the message says how the body was read.
 */
function formBodyHint(ctx: RecordContext): string {
  if (ctx.record.signal !== '' || bodyFormat(ctx.header('Content-Type')) !== 'form') return '';
  return ' (it was read as form data, as its Content-Type "application/x-www-form-urlencoded" says, which curl -d sends; send JSON with the header Content-Type: application/json)';
}

/**
 * `path`: the value at the path, JSON-encoded (`"value"`, `42`, `{"a":1}`); a string without
 * quotes when rawString; the default when missing; otherwise a `notFound` MappingError.
 * A body that cannot be parsed fails even when there is a default.
 */
export function renderPath(ctx: RecordContext, col: CompiledPathColumn): string {
  const text = ctx.bodyText(col.steps, col.rawString);
  if (text !== undefined) return text;
  if (col.fallback !== undefined) return col.fallback;
  throw new MappingError(`path "${col.path}" not found in the body${formBodyHint(ctx)}`, 'notFound');
}
