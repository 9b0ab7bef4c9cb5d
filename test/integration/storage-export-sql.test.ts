/**
 * Tables out of Sluice, on both targets, through the HTTP API as clients use it: the Keboola
 * export flow (export-async -> job -> file -> download URL) and the read-only SQL endpoint.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { TestService } from '../helpers/service.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';
import { TARGETS, targetServers } from '../helpers/targets.js';

const servers = targetServers();

describe.each(TARGETS)('export and SQL on %s', (kind) => {
  let svc: TestService;
  let reader: string;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-export-it-'));
    const where = await servers.location(kind, dir);
    svc = await TestService.start({ args: where.args });
    const { tables } = svc.server.services;
    await tables.ensureTable('in.c-events.clicks', [{ name: 'id' }, { name: 'user' }, { name: 'page' }], { metadata: {} });
    await tables.insertRows('in.c-events.clicks', [['1', 'ann', '/home'], ['2', 'bob', '/a,"b"'], ['3', 'ann', '/c\nd']]);
    await tables.ensureTable('in.c-private.salaries', [{ name: 'name' }, { name: 'amount' }], { metadata: {} });
    await tables.insertRows('in.c-private.salaries', [['ann', '100']]);
    const token = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'reader', bucketPermissions: { 'in.c-events': 'read' } } });
    expect(token.status).toBe(201);
    reader = token.json.token;
    rmSync(dir, { recursive: true, force: true });
  }, POSTGRES_START_TIMEOUT_MS);

  afterAll(async () => svc?.close());

  /** Follows a job until it ends, as Keboola's clients do. */
  async function finished(jobUrl: string, token?: string): Promise<any> {
    return svc.until('the export job', async () => {
      const job = await svc.call('GET', new URL(jobUrl).pathname, { token });
      expect(job.status).toBe(200);
      return job.json.status === 'success' || job.json.status === 'error' ? job.json : undefined;
    });
  }

  /** The file of a finished export job, downloaded by its URL without a token. */
  async function download(job: any, token?: string): Promise<{ file: any; body: Buffer; type: string | null }> {
    const file = await svc.call('GET', `/v2/storage/files/${job.results.file.id}`, { token });
    expect(file.status).toBe(200);
    const url = new URL(file.json.url);
    const res = await fetch(svc.server.address + url.pathname + url.search);
    expect(res.status).toBe(200);
    return { file: file.json, body: Buffer.from(await res.arrayBuffer()), type: res.headers.get('content-type') };
  }

  it('exports a table as gzip CSV with a header: job, progress, file, download URL', async () => {
    const started = await svc.call('POST', '/v2/storage/tables/in.c-events.clicks/export-async', { token: reader, json: {} });
    expect(started.status).toBe(202);
    expect(started.json).toMatchObject({ status: 'waiting', tableId: 'in.c-events.clicks', operationName: 'tableExport' });
    const job = await finished(started.json.url, reader);
    expect(job).toMatchObject({ status: 'success', progress: { rows: 3, totalRows: 3 }, metrics: { outCompressed: true } });
    const { file, body, type } = await download(job, reader);
    expect(file).toMatchObject({ name: 'in.c-events.clicks.csv.gz', isSliced: false, sizeBytes: body.length });
    expect(type).toBe('application/gzip');
    expect(parse(gunzipSync(body))).toEqual([['id', 'user', 'page'], ['1', 'ann', '/home'], ['2', 'bob', '/a,"b"'], ['3', 'ann', '/c\nd']]);
  });

  it('takes the Keboola options from a form body: columns, whereColumn, whereValues[], limit, gzip', async () => {
    const form = 'columns=page,id&whereColumn=user&whereValues[]=ann&whereValues[]=zoe&limit=5&gzip=0';
    const started = await svc.call('POST', '/v2/storage/tables/in.c-events.clicks/export-async', { body: form, contentType: 'application/x-www-form-urlencoded' });
    expect(started.status).toBe(202);
    const { body, file } = await download(await finished(started.json.url));
    expect(file.name).toBe('in.c-events.clicks.csv');
    expect(parse(body)).toEqual([['page', 'id'], ['/home', '1'], ['/c\nd', '3']]);
  });

  it('exports Parquet, and only rows written since a time (changedSince)', async () => {
    const parquet = await svc.call('POST', '/v2/storage/tables/in.c-events.clicks/export-async', { json: { format: 'parquet' } });
    const { file, body } = await download(await finished(parquet.json.url));
    expect(file.name).toBe('in.c-events.clicks.parquet');
    expect(body.subarray(0, 4).toString()).toBe('PAR1');

    await new Promise((r) => setTimeout(r, 20));
    const since = new Date();
    await new Promise((r) => setTimeout(r, 20));
    await svc.server.services.tables.insertRows('in.c-events.clicks', [['4', 'cy', '/new']]);
    const recent = await svc.call('POST', '/v2/storage/tables/in.c-events.clicks/export-async', { json: { changedSince: since.toISOString(), gzip: false } });
    expect(parse((await download(await finished(recent.json.url))).body)).toEqual([['id', 'user', 'page'], ['4', 'cy', '/new']]);
  });

  it('answers bad exports in the Storage envelope and starts nothing', async () => {
    const missing = await svc.call('POST', '/v2/storage/tables/in.c-events.nope/export-async', { json: {} });
    expect(missing.status).toBe(404);
    expect(missing.json).toMatchObject({ code: 'storage.tables.notFound', status: 'error' });
    const badColumn = await svc.call('POST', '/v2/storage/tables/in.c-events.clicks/export-async', { json: { columns: ['id', 'nope'] } });
    expect(badColumn.status).toBe(400);
    expect(badColumn.json.error).toContain('"nope"');
    const badTime = await svc.call('POST', '/v2/storage/tables/in.c-events.clicks/export-async', { json: { changedSince: 'yesterday-ish' } });
    expect(badTime.status).toBe(400);
    expect(badTime.json.error).toContain('changedSince');
    const forbidden = await svc.call('POST', '/v2/storage/tables/in.c-private.salaries/export-async', { token: reader, json: {} });
    expect(forbidden.status).toBe(403);
    const badId = await svc.call('POST', `/v2/storage/tables/${encodeURIComponent('in.c-events.x"; DROP TABLE t; --')}/export-async`, { json: {} });
    expect(badId.status).toBe(400);
    expect(badId.json.code).toBe('storage.tables.validation');
  });

  it('does not serve a file without a valid signature, nor another token\'s file', async () => {
    const started = await svc.call('POST', '/v2/storage/tables/in.c-events.clicks/export-async', { json: {} });
    const job = await finished(started.json.url);
    const file = await svc.call('GET', `/v2/storage/files/${job.results.file.id}`);
    const url = new URL(file.json.url);
    const tampered = await fetch(`${svc.server.address}${url.pathname}?expires=${url.searchParams.get('expires')}&signature=x${url.searchParams.get('signature')!.slice(1)}`);
    expect(tampered.status).toBe(403);
    expect(((await tampered.json()) as { code: string }).code).toBe('storage.files.signatureInvalid');
    expect((await fetch(`${svc.server.address}${url.pathname}`)).status).toBe(403);
    // The reader did not create this export: neither the job nor the file is visible to it.
    expect((await svc.call('GET', `/v2/storage/files/${job.results.file.id}`, { token: reader })).status).toBe(404);
    expect((await svc.call('GET', new URL(started.json.url).pathname, { token: reader })).status).toBe(404);
  });

  it('runs a read-only query on the tables a token may read', async () => {
    const res = await svc.call('POST', '/v2/storage/sql', {
      token: reader,
      json: { query: 'SELECT "user", count(*) AS clicks FROM "in.c-events"."clicks" GROUP BY "user" ORDER BY "user"' },
    });
    expect(res.status).toBe(200);
    expect(res.json.columns.map((c: { name: string }) => c.name)).toEqual(['user', 'clicks']);
    expect(res.json.rows.slice(0, 2)).toEqual([['ann', '2'], ['bob', '1']]);
    expect(res.json.truncated).toBe(false);
    const limited = await svc.call('POST', '/v2/storage/sql', { json: { query: 'SELECT id FROM "in.c-events".clicks ORDER BY id', limit: 2 } });
    expect(limited.json).toMatchObject({ rows: [['1'], ['2']], rowsCount: 2, truncated: true });
  });

  it('refuses a writing statement (400) and a bucket the token cannot read (403) without running them', async () => {
    const del = await svc.call('POST', '/v2/storage/sql', { json: { query: 'DELETE FROM "in.c-events".clicks' } });
    expect(del.status).toBe(400);
    expect(del.json).toMatchObject({ code: 'storage.sql.notReadOnly', status: 'error' });
    const sneaky = await svc.call('POST', '/v2/storage/sql', { json: { query: 'SELECT 1; DROP TABLE "in.c-events".clicks' } });
    expect(sneaky.status).toBe(400);
    const other = await svc.call('POST', '/v2/storage/sql', { token: reader, json: { query: 'SELECT * FROM "in.c-private".salaries' } });
    expect(other.status).toBe(403);
    expect(other.json.error).toContain('in.c-private');
    const internal = await svc.call('POST', '/v2/storage/sql', { json: { query: 'SELECT * FROM _sluice.imports' } });
    expect(internal.status).toBe(403);
    const empty = await svc.call('POST', '/v2/storage/sql', { json: {} });
    expect(empty.status).toBe(400);
    // Nothing was written or dropped.
    const count = await svc.call('POST', '/v2/storage/sql', { json: { query: 'SELECT count(*) AS n FROM "in.c-events".clicks' } });
    expect(Number(count.json.rows[0][0])).toBeGreaterThanOrEqual(3);
  });

  it('stops a query at its timeout with a clear 400', async () => {
    const slow = kind === 'postgres' ? 'SELECT pg_sleep(3)' : 'SELECT count(*) FROM range(100000000000)';
    const res = await svc.call('POST', '/v2/storage/sql', { json: { query: slow, timeout: 0.3 } });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('storage.sql.timeout');
  });
});
