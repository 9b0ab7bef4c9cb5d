/**
 * A typed column's value (Column.dataType) converted to the CSV text its table imports: the
 * one text per base type both targets read (docs/tables.md, "Typed columns"). `null` is NULL: a JSON
 * null, or a value that is not there. A value that does not convert throws a MappingError of
 * kind `conversion` naming the value (shortened) and the type; the caller adds the column.
 *
 * Accepted inputs, per type:
 *  - STRING: a string as it is; any other value as its compact JSON text (`42`, `{"a":1}`).
 *  - INTEGER: a whole number within 64 bits, as a JSON number or a string (`42`, `"-7"`, `1e3`).
 *  - NUMERIC: a number or a numeric string, at most 29 digits before the point; written as a
 *    plain decimal rounded (half away from zero) to 9 digits after it: DECIMAL(38,9).
 *  - FLOAT: a number or a numeric string whose double is finite; written as JavaScript writes
 *    the double (`1.5e-7`).
 *  - BOOLEAN: true or false, as a JSON boolean or the strings "true" and "false".
 *  - DATE: a string `YYYY-MM-DD` naming a real day.
 *  - TIMESTAMP: a string in ISO 8601 with a zone (`2026-11-27T01:02:03Z`, `...+01:00`), or a
 *    JSON number of seconds since 1970 (as SQL's to_timestamp reads one); written in UTC.
 *  - JSON: any value, as its compact JSON text.
 */
import type { BaseType } from '../../model/definition.js';
import { MappingError } from './errors.js';
import { int64Text, isDecimalText, parseDecimal, plainDecimalText, type Decimal } from './decimal-text.js';
import { dateText, epochSecondsText, timestampText } from './iso-time.js';
import { JsonNumber, stringifyJson, type JsonValue } from './json.js';

/** A typed column's value as CSV text; null for NULL. */
export type TypedValue = string | null;

/** Converts one value (never undefined: a missing value is NULL before it gets here). */
export type Converter = (value: JsonValue) => TypedValue;

/** NUMERIC's precision and scale: DECIMAL(38,9) on both targets, Keboola's default. */
export const NUMERIC_PRECISION = 38;
export const NUMERIC_SCALE = 9;

/** What each type takes, as the failure says it. */
const EXPECTED: Record<BaseType, string> = {
  STRING: 'any value',
  INTEGER: 'a whole number within 64 bits, as a number or a string',
  NUMERIC: `a number with at most ${NUMERIC_PRECISION - NUMERIC_SCALE} digits before the point, as a number or a string`,
  FLOAT: 'a finite number, as a number or a string',
  BOOLEAN: 'true or false, as a boolean or a string',
  DATE: 'a date "YYYY-MM-DD" (years 0001 to 9999)',
  TIMESTAMP: 'an ISO 8601 time with a zone, e.g. "2026-11-27T01:02:03Z", or seconds since 1970 as a number',
  JSON: 'any value',
};

/** How much of a value the failure shows. */
const SHOWN_CHARS = 60;

/** The value as a failure shows it: its JSON text, cut after SHOWN_CHARS characters. */
export function shownValue(value: JsonValue): string {
  const text = stringifyJson(value);
  return text.length <= SHOWN_CHARS ? text : `${text.slice(0, SHOWN_CHARS)}…`;
}

/** The failure of a value that does not convert: `"abc" is not an INTEGER (a whole number ...)`. */
export function conversionError(value: JsonValue, type: BaseType): MappingError {
  const article = type === 'INTEGER' ? 'an' : 'a';
  return new MappingError(`${shownValue(value)} is not ${article} ${type} (${EXPECTED[type]})`, 'conversion');
}

/** The decimal a number or a string spells, or undefined. */
function decimalOf(value: JsonValue): Decimal | undefined {
  if (value instanceof JsonNumber) return parseDecimal(value.raw);
  return typeof value === 'string' ? parseDecimal(value) : undefined;
}

function toString(value: JsonValue): TypedValue {
  if (typeof value === 'string') return value;
  return value instanceof JsonNumber ? value.raw : stringifyJson(value);
}

function toInteger(value: JsonValue): TypedValue {
  const d = decimalOf(value);
  const text = d && int64Text(d);
  if (text === undefined) throw conversionError(value, 'INTEGER');
  return text;
}

function toNumeric(value: JsonValue): TypedValue {
  const d = decimalOf(value);
  const text = d && plainDecimalText(d, NUMERIC_PRECISION, NUMERIC_SCALE);
  if (text === undefined) throw conversionError(value, 'NUMERIC');
  return text;
}

function toFloat(value: JsonValue): TypedValue {
  const text = value instanceof JsonNumber ? value.raw : typeof value === 'string' ? value : undefined;
  const n = text !== undefined && isDecimalText(text) ? Number(text) : NaN;
  if (!Number.isFinite(n)) throw conversionError(value, 'FLOAT');
  return String(n);
}

function toBoolean(value: JsonValue): TypedValue {
  if (value === true || value === 'true') return 'true';
  if (value === false || value === 'false') return 'false';
  throw conversionError(value, 'BOOLEAN');
}

function toDate(value: JsonValue): TypedValue {
  const text = typeof value === 'string' ? dateText(value) : undefined;
  if (text === undefined) throw conversionError(value, 'DATE');
  return text;
}

function toTimestamp(value: JsonValue): TypedValue {
  let text: string | undefined;
  if (typeof value === 'string') text = timestampText(value);
  else if (value instanceof JsonNumber) {
    const seconds = parseDecimal(value.raw);
    text = seconds && epochSecondsText(seconds);
  }
  if (text === undefined) throw conversionError(value, 'TIMESTAMP');
  return text;
}

/** A JSON text's `\u0000` escapes (odd backslash runs only: `\\u0000` is a backslash and text). */
const NUL_ESCAPE = /(?<!\\)((?:\\\\)*)\\u0000/g;

/**
 * JSON: its compact text, with the NUL character of strings as U+FFFD on every target:
 * PostgreSQL's jsonb cannot hold it, and an import that fails on it would fail on every retry
 * and hold the sink's later files back (untyped text columns get the same replacement there).
 */
const toJson = (value: JsonValue): TypedValue => {
  const text = stringifyJson(value);
  return text.includes('\\u0000') ? text.replace(NUL_ESCAPE, '$1\\ufffd') : text;
};

const CONVERTERS: Record<BaseType, Converter> = {
  STRING: toString,
  INTEGER: toInteger,
  NUMERIC: toNumeric,
  FLOAT: toFloat,
  BOOLEAN: toBoolean,
  DATE: toDate,
  TIMESTAMP: toTimestamp,
  JSON: toJson,
};

/** The converter of a base type; JSON null is NULL in every type. */
export function converterFor(type: BaseType): Converter {
  const convert = CONVERTERS[type];
  return (value) => (value === null ? null : convert(value));
}

