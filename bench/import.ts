/**
 * `npm run bench -- import [--rows N] [--files N] [--rounds N] [--targets duckdb,postgres]`:
 * rows/s of Sluice's import of staged files (levels/import.ts importFile: the file's
 * gzip slices into its table in one transaction with its import id, column check, expected row
 * count and sink position) on each target, beside a raw COPY of the same files into a table of
 * the same shape on the same target in the same run (DuckDB: one `COPY t FROM '<dir>/*.csv.gz'`;
 * PostgreSQL: `COPY t FROM STDIN` streamed from the gunzipped file, one transaction). The
 * PostgreSQL server is a throwaway one started for the run (test/helpers/postgres.ts). Medians
 * of the rounds; the ratio is the median of the per-round ratios.
 *
 * `keyed`: the same import into a table with a primary key (`id`, every row a new key), and
 * once more into that table (every row replaces the row of its key), against the import into
 * the table without a key (`ratio`: keyed rows/s over unkeyed rows/s).
 */
import { createReadStream, writeFileSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { gzipSync, createGunzip } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { DuckDbTarget } from '../src/adapters/target/duckdb-target.js';
import { PostgresTarget } from '../src/adapters/target/postgres-target.js';
import { csvRows } from '../src/pipeline/csv-rows.js';
import { TableService } from '../src/storage/tables.js';
import type { Target } from '../src/ports/target.js';
import { importFile } from '../src/levels/import.js';
import { LocalDirectoryStaging } from '../src/adapters/staging/local-directory-staging.js';
import type { FileEntry, SliceEntry } from '../src/model/levels.js';
import { startTestPostgres, type TestPostgres } from '../test/helpers/postgres.js';
import { median, round2 } from './util.js';

const COLUMNS = ['id', 'received', 'ip', 'user', 'body'];

/** Staged slices as a sink writes them: RFC 4180 rows, "\n" line ends, gzip level 1. */
function stageFiles(dataDir: string, rows: number, files: number): SliceEntry[] {
  const slices: SliceEntry[] = [];
  const perFile = Math.ceil(rows / files);
  for (let f = 0; f < files; f++) {
    const batch: string[][] = [];
    for (let i = f * perFile; i < Math.min(rows, (f + 1) * perFile); i++) {
      batch.push([
        `0192f${String(i).padStart(27, '0')}`,
        new Date(1_790_000_000_000 + i).toISOString(),
        `10.0.${(i >> 8) & 255}.${i & 255}`,
        `user-${i % 5000}`,
        JSON.stringify({ event: 'click', page: `/products/${i % 977}`, tags: ['a', 'b'], note: i % 13 === 0 ? 'multi\nline, "quoted"' : '' }),
      ]);
    }
    const openedAt = new Date(1_790_000_000_000 + f).toISOString();
    const stagingPath = join('staging', 'bench', `${f}.csv.gz`);
    mkdirSync(dirname(join(dataDir, stagingPath)), { recursive: true });
    const body = gzipSync(csvRows(batch), { level: 1 });
    writeFileSync(join(dataDir, stagingPath), body);
    slices.push({
      projectId: 1, branchId: 1, sourceId: 'bench', sinkId: 'import', fileOpenedAt: 'file', openedAt, state: 'uploaded',
      localPath: '', stagingPath, uncompressedSize: 0, compressedSize: body.length, recordsCount: batch.length, lastOffset: (f + 1) * perFile,
    } as SliceEntry);
  }
  return slices;
}

interface Side {
  name: 'duckdb' | 'postgres';
  open(): Promise<Target>;
  /** The raw COPY of the staged files into `bench_raw.t<round>` in one transaction; returns rows. */
  raw(paths: string[], round: number): Promise<number>;
}

async function duckdbSide(dir: string): Promise<Side> {
  const path = join(dir, 'tables.duckdb');
  return {
    name: 'duckdb',
    open: () => DuckDbTarget.open(path),
    async raw(paths, round) {
      // A file of its own on the same disk: the target holds its file (DuckDB lets one instance open it).
      const instance = await DuckDBInstance.create(join(dir, 'raw.duckdb'));
      const conn = await instance.connect();
      try {
        const table = `bench_raw.t${round}`;
        await conn.run(`CREATE SCHEMA IF NOT EXISTS bench_raw; CREATE TABLE ${table} (${COLUMNS.map((c) => `"${c}" VARCHAR`).join(', ')})`);
        await conn.run('BEGIN TRANSACTION');
        // One COPY of every file (a glob), as DuckDB reads a list fastest (in parallel).
        const glob = join(dirname(paths[0]), '*.csv.gz');
        const rows = Number((await conn.run(`COPY ${table} FROM '${glob}' (FORMAT csv, HEADER false)`)).rowsChanged);
        await conn.run('COMMIT');
        return rows;
      } finally {
        conn.closeSync();
        instance.closeSync();
      }
    },
  };
}

async function postgresSide(server: TestPostgres): Promise<Side> {
  const url = await server.createDatabase('bench');
  return {
    name: 'postgres',
    open: () => PostgresTarget.open(url),
    async raw(paths, round) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const table = `bench_raw.t${round}`;
        await client.query(`CREATE SCHEMA IF NOT EXISTS bench_raw; CREATE TABLE ${table} (${COLUMNS.map((c) => `"${c}" text`).join(', ')})`);
        await client.query('BEGIN');
        let rows = 0;
        for (const p of paths) {
          const copy = client.query(copyFrom(`COPY ${table} FROM STDIN WITH (FORMAT csv)`));
          await pipeline(createReadStream(p), createGunzip(), copy);
          rows += copy.rowCount;
        }
        await client.query('COMMIT');
        return rows;
      } finally {
        await client.end();
      }
    },
  };
}

