/**
 * The renderers of typed columns (Column.dataType) and of primary key columns. An untyped
 * column that is not in the key never comes here: it keeps the renderers of renderers.ts and
 * their exact bytes, at no cost.
 *
 * What each column type writes when typed:
 *  - path: the value at the path, converted (typed-values.ts); missing: the default converted,
 *    or NULL without a default (an untyped path column fails the record instead).
 *  - template: the template's result, converted; `null` is NULL.
 *  - body: STRING the body as text; JSON the body parsed as path columns parse it (by its
 *    Content-Type) in compact JSON, NULL for an empty body.
 *  - headers (STRING or JSON), datetime (STRING or TIMESTAMP), uuid and ip (STRING): the text
 *    of the untyped column, which is already the type's text.
 */
import type { BaseType, Column } from '../../model/definition.js';
import { MAX_PRIMARY_KEY_BYTES } from '../../model/columns.js';
import type { RecordContext } from '../template-engine.js';
import { MappingError } from './errors.js';
import { parseJson, stringifyJson } from './json.js';
import { converterFor, type TypedValue } from './typed-values.js';
import { cachedPath } from './path.js';

/** A column's value for one record: CSV text, or null for NULL (typed columns only). */
export type TypedRenderer = (ctx: RecordContext) => TypedValue;

/** A template's compact JSON result as the column's value. */
export type TemplateFinish = (json: string) => TypedValue;

/** The renderer of a typed path column. */
export function typedPathRenderer(c: Column, type: BaseType): TypedRenderer {
  const convert = converterFor(type);
  const steps = cachedPath(c.path ?? '');
  const d: unknown = c.defaultValue;
  // The default is a string value, converted like one from the body (checked when the sink is saved).
  const fallback = d === undefined || d === null ? null : convert(typeof d === 'string' ? d : JSON.stringify(d));
  return (ctx) => {
    const value = ctx.bodyValue(steps);
    return value === undefined ? fallback : convert(value);
  };
}

/** How a typed template column reads its template's result. */
export function typedTemplateFinish(type: BaseType): TemplateFinish {
  // JSON: the engine's compact JSON is the column's text already.
  if (type === 'JSON') return (json) => (json === 'null' ? null : json);
  const convert = converterFor(type);
  return (json) => convert(parseJson(json));
}

/** The JSON body column: the parsed body in compact JSON; NULL for an empty body. */
export const renderBodyJson: TypedRenderer = (ctx) => (ctx.record.body.length === 0 ? null : stringifyJson(ctx.parsedBody()));

/**
 * The most bytes one column of a key of `keyColumns` columns may hold: the key's values go into
 * one index entry, which PostgreSQL's btree limits to about 2.7 kB (MAX_PRIMARY_KEY_BYTES keeps a margin).
 */
export function keyColumnBytes(keyColumns: number): number {
  return Math.floor(MAX_PRIMARY_KEY_BYTES / Math.max(1, keyColumns));
}

/**
 * A key column's value, checked: a record whose key has no value, or a value too long to be
 * indexed, is a mapping failure (an import that the table refuses would stop the sink).
 */
export function checkedKeyValue(value: TypedValue, maxBytes: number): string {
  if (value === null) throw new MappingError('the column is part of the primary key and has no value', 'notFound');
  // A UTF-8 character has at most 3 bytes per UTF-16 unit: most values need no count.
  if (value.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > maxBytes) {
      throw new MappingError(`the column is part of the primary key and its value has ${bytes} bytes, more than the ${maxBytes} a key column may hold`, 'conversion');
    }
  }
  return value;
}
