/**
 * The answer of `POST /v2/storage/sql` as `sluice sql` prints it: an aligned text table for
 * people, RFC 4180 CSV with a header for programs, or the answer itself as JSON.
 */
import { stringify } from 'csv-stringify/sync';
import { formatCount } from './numbers.js';
import type { SqlAnswer } from '../contract/storage-tables.js';

/** The answer: the API contract's (src/contract/storage-tables.ts). */
export type { SqlAnswer };

export const SQL_FORMATS = ['table', 'csv', 'json'] as const;
export type SqlFormat = (typeof SQL_FORMATS)[number];

/** A value as text: null as empty, strings as they are, anything else as JSON. */
function text(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** A value in a table cell: one line, so line breaks and tabs are shown as escapes. */
function cell(value: unknown): string {
  return text(value).replace(/[\r\n\t]/g, (c) => (c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t'));
}

/**
 * Numbers read best right-aligned; the answer's column types (DuckDB's or PostgreSQL's names)
 * say which columns hold them.
 */
const NUMERIC_TYPE = /^(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|INT[248]|FLOAT[48]?|DOUBLE( PRECISION)?|REAL|DECIMAL|NUMERIC)(\(\d+(,\s*\d+)?\))?$/i;

/** Columns: header, a separator line, the rows; then "3 rows (12 ms)" and a note when cut short. */
export function renderTable(answer: SqlAnswer): string {
  const header = answer.columns.map((c) => c.name);
  const out = alignedColumns(header, answer.rows, answer.columns.map((c) => NUMERIC_TYPE.test(c.type ?? '')));
  const n = answer.rowsCount;
  out.push(`${formatCount(n)} ${n === 1 ? 'row' : 'rows'} (${formatCount(answer.durationMs)} ms)`);
  if (answer.truncated) out.push(truncationNote(answer));
  return out.join('\n') + '\n';
}

/** A header, a separator line and the rows as aligned text columns (`right`: the columns aligned right); [] without columns. */
export function alignedColumns(header: readonly string[], rows: readonly (readonly unknown[])[], right: readonly boolean[] = []): string[] {
  if (header.length === 0) return [];
  const body = rows.map((row) => header.map((_, i) => cell(row[i])));
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (cells: string[], alignRight: readonly boolean[]) =>
    cells.map((c, i) => (alignRight[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ').trimEnd();
  return [line([...header], []), widths.map((w) => '-'.repeat(w)).join('-+-'), ...body.map((r) => line(r, right))];
}

/** The note for an answer cut at its limit (the --limit given, or the server's maximum). */
export function truncationNote(answer: SqlAnswer): string {
  return `more rows exist: the answer stops at the limit of ${formatCount(answer.rowsCount)} rows (raise it with --limit, up to the server's --sql-max-rows)`;
}

/** RFC 4180: a header line, fields quoted when they hold a comma, a quote or a line break. */
export function renderCsv(answer: SqlAnswer): string {
  const records = [answer.columns.map((c) => c.name), ...answer.rows.map((row) => answer.columns.map((_, i) => text(row[i])))];
  return stringify(records);
}

export function renderJson(answer: SqlAnswer): string {
  return `${JSON.stringify(answer, null, 2)}\n`;
}
