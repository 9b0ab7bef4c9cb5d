import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { TestService } from '../helpers/service.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';
import { TARGETS, targetServers } from '../helpers/targets.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '300ms'];

/** Triggers that fire fast: upload after 1 s at most, import when `count` records are staged. */
const settings = (count: number) => ({
  settings: [
    { key: 'storage.level.staging.upload.trigger.interval', value: '1s' },
    { key: 'storage.level.target.import.trigger.count', value: count },
  ],
});

async function sink(sourceId: string, sinkId: string, tableId: string, columns: unknown[], importCount = 1) {
  const task = await svc.task('POST', `${B()}/sources/${sourceId}/sinks`, { json: { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId, mapping: { columns } } } });
  expect(task.status).toBe('success');
  expect((await svc.task('PATCH', `${B()}/sources/${sourceId}/sinks/${sinkId}/settings`, { json: settings(importCount) })).status).toBe('success');
}

async function post(path: string, body: unknown) {
  const res = await svc.call('POST', path, { token: null, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  expect(res.text).toBe('OK');
}

async function rows(tableId: string, expected: number): Promise<string[][]> {
  return svc.until(`${expected} rows in ${tableId}`, async () => {
    const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=1000`);
    const records = (parse(res.text) as string[][]).slice(1);
    return records.length >= expected ? records : undefined;
  });
}

const servers = targetServers();

describe.each(TARGETS)('the record path on %s', (kind) => {
  beforeAll(async () => {
    svc = await TestService.start({ args: [...FAST, ...(await servers.location(kind)).args] });
  }, POSTGRES_START_TIMEOUT_MS);
  afterAll(async () => {
    await svc.close();
  });

  it('lands every event once in the table, with real statistics', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Shop', type: 'http' } });
    await sink('shop', 'orders', 'in.c-shop.orders', [{ type: 'path', name: 'id', path: 'id', rawString: true }, { type: 'path', name: 'total', path: 'total' }], 5);
    const path = await svc.ingestPath('shop');
    for (let i = 1; i <= 5; i++) await post(path, { id: `o${i}`, total: i * 10 });
    const table = await rows('in.c-shop.orders', 5);
    expect(table.map((r) => r[0]).sort()).toEqual(['o1', 'o2', 'o3', 'o4', 'o5']);
    expect(table.find((r) => r[0] === 'o3')![1]).toBe('30');
    const stats = (await svc.call('GET', `${B()}/sources/shop/sinks/orders/statistics/total`)).json;
    expect(stats.total.recordsCount).toBe(5);
    expect(stats.levels.target.recordsCount).toBe(5);
    const files = (await svc.call('GET', `${B()}/sources/shop/sinks/orders/statistics/files`)).json.files;
    expect(files[0]).toMatchObject({ state: 'imported' });
  });

  it('answers 202 with sync.wait=false and still lands the event', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Fast', type: 'http' } });
    await sink('fast', 'f', 'in.c-fast.f', [{ type: 'body', name: 'body' }]);
    await svc.task('PATCH', `${B()}/sources/fast/sinks/f/settings`, { json: { settings: [{ key: 'storage.level.local.encoding.sync.wait', value: false }] } });
    const res = await svc.call('POST', await svc.ingestPath('fast'), { token: null, body: '{"quick":true}' });
    expect(res.status).toBe(202);
    expect(res.text).toBe('OK');
    expect((await rows('in.c-fast.f', 1))[0][0]).toBe('{"quick":true}');
  });

  it('keeps events of a source without sinks and delivers them to the first sink', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Early', type: 'http' } });
    const path = await svc.ingestPath('early');
    const verbose = await svc.call('POST', `${path}?verbose=true`, { token: null, body: '{"n":1}' });
    expect(verbose.status).toBe(200);
    expect(verbose.json.message).toMatch(/kept/);
    await post(path, { n: 2 });
    await sink('early', 'late', 'in.c-early.late', [{ type: 'path', name: 'n', path: 'n' }], 2);
    expect((await rows('in.c-early.late', 2)).map((r) => r[0]).sort()).toEqual(['1', '2']);
  });

  it('keeps records a sink cannot map, shows them, and writes them after the mapping is fixed', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Strict', type: 'http' } });
    await sink('strict', 's', 'in.c-strict.s', [{ type: 'path', name: 'user', path: 'user.id', rawString: true }], 1);
    const path = await svc.ingestPath('strict');
    await post(path, { user: { id: 'a' } });
    await post(path, { account: { id: 'b' } });
    await post(path, { account: { id: 'c' } });
    const failures = await svc.until('two failures', async () => {
      const res = (await svc.call('GET', `${B()}/sources/strict/sinks/s/failures`)).json;
      return res.count === 2 ? res : undefined;
    });
    expect(failures.failures[0]).toMatchObject({ reason: 'Invalid value for column "user": path "user.id" not found in the body.' });
    expect(JSON.parse(failures.failures[0].record.body)).toEqual({ account: { id: 'c' } });

    // Fix the mapping: read account.id when user.id is missing.
    const fixed = [{ type: 'template', name: 'user', rawString: true, template: { language: 'jsonnet', content: 'Body("user.id", Body("account.id", ""))' } }];
    expect((await svc.task('PATCH', `${B()}/sources/strict/sinks/s`, { json: { table: { mapping: { columns: fixed } } } })).status).toBe('success');
    const result = await svc.call('POST', `${B()}/sources/strict/sinks/s/failures/reprocess`);
    expect(result.status).toBe(200);
    expect(result.json).toEqual({ reprocessed: 2, failed: 0 });
    expect((await rows('in.c-strict.s', 3)).map((r) => r[0]).sort()).toEqual(['a', 'b', 'c']);
    expect((await svc.call('GET', `${B()}/sources/strict/sinks/s/failures`)).json.failures).toEqual([]);
  });

  it('imports waiting data at once when a sink is disabled', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Pause', type: 'http' } });
    await sink('pause', 'p', 'in.c-pause.p', [{ type: 'path', name: 'n', path: 'n' }], 1000);
    const path = await svc.ingestPath('pause');
    await post(path, { n: 1 });
    await svc.until('record written', async () => {
      const s = (await svc.call('GET', `${B()}/sources/pause/sinks/p/statistics/total`)).json;
      return s.total.recordsCount === 1 ? true : undefined;
    });
    await svc.task('PUT', `${B()}/sources/pause/sinks/p/disable`);
    expect((await rows('in.c-pause.p', 1))[0][0]).toBe('1');
  });

  it('rotates the file when the trigger settings change, so waiting data is imported now', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Tune', type: 'http' } });
    await sink('tune', 't', 'in.c-tune.t', [{ type: 'path', name: 'n', path: 'n' }], 1000);
    const path = await svc.ingestPath('tune');
    await post(path, { n: 7 });
    await svc.until('record written', async () => {
      const s = (await svc.call('GET', `${B()}/sources/tune/sinks/t/statistics/total`)).json;
      return s.total.recordsCount === 1 ? true : undefined;
    });
    await svc.task('PATCH', `${B()}/sources/tune/sinks/t/settings`, { json: { settings: [{ key: 'storage.level.target.import.trigger.count', value: 999 }] } });
    expect((await rows('in.c-tune.t', 1))[0][0]).toBe('7');
  });

  it('rotates the file when the source\'s settings change too', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Tune Source', type: 'http' } });
    await sink('tune-source', 't', 'in.c-tunesrc.t', [{ type: 'path', name: 'n', path: 'n' }], 1000);
    await post(await svc.ingestPath('tune-source'), { n: 8 });
    await svc.until('record written', async () => {
      const s = (await svc.call('GET', `${B()}/sources/tune-source/sinks/t/statistics/total`)).json;
      return s.total.recordsCount === 1 ? true : undefined;
    });
    await svc.task('PATCH', `${B()}/sources/tune-source/settings`, { json: { settings: [{ key: 'storage.level.staging.upload.trigger.count', value: 5 }] } });
    expect((await rows('in.c-tunesrc.t', 1))[0][0]).toBe('8');
  });

  it('retries a failed import, shows it in failedFiles, and imports once the table is fixed', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Drift', type: 'http' } });
    await sink('drift', 'd', 'in.c-drift.d', [{ type: 'path', name: 'n', path: 'n' }], 1);
    const tables = svc.server.services.tables;
    // Someone changes the table behind the sink's back.
    await tables.dropTable('in.c-drift.d');
    await tables.ensureTable('in.c-drift.d', [{ name: 'other' }], { metadata: {} });
    await post(await svc.ingestPath('drift'), { n: 1 });
    const failed = await svc.until('a failed file', async () => {
      const files = (await svc.call('GET', `${B()}/sources/drift/sinks/d/statistics/files?failedFiles=true`)).json.files;
      return files.length > 0 ? files[0] : undefined;
    });
    expect(failed.retryAttempt).toBeGreaterThanOrEqual(1);
    expect(failed.retryReason).toMatch(/column/i);
    expect(failed.retryAfter).toBeDefined();
    // Fix the table: the staged data was kept, the next retry imports it.
    await tables.dropTable('in.c-drift.d');
    await tables.ensureTable('in.c-drift.d', [{ name: 'n' }], { metadata: {} });
    expect((await rows('in.c-drift.d', 1))[0][0]).toBe('1');
    expect((await svc.call('GET', `${B()}/sources/drift/sinks/d/statistics/files?failedFiles=true`)).json.files).toEqual([]);
  });

  it('purges a cascade-deleted source\'s data, so a new source of the same id starts empty', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Gone', type: 'http' } });
    await sink('gone', 'g', 'in.c-gone.g', [{ type: 'path', name: 'n', path: 'n' }], 1000);
    await post(await svc.ingestPath('gone'), { n: 1 });
    await svc.until('record written', async () => {
      const st = (await svc.call('GET', `${B()}/sources/gone/sinks/g/statistics/total`)).json;
      return st.total.recordsCount === 1 ? true : undefined;
    });
    expect(existsSync(join(svc.dataDir, 'local', String(svc.branchId), 'gone', 'g'))).toBe(true);
    await svc.task('DELETE', `${B()}/sources/gone?cascade=true`);
    await svc.until('local data removed', async () => (existsSync(join(svc.dataDir, 'local', String(svc.branchId), 'gone', 'g')) ? undefined : true));

    await svc.task('POST', `${B()}/sources`, { json: { name: 'Gone', type: 'http' } });
    await sink('gone', 'g', 'in.c-gone.g', [{ type: 'path', name: 'n', path: 'n' }], 1);
    expect((await svc.call('GET', `${B()}/sources/gone/sinks/g/statistics/total`)).json.total.recordsCount).toBe(0);
    await post(await svc.ingestPath('gone'), { n: 2 });
    const table = await rows('in.c-gone.g', 1);
    expect(table).toEqual([['2']]);
  });
});
