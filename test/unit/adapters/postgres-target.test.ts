/**
 * What only the PostgreSQL adapter has to get right: a database that goes away and comes back,
 * a bad URL, the fence between cluster nodes and upserts of two writers under real concurrency
 * (two transactions).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { PostgresTarget } from '../../../src/adapters/target/postgres-target.js';
import { SinkClaimedError, TargetUnavailableError } from '../../../src/ports/target.js';
import { POSTGRES_START_TIMEOUT_MS, startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

let server: TestPostgres;
let dir: string;

beforeAll(async () => {
  server = await startTestPostgres();
  dir = mkdtempSync(join(tmpdir(), 'sluice-pg-'));
}, POSTGRES_START_TIMEOUT_MS);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('PostgresTarget', () => {
  it('fails to open with TargetUnavailableError naming the server without the password', async () => {
    const err = await PostgresTarget.open(`postgres://sluice:s3cret@127.0.0.1:1/nowhere`, { connectTimeoutMs: 2000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TargetUnavailableError);
    expect((err as Error).message).toContain('PostgreSQL at 127.0.0.1:1/nowhere');
    expect((err as Error).message).not.toContain('s3cret');
  });

  it('says which part of the URL to fix when the server refuses the login or has no such database', async () => {
    const login = await PostgresTarget.open(`postgres://nobody_here:s3cret@127.0.0.1:${server.port}/postgres`).catch((e: unknown) => e);
    expect(login).toBeInstanceOf(TargetUnavailableError);
    expect((login as Error).message).toBe(`PostgreSQL at 127.0.0.1:${server.port}/postgres refused the login of user "nobody_here": role "nobody_here" does not exist. Check the user and password in --target (SLUICE_TARGET).`);
    const database = await PostgresTarget.open(server.url('no_such_db')).catch((e: unknown) => e);
    expect((database as Error).message).toBe(`PostgreSQL at 127.0.0.1:${server.port}/no_such_db: database "no_such_db" does not exist. Create it (createdb -h 127.0.0.1 -p ${server.port} -U postgres no_such_db) or name another database in --target.`);
  });

  it('answers TargetUnavailableError while the server is down, and works again once it is back', async () => {
    const target = await PostgresTarget.open(await server.createDatabase('outage'), { connectTimeoutMs: 2000 });
    try {
      await target.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
      await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a'] });
      await target.insertRows('in.c-b.t', [['1']], { importId: 'one' });
      await server.kill();
      expect(await target.ping()).toBe(false);
      await expect(target.insertRows('in.c-b.t', [['2']], { importId: 'two' })).rejects.toBeInstanceOf(TargetUnavailableError);
      await expect(target.listTables()).rejects.toBeInstanceOf(TargetUnavailableError);
      await server.restart();
      expect(await target.ping()).toBe(true);
      expect(await target.insertRows('in.c-b.t', [['2']], { importId: 'two' })).toEqual({ inserted: 1, duplicate: false });
      expect(await target.preview('in.c-b.t', 10)).toEqual([['1'], ['2']]);
    } finally {
      await target.close();
    }
  }, 60_000);

  it('a claim waits for an import in flight and reads its position; a later import of the old owner is refused', async () => {
    const url = await server.createDatabase('fence');
    const nodeA = await PostgresTarget.open(url);
    const nodeB = await PostgresTarget.open(url);
    try {
      await nodeA.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
      await nodeA.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a', 'b'] });
      const rows = 200_000;
      const file = join(dir, 'big.csv.gz');
      writeFileSync(file, gzipSync(Array.from({ length: rows }, (_, i) => `${i},"value ${i}"\n`).join('')));
      const stream = '1/src/sink';
      expect(await nodeA.claimSink(stream, 'A')).toBeUndefined();
      let total = 0;
      for (let round = 1; round <= 3; round++) {
        const owner = round % 2 === 1 ? 'A' : 'B';
        const other = owner === 'A' ? 'B' : 'A';
        const by = owner === 'A' ? nodeA : nodeB;
        const claimer = owner === 'A' ? nodeB : nodeA;
        const importing = by.importCsv('in.c-b.t', file, { importId: `r${round}`, expectedRows: rows, position: { sink: stream, through: round * 1000, owner } })
          .then(() => 'imported', (err: unknown) => (err instanceof SinkClaimedError ? 'refused' : Promise.reject(err)));
        await new Promise((r) => setTimeout(r, 30));
        const claimed = await claimer.claimSink(stream, other);
        const outcome = await importing;
        // Either the import went first (and the claim read its position) or the claim did (and the import wrote nothing).
        if (outcome === 'imported') {
          total += rows;
          expect(claimed).toBe(round * 1000);
        } else {
          expect(claimed === undefined || claimed < round * 1000).toBe(true);
        }
        expect(await nodeA.rowCount('in.c-b.t')).toBe(total);
        // The old owner is fenced off now.
        await expect(by.importCsv('in.c-b.t', file, { importId: `late${round}`, position: { sink: stream, through: 99_999, owner } })).rejects.toBeInstanceOf(SinkClaimedError);
      }
      expect(total).toBeGreaterThan(0);
      expect((await nodeB.getTable('in.c-b.t'))?.rowsCount).toBe(total);
    } finally {
      await nodeA.close();
      await nodeB.close();
    }
  }, 60_000);

  it('works for a database user that may not create roles: queries run as that user, still read-only', async () => {
    const admin = server.url();
    const db = (await server.createDatabase('plain')).split('/').pop()!;
    const pgAdmin = await PostgresTarget.open(admin);
    await pgAdmin.close();
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    await client.query(`CREATE ROLE plain_sluice LOGIN; ALTER DATABASE "${db}" OWNER TO plain_sluice`);
    await client.end();
    const url = new URL(server.url(db));
    url.username = 'plain_sluice';
    const target = await PostgresTarget.open(url.toString());
    try {
      await target.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
      await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a'] });
      await target.insertRows('in.c-b.t', [['1']]);
      const options = { timeoutMs: 5000, maxRows: 10, authorize: () => undefined };
      expect((await target.query('SELECT a FROM "in.c-b".t', options)).rows).toEqual([['1']]);
      const kind = (sql: string) => target.query(sql, options).then(() => 'ran', (err: { kind?: string }) => err.kind);
      expect(await kind("SELECT pg_read_file('/etc/hostname')")).toBe('forbidden');
      expect(await kind('DELETE FROM "in.c-b".t')).toBe('write');
      expect(await target.preview('in.c-b.t', 10)).toEqual([['1']]);
    } finally {
      await target.close();
    }
  });

  it('fails an import whose staged file is gone or damaged, and changes nothing (the process goes on)', async () => {
    const target = await PostgresTarget.open(await server.createDatabase('gone'));
    try {
      await target.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
      await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a'] });
      const good = join(dir, 'good.csv.gz');
      writeFileSync(good, gzipSync('1\n2\n'));
      const damaged = join(dir, 'damaged.csv.gz');
      writeFileSync(damaged, gzipSync('3\n4\n').subarray(0, 12));
      // An error event of the file's stream not handled would end the process here (and vitest's worker with it).
      await expect(target.importCsv('in.c-b.t', [good, join(dir, 'gone.csv.gz')], { importId: 'f1' })).rejects.toThrow(/ENOENT/);
      await expect(target.importCsv('in.c-b.t', [good, damaged], { importId: 'f2' })).rejects.toThrow();
      expect(await target.preview('in.c-b.t', 10)).toEqual([]);
      // Nothing of either import is recorded: the retry with the file back imports it once.
      expect(await target.importCsv('in.c-b.t', [good], { importId: 'f1' })).toMatchObject({ inserted: 2, duplicate: false });
    } finally {
      await target.close();
    }
  });

  it('runs imports of different tables side by side on its pool', async () => {
    const target = await PostgresTarget.open(await server.createDatabase('pool'), { poolSize: 4 });
    try {
      await target.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
      const ids = ['t1', 't2', 't3', 't4', 't5', 't6'];
      for (const t of ids) await target.createTable({ id: `in.c-b.${t}`, bucketId: 'in.c-b', name: t, columns: ['a'] });
      const file = join(dir, 'small.csv');
      writeFileSync(file, Array.from({ length: 1000 }, (_, i) => `${i}\n`).join(''));
      const results = await Promise.all(ids.map((t) => target.importCsv(`in.c-b.${t}`, file, { importId: 'x' })));
      expect(results.map((r) => r.inserted)).toEqual(ids.map(() => 1000));
    } finally {
      await target.close();
    }
  });

  it('upserts of two writers into one keyed table at once: both land, no key twice, the row count right', async () => {
    const url = await server.createDatabase('upserts');
    const nodeA = await PostgresTarget.open(url);
    const nodeB = await PostgresTarget.open(url);
    try {
      await nodeA.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
      await nodeA.createTable({ id: 'in.c-b.k', bucketId: 'in.c-b', name: 'k', columns: ['id', 'by'], types: { id: 'INTEGER' }, primaryKey: ['id'] });
      // Overlapping keys, each writer's file in its own order: ON CONFLICT waits for the other's rows.
      const rows = (by: string, from: number) => Array.from({ length: 20_000 }, (_, i) => `${from + ((i * 7) % 20_000)},${by}\n`).join('');
      const a = join(dir, 'a.csv');
      const b = join(dir, 'b.csv');
      writeFileSync(a, rows('a', 0));
      writeFileSync(b, rows('b', 10_000));
      const results = await Promise.all([nodeA.importCsv('in.c-b.k', a, { importId: 'a' }), nodeB.importCsv('in.c-b.k', b, { importId: 'b' })]);
      expect(results.map((r) => r.inserted)).toEqual([20_000, 20_000]);
      expect(await nodeA.rowCount('in.c-b.k')).toBe(30_000);
      expect((await nodeA.getTable('in.c-b.k'))?.rowsCount).toBe(30_000);
      const distinct = await nodeA.query('SELECT count(DISTINCT id) FROM "in.c-b".k', { timeoutMs: 5000, maxRows: 1, authorize: () => undefined });
      expect(distinct.rows).toEqual([['30000']]);
    } finally {
      await nodeA.close();
      await nodeB.close();
    }
  }, 60_000);
});
