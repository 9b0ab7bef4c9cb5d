/**
 * Output tables and manifests. A table `users` of bucket `mock-server`
 * is written as `out/tables/mock-server.users.csv` (every field quoted, `"` doubled, `\n` line
 * ends, header row) with `out/tables/mock-server.users.csv.manifest`
 * (`{"destination":"in.c-mock-server.users","incremental":false}`, compact, no trailing newline).
 * Without a bucket the manifest is `{"incremental":…}` only. The reference names the files
 * without `.csv`; the component contract asks for it, the content is byte-identical.
 */
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { csvCell } from '../php.js';

const QUOTES = /"/g;

/** One cell as written: quoted, `"` doubled (csvCell's text of the value). */
export function csvCellQuoted(v: unknown): string {
  return quote(v);
}

function quote(v: unknown): string {
  const cell = typeof v === 'string' ? v : csvCell(v);
  return `"${cell.includes('"') ? cell.replace(QUOTES, '""') : cell}"`;
}

export function csvLine(values: readonly unknown[]): string {
  let line = '';
  for (let i = 0; i < values.length; i++) line += i === 0 ? quote(values[i]) : `,${quote(values[i])}`;
  return `${line}\n`;
}

/** Rows as CSV lines (no header). */
export function csvLines(rows: readonly (readonly unknown[])[]): string {
  let out = '';
  for (const row of rows) out += csvLine(row);
  return out;
}

export function tableCsv(table: { header: unknown[]; rows: unknown[][] }): string {
  return csvLine(table.header) + csvLines(table.rows);
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

/**
 * One output table written as it grows: the header when it is created, then rows (or CSV lines
 * made earlier) appended in chunks of about 1 MiB, then the manifest.
 */
export class TableFile {
  private pending: (string | Buffer)[] = [];
  private pendingChars = 0;
  private rows = 0;

  private constructor(
    private readonly path: string,
    private readonly file: string,
    private readonly table: string,
  ) {}

  static async create(outDir: string, bucket: string, table: string, header: readonly unknown[]): Promise<TableFile> {
    const dir = join(outDir, 'tables');
    await mkdir(dir, { recursive: true });
    const file = outputFileName(bucket, table);
    const out = new TableFile(join(dir, file), file, table);
    await writeFile(out.path, csvLine(header));
    return out;
  }

  async appendRows(rows: readonly (readonly unknown[])[]): Promise<void> {
    await this.appendCsv(csvLines(rows), rows.length);
  }

  /** CSV lines made earlier (`csvLines`, as text or UTF-8), `rows` of them. */
  async appendCsv(csv: string | Buffer, rows: number): Promise<void> {
    this.rows += rows;
    this.pending.push(csv);
    this.pendingChars += csv.length;
    if (this.pendingChars >= 1 << 20) await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const pieces = this.pending.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p));
    this.pending = [];
    this.pendingChars = 0;
    await appendFile(this.path, pieces.length === 1 ? pieces[0] : Buffer.concat(pieces));
  }

  async finish(bucket: string, incremental: boolean, primaryKey: string[] = []): Promise<WrittenTable> {
    await this.flush();
    await writeFile(`${this.path}.manifest`, manifestJson(bucket, this.table, incremental, primaryKey));
    return { file: this.file, table: this.table, rows: this.rows };
  }
}
