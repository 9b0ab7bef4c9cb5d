/**
 * The e2e bench's baseline, run as a process of its own (`node --import tsx bench/e2e-baseline.ts
 * '<json options>'`): the least work that takes the same request bodies to rows in a table. It
 * decodes each request (protobufjs through the same decoder; NDJSON split and JSON.parse), picks
 * the five fields, writes CSV lines (the same CSV writer) through gzip level 1 into files of
 * FILE_RECORDS records, then loads them into the target in one transaction (DuckDB: one `COPY
 * ... FROM '<dir>/*.csv.gz'`; PostgreSQL: `COPY ... FROM STDIN` per file through
 * pg-copy-streams) and counts the rows with COUNT(*). The time runs from the first request to
 * the count. It prints one JSON line: records, seconds, rows and the rows grouped by value (to
 * compare with Sluice's table).
 */
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip, type Gzip } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { csvRows } from '../src/pipeline/csv-rows.js';
import { PATH_COLUMN_NAMES, rowsOf, type BatchPath } from './e2e-data.js';

export interface BaselineOptions {
  path: BatchPath;
  /** A file holding one request body. */
  bodyFile: string;
  /** Requests to process (the body each time, as the load generator sends it). */
  requests: number;
  /** Folder for the gzip files (and the DuckDB file). */
  dir: string;
  /** A PostgreSQL database URL; none: a DuckDB file in `dir`. */
  postgresUrl?: string;
}

export interface BaselineResult {
  records: number;
  seconds: number;
  rows: number;
  /** `SELECT <columns>, count(*) ... GROUP BY <columns> ORDER BY <columns>`, as JSON text. */
  groups: string[];
}

const FILE_RECORDS = 200_000;
const TABLE = 'baseline_rows.t';

/** SELECT the columns and their count, grouped, in one order (both sides run it). */
export function groupQuery(table: string): string {
  const cols = PATH_COLUMN_NAMES.map((c) => `"${c}"`).join(', ');
  return `SELECT ${cols}, count(*) AS n FROM ${table} GROUP BY ${cols} ORDER BY ${cols}`;
}

async function writeGzipFiles(o: BaselineOptions, body: Buffer): Promise<{ files: string[]; records: number }> {
  const files: string[] = [];
  let gz: Gzip | undefined;
  let done: Promise<void> | undefined;
  let inFile = 0;
  let records = 0;
  const open = () => {
    const file = join(o.dir, `baseline-${files.length}.csv.gz`);
    files.push(file);
    gz = createGzip({ level: 1 });
    done = pipeline(gz, createWriteStream(file));
    inFile = 0;
  };
  open();
  for (let i = 0; i < o.requests; i++) {
    const rows = rowsOf(o.path, body);
    if (!gz!.write(csvRows(rows))) await once(gz!, 'drain');
    records += rows.length;
    inFile += rows.length;
    if (inFile >= FILE_RECORDS && i + 1 < o.requests) {
      gz!.end();
      await done;
      open();
    }
  }
  gz!.end();
  await done;
  return { files, records };
}

async function loadDuckDb(o: BaselineOptions): Promise<{ rows: number; groups: () => Promise<string[]>; close: () => void }> {
  const instance = await DuckDBInstance.create(join(o.dir, 'baseline.duckdb'));
  const conn = await instance.connect();
  await conn.run(`CREATE SCHEMA baseline_rows; CREATE TABLE ${TABLE} (${PATH_COLUMN_NAMES.map((c) => `"${c}" VARCHAR`).join(', ')})`);
  await conn.run('BEGIN TRANSACTION');
  await conn.run(`COPY ${TABLE} FROM '${join(o.dir, 'baseline-*.csv.gz')}' (FORMAT csv, HEADER false)`);
  await conn.run('COMMIT');
  const rows = Number((await (await conn.run(`SELECT count(*) FROM ${TABLE}`)).getRows())[0][0]);
  return {
    rows,
    groups: async () => (await (await conn.run(groupQuery(TABLE))).getRows()).map((r) => JSON.stringify(r.map(String))),
    close: () => {
      conn.closeSync();
      instance.closeSync();
    },
  };
}

async function loadPostgres(url: string, files: string[]): Promise<{ rows: number; groups: () => Promise<string[]>; close: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`CREATE SCHEMA baseline_rows; CREATE TABLE ${TABLE} (${PATH_COLUMN_NAMES.map((c) => `"${c}" text`).join(', ')})`);
  await client.query('BEGIN');
  for (const f of files) {
    const copy = client.query(copyFrom(`COPY ${TABLE} FROM STDIN WITH (FORMAT csv)`));
    await pipeline(createReadStream(f), createGunzip(), copy);
  }
  await client.query('COMMIT');
  const rows = Number((await client.query(`SELECT count(*) AS n FROM ${TABLE}`)).rows[0].n);
  return {
    rows,
    groups: async () => (await client.query({ text: groupQuery(TABLE), rowMode: 'array' })).rows.map((r: unknown[]) => JSON.stringify(r.map(String))),
    close: () => client.end(),
  };
}

export async function runBaseline(o: BaselineOptions): Promise<BaselineResult> {
  const body = readFileSync(o.bodyFile);
  const started = performance.now();
  const { files, records } = await writeGzipFiles(o, body);
  const loaded = o.postgresUrl ? await loadPostgres(o.postgresUrl, files) : await loadDuckDb(o);
  const seconds = (performance.now() - started) / 1000;
  try {
    return { records, seconds, rows: loaded.rows, groups: await loaded.groups() };
  } finally {
    await loaded.close();
  }
}

if (process.argv[1]?.endsWith('e2e-baseline.ts')) {
  const result = await runBaseline(JSON.parse(process.argv[2]) as BaselineOptions);
  process.stdout.write(JSON.stringify(result) + '\n');
}
