/**
 * Output tables and manifests (reference §11, §10.7). A table `users` of bucket `mock-server`
 * is written as `out/tables/mock-server.users.csv` (every field quoted, `"` doubled, `\n` line
 * ends, header row) with `out/tables/mock-server.users.csv.manifest`
 * (`{"destination":"in.c-mock-server.users","incremental":false}`, compact, no trailing newline).
 * Without a bucket the manifest is `{"incremental":…}` only. The reference names the files
 * without `.csv`; the component contract asks for it, the content is byte-identical.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { csvCell } from './php.js';
import type { ResultTable } from './results.js';

function quote(v: unknown): string {
  const cell = csvCell(v);
  return `"${cell.includes('"') ? cell.replace(/"/g, '""') : cell}"`;
}

export function csvLine(values: readonly unknown[]): string {
  return `${values.map(quote).join(',')}\n`;
}

export function tableCsv(table: { header: unknown[]; rows: unknown[][] }): string {
  const parts = [csvLine(table.header)];
  for (const row of table.rows) parts.push(csvLine(row));
  return parts.join('');
}

export function manifestJson(bucket: string, table: string, incremental: boolean, primaryKey: string[] = []): string {
  const pk = primaryKey.length > 0 ? { primary_key: primaryKey } : {};
  return bucket === ''
    ? JSON.stringify({ incremental, ...pk })
    : JSON.stringify({ destination: `in.c-${bucket}.${table}`, incremental, ...pk });
}

export function outputFileName(bucket: string, table: string): string {
  return `${bucket === '' ? table : `${bucket}.${table}`}.csv`;
}

export interface WrittenTable {
  file: string;
  table: string;
  rows: number;
}

export async function writeTables(outDir: string, bucket: string, incremental: boolean, tables: ResultTable[]): Promise<WrittenTable[]> {
  const dir = join(outDir, 'tables');
  await mkdir(dir, { recursive: true });
  const written: WrittenTable[] = [];
  for (const table of tables) {
    const file = outputFileName(bucket, table.name);
    await writeFile(join(dir, file), tableCsv(table));
    await writeFile(join(dir, `${file}.manifest`), manifestJson(bucket, table.name, incremental, table.primaryKey));
    written.push({ file, table: table.name, rows: table.rows.length });
  }
  return written;
}
