/**
 * What one body value is, as far as the base types go (contract/mapping-proposal.ts ValueKind),
 * and the base type a field's kinds add up to. Numbers are judged by their source text
 * (JsonNumber keeps it), so `1.0` is a decimal and `12345678901234567890` is not an integer.
 */
import type { BaseType } from '../../model/definition.js';
import type { ValueKind } from '../../contract/mapping-proposal.js';
import { JsonNumber, JsonObject, type JsonValue } from '../columns/json.js';

/** The kinds in the order answers list them. */
export const VALUE_KINDS: readonly ValueKind[] = [
  'null', 'boolean', 'integer', 'decimal', 'float', 'hugeNumber', 'date', 'timestamp', 'string', 'object', 'array',
];

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** NUMERIC is DECIMAL(38,9) on both targets: 29 digits before the point, 9 after it. */
const NUMERIC_INTEGER_DIGITS = 29;
const NUMERIC_FRACTION_DIGITS = 9;

const INTEGER_TEXT = /^-?\d+$/;
const DECIMAL_TEXT = /^-?(\d+)(?:\.(\d+))?$/;
const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})$/;
/** RFC 3339's date-time: `T`, seconds, an optional fraction and a zone (`Z` or `±HH:MM`). */
const TIMESTAMP_TEXT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/;

export function kindOf(value: JsonValue): ValueKind {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return stringKind(value);
  if (value instanceof JsonNumber) return numberKind(value.raw);
  if (value instanceof JsonObject) return 'object';
  return 'array';
}

/** A number's kind by its JSON text. */
export function numberKind(raw: string): ValueKind {
  if (INTEGER_TEXT.test(raw)) {
    const n = BigInt(raw);
    if (n >= INT64_MIN && n <= INT64_MAX) return 'integer';
  }
  const m = DECIMAL_TEXT.exec(raw);
  if (m && m[1].replace(/^0+(?=\d)/, '').length <= NUMERIC_INTEGER_DIGITS && (m[2] ?? '').length <= NUMERIC_FRACTION_DIGITS) return 'decimal';
  return Number.isFinite(Number(raw)) ? 'float' : 'hugeNumber';
}

function stringKind(s: string): ValueKind {
  // Cheap first test: both start with four digits and a dash.
  if (s.length < 10 || s.charCodeAt(4) !== 45 /* - */) return 'string';
  const d = DATE_TEXT.exec(s);
  if (d) return isDate(d[1], d[2], d[3]) ? 'date' : 'string';
  const t = TIMESTAMP_TEXT.exec(s);
  if (t && isDate(t[1], t[2], t[3]) && Number(t[4]) <= 23 && Number(t[5]) <= 59 && Number(t[6]) <= 59
    && (t[7] === undefined || (Number(t[7]) <= 23 && Number(t[8]) <= 59)) && inUtcYears(s)) return 'timestamp';
  return 'string';
}

/** Whether the time, moved to UTC by its zone, stays within the years 0001 to 9999 (the form a TIMESTAMP is written in has four digits). */
function inUtcYears(timestamp: string): boolean {
  const year = new Date(Date.parse(timestamp)).getUTCFullYear();
  return year >= 1 && year <= 9999;
}

/** A real calendar day of year 1 to 9999. */
function isDate(year: string, month: string, day: string): boolean {
  const y = Number(year);
  const m = Number(month);
  const d = Number(day);
  return y >= 1 && m >= 1 && m <= 12 && d >= 1 && d <= daysIn(y, m);
}

function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

const NUMBERS: ReadonlySet<ValueKind> = new Set(['integer', 'decimal', 'float']);
const CONTAINERS: ReadonlySet<ValueKind> = new Set(['object', 'array']);

/**
 * The base type of a field from the kinds of its non-null values: one kind of number gives its
 * type, and numbers together the widest (INTEGER < NUMERIC < FLOAT); booleans BOOLEAN; dates
 * DATE; timestamps TIMESTAMP; objects and arrays JSON; anything else, a mix or only nulls,
 * STRING.
 */
export function baseTypeOf(kinds: ReadonlySet<ValueKind>): BaseType {
  const present = [...kinds].filter((k) => k !== 'null');
  if (present.length === 0) return 'STRING';
  if (present.every((k) => NUMBERS.has(k))) {
    if (kinds.has('float')) return 'FLOAT';
    return kinds.has('decimal') ? 'NUMERIC' : 'INTEGER';
  }
  if (present.every((k) => CONTAINERS.has(k))) return 'JSON';
  if (present.length > 1) return 'STRING';
  switch (present[0]) {
    case 'boolean': return 'BOOLEAN';
    case 'date': return 'DATE';
    case 'timestamp': return 'TIMESTAMP';
    default: return 'STRING';
  }
}

/** Whether a kind is text (a column of it is `rawString`: the text without JSON quotes). */
export function isTextKind(kind: ValueKind): boolean {
  return kind === 'string' || kind === 'date' || kind === 'timestamp';
}
