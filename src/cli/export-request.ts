/**
 * `sluice tables export` flags -> the Keboola export options (`POST
 * /v2/storage/tables/{tableId}/export-async` body) and where the file goes. Pure, so the rules
 * (default file name, gzip from the name) are in one place.
 */
import { integerOption, listOption } from './args.js';
import { CliError } from './errors.js';

export interface ExportFlags {
  format?: string;
  out?: string;
  columns?: string;
  'where-column'?: string;
  'where-values'?: string;
  'where-operator'?: string;
  'changed-since'?: string;
  'changed-until'?: string;
  limit?: string;
}

/** The body in Keboola's option names; absent options are left out (server defaults). */
export interface ExportBody {
  columns?: string[];
  whereColumn?: string;
  whereOperator?: 'eq' | 'ne';
  whereValues?: string[];
  changedSince?: string;
  changedUntil?: string;
  limit?: number;
  format: 'rfc' | 'parquet';
  gzip: boolean;
}

export interface ExportRequest {
  body: ExportBody;
  /** A file path, or "-" for standard output. */
  out: string;
}

export function exportRequest(tableId: string, flags: ExportFlags): ExportRequest {
  // Without --format, an --out ending in .parquet asks for Parquet: the name says what it holds.
  const format = flags.format ?? (flags.out?.toLowerCase().endsWith('.parquet') ? 'parquet' : 'csv');
  if (format !== 'csv' && format !== 'parquet') throw new CliError(`--format must be csv or parquet, got "${format}"`, 2);
  const out = flags.out ?? (format === 'parquet' ? `${tableId}.parquet` : `${tableId}.csv.gz`);
  if (out === '') throw new CliError('--out needs a file name, or - for standard output', 2);

  // Keboola gzips CSV exports by default; a plain ".csv" name asks for it uncompressed.
  const gzip = format === 'csv' && !out.toLowerCase().endsWith('.csv');
  const body: ExportBody = { format: format === 'parquet' ? 'parquet' : 'rfc', gzip };

  const columns = listOption(flags.columns);
  if (columns !== undefined) {
    if (columns.length === 0) throw new CliError('--columns needs at least one column name', 2);
    body.columns = columns;
  }
  const whereColumn = flags['where-column'];
  if (whereColumn !== undefined) {
    if (flags['where-values'] === undefined) throw new CliError('--where-column needs --where-values v1,v2', 2);
    body.whereColumn = whereColumn;
    // An empty item is a real value (rows whose column is empty), so no filtering of empties here.
    body.whereValues = flags['where-values'].split(',');
    const operator = flags['where-operator'] ?? 'eq';
    if (operator !== 'eq' && operator !== 'ne') throw new CliError(`--where-operator must be eq or ne, got "${operator}"`, 2);
    body.whereOperator = operator;
  } else if (flags['where-values'] !== undefined || flags['where-operator'] !== undefined) {
    throw new CliError('--where-values and --where-operator need --where-column', 2);
  }
  if (flags['changed-since'] !== undefined) body.changedSince = flags['changed-since'];
  if (flags['changed-until'] !== undefined) body.changedUntil = flags['changed-until'];
  const limit = integerOption('limit', flags.limit, 0);
  if (limit !== undefined) body.limit = limit;
  return { body, out };
}
