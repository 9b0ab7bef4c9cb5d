import { stringify } from 'csv-stringify/sync';

/** One CSV cell: `null` and `undefined` become an empty field. */
export type Cell = string | null | undefined;

/**
 * Rows as CSV: RFC 4180 (fields with a comma, quote, CR or LF are quoted, quotes doubled), no
 * header, "\n" after every row. A row of one empty cell is an empty line, which the target reads
 * as one row with an empty value.
 */
export function csvRows(rows: readonly (readonly Cell[])[]): string {
  if (rows.length === 0) return '';
  return stringify(rows as Cell[][], { record_delimiter: '\n' });
}
