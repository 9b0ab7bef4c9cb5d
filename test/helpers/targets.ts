/**
 * The two Target adapters for tests that run against both (`describe.each(TARGETS)`): the
 * embedded DuckDB file and a real PostgreSQL server. A test file calls `targetServers()` once
 * at its top: the PostgreSQL server starts on first use and stops after the file; every test
 * gets a database of its own.
 */
import { afterAll } from 'vitest';
import { join } from 'node:path';
import { DuckDbTarget } from '../../src/connectors/target/duckdb-target.js';
import { PostgresTarget } from '../../src/connectors/target/postgres-target.js';
import type { Target } from '../../src/storage/target.js';
import { startTestPostgres, type TestPostgres } from './postgres.js';

export type TargetKind = 'duckdb' | 'postgres';
export const TARGETS: TargetKind[] = ['duckdb', 'postgres'];

export interface TargetServers {
  /** The running PostgreSQL server of this file (started on first call). */
  postgres(): Promise<TestPostgres>;
  /**
   * Where a new target of this kind lives: for DuckDB a file in `dir`, for PostgreSQL a new
   * database. `env` is what `sluice serve` takes to use it, `args` the same as flags.
   */
  location(kind: TargetKind, dir: string): Promise<{ env: Record<string, string>; args: string[]; url?: string; path?: string }>;
  /** Opens a new, empty target of this kind; `reopen` opens the same one again (after close). */
  open(kind: TargetKind, dir: string): Promise<{ target: Target; reopen(): Promise<Target> }>;
}

export function targetServers(): TargetServers {
  let server: Promise<TestPostgres> | undefined;
  afterAll(async () => {
    if (server) await (await server).stop();
  }, 30_000);
  const postgres = () => (server ??= startTestPostgres());
  const location: TargetServers['location'] = async (kind, dir): Promise<{ env: Record<string, string>; args: string[]; url?: string; path?: string }> => {
    if (kind === 'duckdb') {
      const path = join(dir, 'tables.duckdb');
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