export async function importBench(argv: string[]): Promise<Record<string, unknown>> {
  const { values } = parseArgs({
    args: argv,
    options: {
      rows: { type: 'string', default: '500000' },
      files: { type: 'string', default: '10' },
      rounds: { type: 'string', default: '3' },
      targets: { type: 'string', default: 'duckdb,postgres' },
    },
  });
  const rows = Number(values.rows);
  const files = Number(values.files);
  const rounds = Number(values.rounds);
  const dir = await mkdtemp(join(tmpdir(), 'sluice-bench-import-'));
  let server: TestPostgres | undefined;
  const results: Record<string, unknown> = {};
  let ok = true;
  try {
    process.stderr.write(`staging ${rows} rows in ${files} gzip slices...\n`);
    const slices = stageFiles(dir, rows, files);
    const paths = slices.map((s) => join(dir, s.stagingPath!));
    const staged = slices.reduce((n, s) => n + s.compressedSize, 0);
    for (const name of values.targets.split(',')) {
      if (name === 'postgres') server ??= await startTestPostgres();
      const side = name === 'postgres' ? await postgresSide(server!) : await duckdbSide(dir);
      const sluice: number[] = [];
      const raw: number[] = [];
      const ratios: number[] = [];
      const keyed: number[] = [];
      const replaced: number[] = [];
      {
        for (let round = 1; round <= rounds; round++) {
          const target = await side.open();
          const tables = new TableService(target, 1);
          const tableId = `in.c-bench.r${round}`;
          await tables.ensureTable(tableId, COLUMNS.map((name) => ({ name })), { metadata: {} });
          const fileOf = (into: string, openedAt: string) => {
            const file = {
              projectId: 1, branchId: 1, sourceId: 'bench', sinkId: 'import', openedAt, state: 'importing', tableId: into,
              columns: COLUMNS.map((c) => ({ type: 'body', name: c })), settings: [],
            } as unknown as FileEntry;
            return { file, slices: slices.map((s) => ({ ...s, fileOpenedAt: openedAt })) };
          };
          const importInto = async (into: string, openedAt: string) => {
            const { file, slices: own } = fileOf(into, openedAt);
            const t0 = performance.now();
            const result = await importFile(tables, new LocalDirectoryStaging(dir), file, own);
            if (result.inserted !== rows) throw new Error(`Sluice imported ${result.inserted} rows, ${rows} expected`);
            return rows / ((performance.now() - t0) / 1000);
          };
          // Alternate which goes first, so that neither always meets a warm cache.
          const measureSluice = () => importInto(tableId, `round-${round}`);
          const measureRaw = async () => {
            const t0 = performance.now();
            const n = await side.raw(paths, round);
            if (n !== rows) throw new Error(`the raw COPY loaded ${n} rows, ${rows} expected`);
            return rows / ((performance.now() - t0) / 1000);
          };
          let s: number;
          let r: number;
          if (round % 2 === 1) {
            s = await measureSluice();
            r = await measureRaw();
          } else {
            r = await measureRaw();
            s = await measureSluice();
          }
          sluice.push(s);
          raw.push(r);
          ratios.push(s / r);
          const keyedId = `in.c-bench.k${round}`;
          await tables.ensureTable(keyedId, COLUMNS.map((name) => ({ name })), { primaryKey: ['id'], metadata: {} });
          const k = await importInto(keyedId, `keyed-${round}`);
          const again = await importInto(keyedId, `replaced-${round}`);
          if ((await tables.getTable(keyedId)).rowsCount !== rows) throw new Error(`the keyed table has other than ${rows} rows`);
          keyed.push(k);
          replaced.push(again);
          await target.close();
          process.stderr.write(`${name} round ${round}: Sluice ${Math.round(s)} rows/s, raw COPY ${Math.round(r)} rows/s, ratio ${round2(s / r)}; `
            + `keyed ${Math.round(k)} rows/s new keys, ${Math.round(again)} rows/s replacing\n`);
        }
      }
      const ratio = round2(median(ratios));
      ok &&= ratio >= 0.8;
      results[name] = {
        sluiceRowsPerSec: Math.round(median(sluice)), rawCopyRowsPerSec: Math.round(median(raw)), ratio, target: 0.8,
        keyed: {
          newKeysRowsPerSec: Math.round(median(keyed)), replacingRowsPerSec: Math.round(median(replaced)),
          ratio: round2(median(keyed) / median(sluice)), replacingRatio: round2(median(replaced) / median(sluice)),
        },
      };
    }
    return { rows, files, stagedBytes: staged, rounds, ...results, ok };
  } finally {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
