import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { TestService } from '../helpers/service.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '300ms'];

async function sink(sourceId: string, sinkId: string, columns: unknown[]) {
  const tableId = `in.c-${sourceId}.${sinkId}`;
  const task = await svc.task('POST', `${B()}/sources/${sourceId}/sinks`, { json: { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId, mapping: { columns } } } });
  expect(task.status).toBe('success');
  const settings = [
    { key: 'storage.level.staging.upload.trigger.interval', value: '1s' },
    { key: 'storage.level.target.import.trigger.count', value: 1 },
  ];
  expect((await svc.task('PATCH', `${B()}/sources/${sourceId}/sinks/${sinkId}/settings`, { json: { settings } })).status).toBe('success');
  return tableId;
}

async function post(path: string, body: unknown) {
  const res = await svc.call('POST', path, { token: null, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
}

async function tableRows(tableId: string): Promise<string[][]> {
  const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=1000`);
  return res.status === 200 ? (parse(res.text) as string[][]).slice(1) : [];
}

async function rows(tableId: string, expected: number): Promise<string[]> {
  const found = await svc.until(`${expected} rows in ${tableId}`, async () => {
    const r = await tableRows(tableId);
    return r.length >= expected ? r : undefined;
  });
  return found.map((r) => r[0]).sort();
}

/** Waits until the sink has written `n` records in all (statistics), so that nothing is in flight. */
async function written(sourceId: string, sinkId: string, n: number) {
  await svc.until(`${n} records written by ${sinkId}`, async () => {
    const s = (await svc.call('GET', `${B()}/sources/${sourceId}/sinks/${sinkId}/statistics/total`)).json;
    return s.total?.recordsCount === n ? true : undefined;
  });
}

async function replay(sourceId: string, sinkId: string, body: unknown) {
  const task = await svc.task('POST', `${B()}/sources/${sourceId}/sinks/${sinkId}/replay`, { json: body });
  expect(task).toMatchObject({ type: 'sink.replay', status: 'success' });
  return task;
}

beforeAll(async () => {
  svc = await TestService.start({ args: FAST });
});
afterAll(async () => {
  await svc.close();
});

describe('replay of a sink from the event log', () => {
  it('writes the records that failed mapping once the mapping is fixed, and nothing twice', async () => {
    const since = new Date().toISOString();
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Users', type: 'http' } });
    const table = await sink('users', 'u', [{ type: 'path', name: 'user', path: 'user.id', rawString: true }]);
    const path = await svc.ingestPath('users');
    await post(path, { user: { id: 'a' } });
    await post(path, { account: { id: 'b' } });
    await post(path, { account: { id: 'c' } });
    await svc.until('two failures', async () => ((await svc.call('GET', `${B()}/sources/users/sinks/u/failures`)).json.count === 2 ? true : undefined));
    expect(await rows(table, 1)).toEqual(['a']);

    const fixed = [{ type: 'template', name: 'user', rawString: true, template: { language: 'jsonnet', content: 'Body("user.id", Body("account.id", ""))' } }];
    expect((await svc.task('PATCH', `${B()}/sources/users/sinks/u`, { json: { table: { mapping: { columns: fixed } } } })).status).toBe('success');
    const task = await replay('users', 'u', { since, records: 'failed' });
    expect(task.outputs).toMatchObject({ written: 2, failed: 0, skipped: 1, fromOffset: 1, toOffset: 3, scanned: 3, total: 3 });
    expect(task.result).toBe('Replayed 2 records: 2 written, 0 failed mapping again, 1 skipped.');
    expect(await rows(table, 3)).toEqual(['a', 'b', 'c']);
    expect((await svc.call('GET', `${B()}/sources/users/sinks/u/failures`)).json.failures).toEqual([]);

    // A second replay finds nothing left to do.
    expect((await replay('users', 'u', { since })).outputs).toMatchObject({ written: 0, skipped: 3 });
    await written('users', 'u', 3);
  });

  it('gives a sink the records that arrived before it existed, once; fullRemap writes them all again', async () => {
    const since = new Date().toISOString();
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Orders', type: 'http' } });
    await sink('orders', 'first', [{ type: 'path', name: 'n', path: 'n' }]);
    const path = await svc.ingestPath('orders');
    for (const n of [1, 2, 3]) await post(path, { n });
    await written('orders', 'first', 3);

    const later = await sink('orders', 'later', [{ type: 'path', name: 'n', path: 'n' }]);
    await post(path, { n: 4 });
    expect(await rows(later, 1)).toEqual(['4']);

    const task = await replay('orders', 'later', { since });
    expect(task.outputs).toMatchObject({ written: 3, failed: 0, skipped: 1, fromOffset: 1, toOffset: 4 });
    expect(await rows(later, 4)).toEqual(['1', '2', '3', '4']);

    expect((await replay('orders', 'later', { since, records: 'all' })).outputs).toMatchObject({ written: 0, skipped: 4 });
    await written('orders', 'later', 4);

    const full = await replay('orders', 'later', { since, fullRemap: true });
    expect(full.outputs).toMatchObject({ written: 4, skipped: 0 });
    expect(await rows(later, 8)).toEqual(['1', '1', '2', '2', '3', '3', '4', '4']);
  });

  it('replays from a point in time: records received before it are not touched', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Clock', type: 'http' } });
    await sink('clock', 'a', [{ type: 'path', name: 'n', path: 'n' }]);
    const path = await svc.ingestPath('clock');
    await post(path, { n: 1 });
    await post(path, { n: 2 });
    await written('clock', 'a', 2);
    await new Promise((r) => setTimeout(r, 20));
    const since = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 20));
    await post(path, { n: 3 });
    await written('clock', 'a', 3);
    const later = await sink('clock', 'b', [{ type: 'path', name: 'n', path: 'n' }]);
    const task = await replay('clock', 'b', { since });
    expect(task.outputs).toMatchObject({ fromOffset: 3, toOffset: 3, written: 1 });
    expect(await rows(later, 1)).toEqual(['3']);
    // Nothing after the end of the log.
    expect((await replay('clock', 'b', { since: new Date(Date.now() + 60_000).toISOString() })).outputs).toMatchObject({ fromOffset: 0, toOffset: 0, written: 0 });
  });

  it('refuses bad requests in the Stream envelope and changes nothing', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Bad', type: 'http' } });
    await sink('bad', 's', [{ type: 'body', name: 'body' }]);
    const url = `${B()}/sources/bad/sinks/s/replay`;
    const noSince = await svc.call('POST', url, { json: {} });
    expect(noSince.status).toBe(400);
    expect(noSince.json.error).toBe('stream.api.missingField');
    const badSince = await svc.call('POST', url, { json: { since: 'yesterday' } });
    expect(badSince.status).toBe(400);
    expect(badSince.json).toMatchObject({ error: 'stream.api.invalidSince', message: expect.stringContaining('RFC 3339') });
    expect((await svc.call('POST', url, { json: { since: '2026-01-01T00:00:00Z', records: 'some' } })).status).toBe(400);
    expect((await svc.call('POST', `${B()}/sources/bad/sinks/nope/replay`, { json: { since: '2026-01-01T00:00:00Z' } })).status).toBe(404);
    await svc.task('PUT', `${B()}/sources/bad/sinks/s/disable`);
    expect((await svc.call('POST', url, { json: { since: '2026-01-01T00:00:00Z' } })).status).toBe(409);
  });
});
