/**
 * Loads a finished component's output tables into Storage (the contract in
 * src/components/contract.ts): every `out/tables/<name>.csv` (header row, RFC 4180) goes to the
 * table its manifest names, or to `in.c-<component>-<config>.<name>`; a full load replaces the
 * table, an incremental one appends (every column of the table must be in the file, by name in
 * any order; a column the table lacks is added to it). Tables are written with the rights
 * of the token that created the job, checked for all of them before any is written.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { open, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { UserError } from '../components/contract.js';
import { DomainError } from '../domain-errors.js';
import { parseTableId, validateColumns, type TableService } from '../storage/tables.js';
import type { Token } from '../storage/token-model.js';
import { canWriteBucket, seesAllBuckets } from '../storage/token-scopes.js';

export interface LoadedTable {
  id: string;
  name: string;
  columns: string[];
  rows: number;
}

interface Manifest {
  destination?: string;
  incremental?: boolean;
}

/** The bucket a component's tables go to when their manifest names none (Keboola's default bucket). */
export function defaultBucket(componentId: string, configId: string | null): string {
  const name = [componentId, configId].filter(Boolean).join('-').replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 96);
  return `in.c-${name}`;
}

/**
 * The header of an RFC 4180 file: its column names and the byte offset where the data begins.
 * Reads only as much of the file as the header takes.
 */
export async function readCsvHeader(path: string): Promise<{ columns: string[]; dataOffset: number }> {
  const handle = await open(path, 'r');
  try {
    const chunks: Buffer[] = [];
    let position = 0;
    for (;;) {
      const buf = Buffer.alloc(64 * 1024);
      const { bytesRead } = await handle.read(buf, 0, buf.length, position);
      if (bytesRead > 0) chunks.push(buf.subarray(0, bytesRead));
      position += bytesRead;
      const header = parseHeader(Buffer.concat(chunks), bytesRead === 0);
      if (header) return header;
      if (bytesRead === 0 || position > 16 * 1024 * 1024) throw new UserError(`The output table "${path}" has no header row.`);
    }
  } finally {
    await handle.close();
  }
}

function parseHeader(bytes: Buffer, atEnd: boolean): { columns: string[]; dataOffset: number } | undefined {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  let i = 0;
  const text = bytes.toString('utf8');
  for (; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { fields.push(field); field = ''; } else if (c === '\n' || c === '\r') {
      fields.push(field);
      const end = c === '\r' && text[i + 1] === '\n' ? i + 2 : i + 1;
      return { columns: fields, dataOffset: Buffer.byteLength(text.slice(0, end), 'utf8') };
    } else field += c;
  }
  if (!atEnd || quoted) return undefined;
  fields.push(field);
  return { columns: fields, dataOffset: bytes.length };
}

async function readManifest(dir: string, file: string): Promise<Manifest> {
  for (const candidate of [`${file}.manifest`, `${file.replace(/\.csv$/, '')}.manifest`]) {
    let text: string;
    try {
      text = await readFile(join(dir, candidate), 'utf8');
    } catch {
      continue;
    }
    try {
      const m = JSON.parse(text) as Manifest;
      if (m === null || typeof m !== 'object') throw new Error('not an object');
      return m;
    } catch (err) {
      throw new UserError(`The manifest "${candidate}" is not valid JSON: ${(err as Error).message}`);
    }
  }
  return {};
}

/** One output file and the table it goes to. */
interface PlannedTable {
  file: string;
  path: string;
  tableId: string;
  incremental: boolean;
}

export async function loadOutputTables(opts: {
  jobDir: string;
  tables: TableService;
  componentId: string;
  configId: string | null;
  /** The token that created the job: its tables are written with its rights. */
  token: Token;
  signal?: AbortSignal;
}): Promise<LoadedTable[]> {
  const dir = join(opts.jobDir, 'out', 'tables');
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => f.endsWith('.csv')).sort();
  } catch {
    return [];
  }
  const planned: PlannedTable[] = [];
  for (const file of files) {
    const path = join(dir, file);
    if (!(await stat(path)).isFile()) continue;
    const manifest = await readManifest(dir, file);
    const tableId = manifest.destination || `${defaultBucket(opts.componentId, opts.configId)}.${file.replace(/\.csv$/, '')}`;
    planned.push({ file, path, tableId, incremental: manifest.incremental === true });
  }
  // Every destination is checked before anything is written: a refused one writes nothing.
  await checkWriteRights(opts.token, planned, opts.tables);
  const loaded: LoadedTable[] = [];
  for (const { file, path, tableId, incremental } of planned) {
    if (opts.signal?.aborted) break;
    const { columns, dataOffset } = await readCsvHeader(path);
    const size = (await stat(path)).size;
    try {
      // Checked before a full load drops the old table, so that bad output does not lose it.
      parseTableId(tableId);
      validateColumns(columns);
      const existing = await opts.tables.findTable(tableId);
      if (!incremental && existing) await opts.tables.dropTable(tableId);
      // An incremental load may bring new columns (added to the table), never leave one out (as Keboola Storage).
      const left = incremental && existing ? existing.columns.filter((c) => !columns.includes(c)) : [];
      if (left.length > 0) {
        throw new UserError(`Cannot load the output table "${file}" into "${tableId}": some columns are missing in the CSV file. ` +
          `Missing columns: ${left.join(',')}. Expected columns: ${existing!.columns.join(',')}.`);
      }
      await opts.tables.ensureTable(tableId, columns.map((name) => ({ name })), { metadata: { 'sluice.source': `component ${opts.componentId}` } });
      let rows = 0;
      if (size > dataOffset) {
        // The target loads header-less CSV: the data part is copied out once.
        const data = `${path}.data`;
        await pipeline(createReadStream(path, { start: dataOffset }), createWriteStream(data));
        rows = (await opts.tables.importCsv(tableId, data, { columns })).inserted;
        await rm(data, { force: true });
      }
      loaded.push({ id: tableId, name: file.replace(/\.csv$/, ''), columns, rows });
    } catch (err) {
      // Storage refused the table (bad id, columns, schema): the component's output is at fault.
      if (err instanceof DomainError && err.kind !== 'unavailable') throw new UserError(`Cannot load the output table "${file}" into "${tableId}": ${err.message}`);
      throw err;
    }
  }
  return loaded;
}

/**
 * The job writes with the rights of the token that created it: write on each destination's
 * bucket (the master token and canManageBuckets tokens have it on all), and a bucket that does
 * not exist yet only for those that may create buckets (canManageBuckets, master).
 */
async function checkWriteRights(token: Token, planned: readonly PlannedTable[], tables: TableService): Promise<void> {
  if (planned.length === 0 || seesAllBuckets(token)) return;
  const existing = new Set((await tables.listBuckets()).map((b) => b.id));
  for (const { file, tableId } of planned) {
    let bucketId: string;
    try {
      bucketId = parseTableId(tableId).bucket.id;
    } catch (err) {
      throw new UserError(`Cannot load the output table "${file}" into "${tableId}": ${(err as Error).message}`);
    }
    const who = `the token "${token.description}" (id ${token.id}) that created the job`;
    if (!existing.has(bucketId)) {
      throw new UserError(`Cannot load the output table "${file}" into "${tableId}": the bucket "${bucketId}" does not exist and ${who} may not create buckets (that needs canManageBuckets).`);
    }
    if (!canWriteBucket(token, bucketId)) {
      throw new UserError(`Cannot load the output table "${file}" into "${tableId}": ${who} has no write permission on the bucket "${bucketId}".`);
    }
  }
}
