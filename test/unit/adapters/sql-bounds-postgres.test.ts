/**
 * The PostgreSQL target's bounds for read-only SQL, on a real server (a superuser, as the test
 * server's `postgres`): the session a query runs in logs in as a role that may read only the
 * buckets the query reads (tested directly, as if the statement check let anything through),
 * its time, work_mem and temporary files are bounded, and a user that may not create roles, or
 * that may read server files, gets the weaker mode or none.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { PostgresTarget } from '../../../src/adapters/target/postgres-target.js';
import { QueryRefusedError, type QueryOptions, type QueryRelation } from '../../../src/ports/target.js';
import { POSTGRES_START_TIMEOUT_MS, startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';

const MB = 1024 * 1024;
let server: TestPostgres;
let target: PostgresTarget;

beforeAll(async () => {
  server = await startTestPostgres();
  target = await PostgresTarget.open(await server.createDatabase('bounds'), { queryMemoryBytes: 4 * MB });
  await target.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
  await target.createBucket({ id: 'in.c-secret', stage: 'in', name: 'c-secret' });
  await target.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a'] });
  await target.createTable({ id: 'in.c-secret.s', bucketId: 'in.c-secret', name: 's', columns: ['x'] });
  await target.insertRows('in.c-b.t', [['1']]);
  await target.insertRows('in.c-secret.s', [['TOPSECRET']]);
}, POSTGRES_START_TIMEOUT_MS);

afterAll(async () => {
  await target?.close();
  await server?.stop();
});

const options = (over: Partial<QueryOptions> = {}): QueryOptions => ({ timeoutMs: 10_000, maxRows: 10, authorize: () => undefined, ...over });

async function refusal(run: Promise<unknown>): Promise<QueryRefusedError> {
  const err = await run.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(QueryRefusedError);
  return err as QueryRefusedError;
}

/** What the session of a query over in.c-b answers to `sql`, run as is. */
function asReaderOfB(sql: string): Promise<unknown> {
  return target.withReaderSession(['in.c-b'], 10_000, async (c) => (await c.query({ text: sql, rowMode: 'array' })).rows);
}

describe('the session of a read-only query, as if the statement check let anything through', () => {
  it('logs in as a role of its own: no superuser, no file rights, no role it may switch to', async () => {
    // The role is made the first time a query reads the bucket.
    await target.query('SELECT a FROM "in.c-b".t', options());
    const [[user, session, superuser, files, memberOf]] = await asReaderOfB(`
      SELECT current_user, session_user, r.rolsuper,
             pg_has_role(current_user, 'pg_read_server_files', 'MEMBER') OR pg_has_role(current_user, 'pg_execute_server_program', 'MEMBER'),
             (SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid)
        FROM pg_roles r WHERE r.rolname = current_user`) as unknown[][];
    expect(user).toMatch(/^sluice_sql_[0-9a-f]{24}$/);
    expect(session).toBe(user);
    expect([superuser, files, memberOf]).toEqual([false, false, '0']);
  });

  it.each([
    ["SELECT pg_read_file('/etc/hostname')", /permission denied for function pg_read_file/],
    ["COPY (SELECT 1) TO PROGRAM 'id'", /permission denied|must be superuser|pg_execute_server_program/],
    ["SELECT lo_import('/etc/hostname')", /permission denied|read-only transaction/],
    ["INSERT INTO \"in.c-b\".t (a) VALUES ('2')", /read-only transaction/],
    ['DELETE FROM "in.c-b".t', /read-only transaction/],
    ["SELECT set_config('role', 'postgres', true)", /permission denied to set role/],
    ["SELECT query_to_xml('SELECT * FROM \"in.c-secret\".s', true, true, '')", /permission denied for schema in\.c-secret/],
    ["SELECT table_to_xml('\"in.c-secret\".s'::regclass, true, true, '')", /permission denied for schema in\.c-secret/],
    ["SELECT * FROM ts_stat('SELECT to_tsvector(x) FROM \"in.c-secret\".s')", /permission denied for schema in\.c-secret/],
    ['SELECT * FROM _sluice.settings', /permission denied for schema _sluice/],
    ["SELECT set_config('temp_file_limit', '-1', true)", /permission denied to set parameter/],
  ])('refuses %s', async (sql, message) => {
    const err = await asReaderOfB(sql).then(() => undefined, (e: unknown) => e);
    expect(String((err as Error)?.message)).toMatch(message);
    expect(await target.preview('in.c-b.t', 10)).toEqual([['1']]);
  });

  it('bounds the session: statement_timeout, work_mem a quarter of the limit, temp_file_limit the limit', async () => {
    const [[timeout, workMem, tempLimit]] = await target.withReaderSession(['in.c-b'], 1234, async (c) => (await c.query({
      text: "SELECT current_setting('statement_timeout'), current_setting('work_mem'), current_setting('temp_file_limit')", rowMode: 'array',
    })).rows) as string[][];
    expect([timeout, workMem, tempLimit]).toEqual(['1234ms', '1MB', '4MB']);
  });

  it('forgets what a query did to its session: no advisory lock outlives it', async () => {
    await asReaderOfB('SELECT pg_advisory_lock(1360781314)');
    const admin = new pg.Client({ connectionString: server.url('postgres') });
    await admin.connect();
    try {
      const { rowCount } = await admin.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 1360781314");
      expect(rowCount).toBe(0);
    } finally {
      await admin.end();
    }
  });
});

