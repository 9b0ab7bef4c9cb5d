/**
 * The options of a table export as the Keboola Storage API takes them (`POST
 * /v2/storage/tables/{tableId}/export-async`, JSON or form body; the PHP client's
 * prepareExportOptions): `columns`, `whereColumn`, `whereOperator`, `whereValues`,
 * `changedSince`, `changedUntil`, `limit`, `format`, `gzip`. Pure: values in, an ExportSpec or a
 * 400 naming the option out.
 */
import { DomainError } from '../domain-errors.js';
import { TIMESTAMP_COLUMN, type ExportSpec } from '../ports/target.js';

const CODE = 'storage.tables.validation';
const UNITS: Record<string, number> = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 };

export interface ExportOptionsInput {
  columns?: unknown;
  whereColumn?: unknown;
  whereOperator?: unknown;
  whereValues?: unknown;
  changedSince?: unknown;
  changedUntil?: unknown;
  limit?: unknown;
  format?: unknown;
  gzip?: unknown;
}

function invalid(option: string, message: string): DomainError {
  return new DomainError('invalid', CODE, `Invalid export option "${option}": ${message}`);
}

/** A list given as an array, or as one comma-separated string (the PHP client joins columns so). */
function list(option: string, value: unknown, splitCommas: boolean): string[] | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (Array.isArray(value)) {
    if (value.some((v) => typeof v !== 'string' && typeof v !== 'number')) throw invalid(option, 'expected a list of strings.');
    return value.map(String);
  }
  if (typeof value === 'string' || typeof value === 'number') return splitCommas ? String(value).split(',').map((v) => v.trim()) : [String(value)];
  throw invalid(option, 'expected a list of strings.');
}

/**
 * A point in time as Keboola takes it (a strtotime string): unix seconds, an ISO 8601 date or
 * time, or a relative "-2 days" / "3 hours ago" counted back from `now`.
 */
export function parseTime(option: string, value: unknown, now: Date): Date | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const text = String(value).trim();
  if (/^\d+$/.test(text)) return new Date(Number(text) * 1000);
  const relative = /^(-|\+)?\s*(\d+)\s*(second|minute|hour|day|week)s?(\s+ago)?$/i.exec(text);
  if (relative) {
    const back = relative[1] === '-' || relative[4] !== undefined;
    const ms = Number(relative[2]) * UNITS[relative[3].toLowerCase()];
    return new Date(now.getTime() + (back ? -ms : ms));
  }
  if (/^\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?)?$/.test(text)) {
    // A date or time without a zone is UTC, as the tables' _timestamp is.
    const iso = text.replace(' ', 'T');
    const parsed = new Date(/T.*(Z|[+-]\d\d:?\d\d)$/.test(iso) ? iso : iso.length === 10 ? `${iso}T00:00:00Z` : `${iso}Z`);
    if (!Number.isNaN(parsed.getTime())) return parsed;
  }
  throw invalid(option, `"${text}" is not a time: give unix seconds, an ISO 8601 time like 2026-11-24T10:00:00Z, or a relative time like "-2 hours".`);
}

function bool(option: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined || value === null || value === '') return fallback;
  if (value === true || value === 1 || /^(1|true|yes)$/i.test(String(value))) return true;
  if (value === false || value === 0 || /^(0|false|no)$/i.test(String(value))) return false;
  throw invalid(option, 'expected true or false.');
}

/**
 * The export of a table with these columns. Column names are checked against the table (the
 * system column `_timestamp` may be asked for; it is not exported unless asked).
 */
export function parseExportOptions(input: ExportOptionsInput, tableColumns: readonly string[], now = new Date()): ExportSpec {
  const known = new Set([...tableColumns, TIMESTAMP_COLUMN]);
  const columns = list('columns', input.columns, true) ?? [...tableColumns];
  if (columns.length === 0) throw invalid('columns', 'no column given.');
  for (const c of columns) if (!known.has(c)) throw invalid('columns', `the table has no column "${c}"; its columns are ${tableColumns.join(', ')}.`);
  if (new Set(columns).size !== columns.length) throw invalid('columns', 'a column is listed twice.');

  let where: ExportSpec['where'];
  if (input.whereColumn !== undefined && input.whereColumn !== '') {
    const column = String(input.whereColumn);
    if (!tableColumns.includes(column)) throw invalid('whereColumn', `the table has no column "${column}".`);
    const operator = input.whereOperator === undefined || input.whereOperator === '' ? 'eq' : String(input.whereOperator);
    if (operator !== 'eq' && operator !== 'ne') throw invalid('whereOperator', 'expected "eq" or "ne".');
    where = { column, operator, values: list('whereValues', input.whereValues, false) ?? [] };
  } else if (input.whereValues !== undefined && input.whereValues !== '') {
    throw invalid('whereValues', 'whereColumn is missing.');
  }

  let limit: number | undefined;
  if (input.limit !== undefined && input.limit !== null && input.limit !== '') {
    limit = Number(input.limit);
    if (!Number.isInteger(limit) || limit < 0) throw invalid('limit', 'expected a non-negative integer.');
  }

  const format = input.format === undefined || input.format === '' ? 'rfc' : String(input.format);
  if (format !== 'rfc' && format !== 'parquet') {
    throw invalid('format', `"${format}" is not supported; use "rfc" (CSV, the default) or "parquet".`);
  }
  const changedSince = parseTime('changedSince', input.changedSince, now);
  const changedUntil = parseTime('changedUntil', input.changedUntil, now);
  return {
    columns,
    where,
    changedSince,
    changedUntil,
    limit,
    format: format === 'parquet' ? 'parquet' : 'csv',
    gzip: format === 'parquet' ? false : bool('gzip', input.gzip, true),
  };
}
