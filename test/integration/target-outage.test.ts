/**
 * The PostgreSQL target goes away and comes back while events stream: ingestion keeps
 * accepting, the management calls that need the target answer 503 with the reason in their
 * envelope, imports fail with the reason in failedFiles and are retried with the backoff while
 * their staged files wait, and once the database is back every acknowledged event is in the
 * table once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { TestService } from '../helpers/service.js';
import { POSTGRES_START_TIMEOUT_MS, startTestPostgres, type TestPostgres } from '../helpers/postgres.js';

let pg: TestPostgres;
let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;

beforeAll(async () => {
  pg = await startTestPostgres();
  const url = await pg.createDatabase('outage');
  svc = await TestService.start({ args: ['--target', url, '--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '300ms'] });
}, POSTGRES_START_TIMEOUT_MS);

afterAll(async () => {
  await svc?.close();
  await pg?.stop();
});

async function send(path: string, n: number): Promise<void> {
  const res = await svc.call('POST', path, { token: null, body: JSON.stringify({ n: String(n) }) });
  expect(res.status).toBe(200);
}

async function tableIds(): Promise<string[]> {
  const res = await svc.call('GET', '/v2/storage/tables/in.c-outage.rows/data-preview?limit=1000');
  return res.status === 200 ? (parse(res.text) as string[][]).slice(1).map((r) => r[0]) : [];
}

describe('the PostgreSQL target down and back', () => {
  it('keeps ingesting, answers 503 where the target is needed, and imports everything once it is back', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Outage', type: 'http' } });
    const created = await svc.task('POST', `${B()}/sources/outage/sinks`, {
      json: { sinkId: 'rows', name: 'rows', type: 'table', table: { type: 'keboola', tableId: 'in.c-outage.rows', mapping: { columns: [{ type: 'path', name: 'n', path: 'n', rawString: true }] } } },
    });
    expect(created.status).toBe('success');
    await svc.task('PATCH', `${B()}/sources/outage/sinks/rows/settings`, {
      json: { settings: [{ key: 'storage.level.staging.upload.trigger.interval', value: '1s' }, { key: 'storage.level.target.import.trigger.count', value: 1 }] },
    });
    const path = await svc.ingestPath('outage');
    for (let n = 1; n <= 5; n++) await send(path, n);
    await svc.until('5 rows', async () => ((await tableIds()).length === 5 ? true : undefined));

    await pg.kill();

    // Calls that need the target: 503 with the reason, each in its API's envelope.
    const tables = await svc.call('GET', '/v2/storage/tables');
    expect(tables.status).toBe(503);
    expect(tables.json).toMatchObject({ code: 'targetUnavailable', status: 'error' });
    expect(tables.json.error).toMatch(/cannot be reached.*PostgreSQL at 127\.0\.0\.1/);
    const sql = await svc.call('POST', '/v2/storage/sql', { json: { query: 'SELECT 1' } });
    expect(sql.status).toBe(503);
    const sink = await svc.task('POST', `${B()}/sources/outage/sinks`, {
      json: { sinkId: 'more', name: 'more', type: 'table', table: { type: 'keboola', tableId: 'in.c-outage.more', mapping: { columns: [{ type: 'body', name: 'body' }] } } },
    });
    expect(sink.status).toBe('error');
    expect(sink.error).toMatch(/not reachable/);
    // What does not need the target goes on: definitions, statistics, and ingestion.
    expect((await svc.call('GET', `${B()}/sources/outage/sinks/rows`)).status).toBe(200);
    for (let n = 6; n <= 10; n++) await send(path, n);

    // The imports fail, say why, and wait with their staged files.
    const failed = await svc.until('a failed import', async () => {
      const files = (await svc.call('GET', `${B()}/sources/outage/sinks/rows/statistics/files?failedFiles=true`)).json.files;
      return files.length > 0 ? files[0] : undefined;
    });
    expect(failed.retryReason).toMatch(/not reachable/);
    expect(failed.retryAttempt).toBeGreaterThanOrEqual(1);

    await pg.restart();
    const ids = await svc.until('10 rows', async () => {
      const now = await tableIds();
      return now.length >= 10 ? now : undefined;
    }, 30_000);
    expect(ids.sort((a, b) => Number(a) - Number(b))).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
    expect((await svc.call('GET', '/v2/storage/tables')).status).toBe(200);
  }, 90_000);
});