describe('PostgreSQL read-only query bounds', () => {
  it('cannot reach a bucket the plan does not show', async () => {
    let seen: QueryRelation[] = [];
    const err = await refusal(target.query("SELECT query_to_xml('SELECT * FROM \"in.c-secret\".s', true, true, '') FROM \"in.c-b\".t", options({ authorize: (r) => void (seen = [...r]) })));
    expect(seen.map((r) => r.bucketId)).toEqual(['in.c-b']);
    expect(err.kind).toBe('forbidden');
    expect(err.message).not.toContain('TOPSECRET');
  });

  it('stops a query past its temporary files with an error naming the limit', async () => {
    // work_mem 1MB: the sort spills, past the 4MB of temporary files.
    const err = await refusal(target.query('SELECT count(*) FROM (SELECT g, md5(g::text) FROM generate_series(1, 2000000) g ORDER BY 2) s', options({ timeoutMs: 60_000 })));
    expect(err.kind).toBe('memory');
    expect(err.message).toContain('SQL memory limit (4MB of temporary files)');
    expect(err.message).toContain('temp_file_limit');
  }, 90_000);

  it('answers the timeout of a slow query, and the next query runs', async () => {
    const started = Date.now();
    expect((await refusal(target.query('SELECT pg_sleep(5) FROM "in.c-b".t', options({ timeoutMs: 300 })))).kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3000);
    expect((await target.query('SELECT a FROM "in.c-b".t', options())).rows).toEqual([['1']]);
  });
});

describe('a database user with fewer rights', () => {
  /** A database owned by a new login role (a member of pg_read_server_files with `files`), and a target that connects as it. */
  async function openAs(user: string, files = false): Promise<PostgresTarget> {
    const db = (await server.createDatabase(user)).split('/').pop()!;
    const admin = new pg.Client({ connectionString: server.url() });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE ${user} LOGIN; ALTER DATABASE "${db}" OWNER TO ${user}`);
      if (files) await admin.query(`GRANT pg_read_server_files TO ${user}`);
    } finally {
      await admin.end();
    }
    const url = new URL(server.url(db));
    url.username = user;
    return PostgresTarget.open(url.toString());
  }

  it('without CREATEROLE: queries run as that user, so each needs a token that may read every bucket', async () => {
    const t = await openAs('plain_reader_test');
    try {
      await t.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
      await t.createBucket({ id: 'in.c-other', stage: 'in', name: 'c-other' });
      await t.createTable({ id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: ['a'] });
      let seen: QueryRelation[] = [];
      await t.query('SELECT a FROM "in.c-b".t', options({ authorize: (r) => void (seen = [...r]) }));
      expect(seen.filter((r) => r.reachable).map((r) => r.bucketId).sort()).toEqual(['in.c-b', 'in.c-other']);
    } finally {
      await t.close();
    }
  });

  it('that may read server files but not create roles: read-only SQL is off, with the reason', async () => {
    const t = await openAs('file_reader_test', true);
    try {
      await t.createBucket({ id: 'in.c-b', stage: 'in', name: 'c-b' });
      const err = await refusal(t.query('SELECT 1', options()));
      expect(err.kind).toBe('unavailable');
      expect(err.message).toContain('may read or write server files');
      expect(err.message).toContain('CREATEROLE');
    } finally {
      await t.close();
    }
  });
});
