/**
 * The two Target adapters for tests that run against both (`describe.each(TARGETS)`): the
 * embedded DuckDB file and a real PostgreSQL server. A test file calls `targetServers()` once
 * at its top: the PostgreSQL server starts on first use and stops after the file; every test
 * gets a database of its own.
 */
import { afterAll } from 'vitest';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';
import { DuckDbTarget } from '../../src/adapters/target/duckdb-target.js';
import { PostgresTarget } from '../../src/adapters/target/postgres-target.js';
import type { Target } from '../../src/ports/target.js';
import { startTestPostgres, type TestPostgres } from './postgres.js';

export type TargetKind = 'duckdb' | 'postgres';
export const TARGETS: TargetKind[] = ['duckdb', 'postgres'];

export interface TargetServers {
  /** The running PostgreSQL server of this file (started on first call). */
  postgres(): Promise<TestPostgres>;
  /**
   * Where a new target of this kind lives: for DuckDB a file in `dir` (without `dir`: the
   * service's default file in its data directory), for PostgreSQL a new database. `env` is what
   * `sluice serve` takes to use it, `args` the same as flags.
   */
  location(kind: TargetKind, dir?: string): Promise<{ env: Record<string, string>; args: string[]; url?: string; path?: string }>;
  /** Opens a new, empty target of this kind; `reopen` opens the same one again (after close). */
  open(kind: TargetKind, dir: string): Promise<{ target: Target; reopen(): Promise<Target> }>;
}

export function targetServers(): TargetServers {
  let server: Promise<TestPostgres> | undefined;
  afterAll(async () => {
    // A server that failed to start has failed its tests already; there is nothing to stop.
    const started = await server?.catch(() => undefined);
    await started?.stop();
  }, 30_000);
  const postgres = () => (server ??= startTestPostgres());
  const location: TargetServers['location'] = async (kind, dir): Promise<{ env: Record<string, string>; args: string[]; url?: string; path?: string }> => {
    if (kind === 'duckdb' && dir === undefined) return { env: {}, args: [] };
    if (kind === 'duckdb') {
      const path = join(dir as string, 'tables.duckdb');
      return { env: { SLUICE_TARGET_PATH: path }, args: ['--target-path', path], path };
    }
    const url = await (await postgres()).createDatabase('sluice');
    return { env: { SLUICE_TARGET_URL: url }, args: ['--target', url], url };
  };
  return {
    postgres,
    location,
    async open(kind, dir) {
      const where = await location(kind, dir);
      const open = () => (where.url ? PostgresTarget.open(where.url) : DuckDbTarget.open(where.path!));
      return { target: await open(), reopen: open };
    },
  };
}

/** Where a target is: a DuckDB file or a PostgreSQL database URL (TargetServers.location). */
export interface TargetLocation {
  path?: string;
  url?: string;
}

/**
 * Rows of a table, read from the target itself rather than through Sluice: a DuckDB file
 * read-only (no process may hold it), or the PostgreSQL database.
 */
export async function readRows(where: TargetLocation, bucketId: string, table: string, columns: string[]): Promise<Record<string, string>[]> {
  const list = columns.map((c) => `"${c.replaceAll('"', '""')}"`).join(', ');
  const sql = `SELECT ${list} FROM "${bucketId.replaceAll('"', '""')}"."${table.replaceAll('"', '""')}"`;
  if (where.url) {
    const client = new pg.Client({ connectionString: where.url });
    await client.connect();
    try {
      return (await client.query(sql)).rows as Record<string, string>[];
    } finally {
      await client.end();
    }
  }
  const instance = await DuckDBInstance.create(where.path!, { access_mode: 'READ_ONLY' });
  try {
    const conn = await instance.connect();
    try {
      return (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, string>[];
    } finally {
      conn.closeSync();
    }
  } finally {
    instance.closeSync();
  }
}

/** Runs a statement on the target behind Sluice's back (a DuckDB file: waiting while a process holds it). */
export async function runOnTarget(where: TargetLocation, sql: string): Promise<void> {
  if (where.url) {
    const client = new pg.Client({ connectionString: where.url });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
    return;
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const instance = await DuckDBInstance.create(where.path!);
      try {
        const conn = await instance.connect();
        try {
          await conn.run(sql);
          return;
        } finally {
          conn.closeSync();
        }
      } finally {
        instance.closeSync();
      }
    } catch (err) {
      if (Date.now() > deadline || !String(err).toLowerCase().includes('lock')) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
