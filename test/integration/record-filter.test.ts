/**
 * A sink's record filter over HTTP, on DuckDB and PostgreSQL (issue 24, item 4): only the kept
 * records land; the skipped ones are handled (the sink moves past them) and counted in the
 * statistics answer and the metrics; a filter that fails or does not answer a boolean makes
 * the record a mapping failure, which a reprocess writes (or skips) once the filter is fixed;
 * replays apply the filter; a filter that does not compile is a 400 with its position.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { TestService } from '../helpers/service.js';
import { POSTGRES_START_TIMEOUT_MS } from '../helpers/postgres.js';
import { TARGETS, targetServers } from '../helpers/targets.js';
import { metricValue } from '../helpers/prometheus.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '300ms'];

const ERRORS_ONLY = { language: 'jsonnet', content: 'Body("level") == "error"' };
const columns = [{ type: 'path', name: 'id', path: 'id', rawString: true }, { type: 'path', name: 'level', path: 'level', rawString: true }];

async function sink(sourceId: string, sinkId: string, mapping: Record<string, unknown>, importCount: number) {
  const task = await svc.task('POST', `${B()}/sources/${sourceId}/sinks`, {
    json: { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId: `in.c-${sourceId}.${sinkId}`, mapping } },
  });
  expect(task.status).toBe('success');
  const settings = [
    { key: 'storage.level.staging.upload.trigger.interval', value: '1s' },
    { key: 'storage.level.target.import.trigger.count', value: importCount },
  ];
  expect((await svc.task('PATCH', `${B()}/sources/${sourceId}/sinks/${sinkId}/settings`, { json: { settings } })).status).toBe('success');
}

async function post(path: string, body: unknown) {
  const res = await svc.call('POST', path, { token: null, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
}

async function rows(tableId: string, expected: number): Promise<string[][]> {
  return svc.until(`${expected} rows in ${tableId}`, async () => {
    const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=1000`);
    const records = (parse(res.text) as string[][]).slice(1);
    return records.length >= expected ? records : undefined;
  });
}

const statistics = async (sourceId: string, sinkId: string) => (await svc.call('GET', `${B()}/sources/${sourceId}/sinks/${sinkId}/statistics/total`)).json;
const scrape = async () => (await svc.call('GET', '/metrics')).text;

const servers = targetServers();

describe.each(TARGETS)('a sink with a filter on %s', (kind) => {
  beforeAll(async () => {
    svc = await TestService.start({ args: [...FAST, ...(await servers.location(kind)).args] });
  }, POSTGRES_START_TIMEOUT_MS);
  afterAll(async () => {
    await svc.close();
  });

  it('lands only the records it keeps, counts the others as filtered (statistics, metrics), and echoes the filter', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Logs', type: 'http' } });
    await sink('logs', 'errors', { columns, filter: ERRORS_ONLY }, 3);
    await sink('logs', 'everything', { columns }, 6);
    const view = (await svc.call('GET', `${B()}/sources/logs/sinks/errors`)).json;
    expect(view.table.mapping).toEqual({ columns: columns.map((c) => ({ ...c })), filter: ERRORS_ONLY });
    // Without a filter the answer is the reference's: no `filter` key.
    expect((await svc.call('GET', `${B()}/sources/logs/sinks/everything`)).json.table.mapping).not.toHaveProperty('filter');

    const path = await svc.ingestPath('logs');
    const levels = ['error', 'info', 'error', 'debug', 'info', 'error'];
    for (const [i, level] of levels.entries()) await post(path, { id: `e${i + 1}`, level });

    const kept = await rows('in.c-logs.errors', 3);
    expect(kept.map((r) => r[0]).sort()).toEqual(['e1', 'e3', 'e6']);
    expect(kept.every((r) => r[1] === 'error')).toBe(true);
    expect((await rows('in.c-logs.everything', 6))).toHaveLength(6);

    const stats = await svc.until('the statistics count what was filtered', async () => {
      const s = await statistics('logs', 'errors');
      return s.levels.target?.recordsCount === 3 ? s : undefined;
    });
    expect(stats.total.recordsCount).toBe(3);
    expect(stats.filtered).toEqual({ count: 3 });
    expect(stats).not.toHaveProperty('mappingFailures');
    // A sink that filters nothing answers as the reference does.
    expect(await statistics('logs', 'everything')).not.toHaveProperty('filtered');
    // Handled, not failed: nothing is kept, and the sink is not behind its source.
    expect((await svc.call('GET', `${B()}/sources/logs/sinks/errors/failures`)).json.count).toBe(0);
    const metrics = await scrape();
    expect(metricValue(metrics, 'sluice_sink_records_filtered_total', { source: 'logs', sink: 'errors' })).toBe(3);
    expect(metricValue(metrics, 'sluice_sink_records_mapped_total', { source: 'logs', sink: 'errors' })).toBe(3);
    expect(metricValue(metrics, 'sluice_sink_records_failed_total', { source: 'logs', sink: 'errors' })).toBe(0);
    expect(metricValue(metrics, 'sluice_sink_lag_records', { source: 'logs', sink: 'errors' })).toBe(0);

    // The count survives a restart; clearing the statistics starts it again.
    await svc.restart();
    expect((await statistics('logs', 'errors')).filtered).toEqual({ count: 3 });
    expect((await svc.call('DELETE', `${B()}/sources/logs/sinks/errors/statistics/clear`)).status).toBe(200);
    expect(await statistics('logs', 'errors')).not.toHaveProperty('filtered');
  });

  it('keeps a record the filter fails on as a mapping failure with the reason, and writes it on reprocess once the filter is fixed', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Orders', type: 'http' } });
    await sink('orders', 'big', { columns: [{ type: 'path', name: 'id', path: 'id', rawString: true }], filter: { language: 'jsonnet', content: 'if Body("total") > 100 then true else if Body("total") > 10 then false else Body("total")' } }, 1);
    const path = await svc.ingestPath('orders');
    await post(path, { id: 'o1', total: 500 });
    await post(path, { id: 'o2', total: 50 });
    await post(path, { id: 'o3' });
    await post(path, { id: 'o4', total: 5 });
    const failures = await svc.until('two failures', async () => {
      const res = (await svc.call('GET', `${B()}/sources/orders/sinks/big/failures`)).json;
      return res.count === 2 ? res : undefined;
    });
    expect(failures.failures.map((f: { reason: string }) => f.reason).sort()).toEqual([
      'Filter failed: path "total" not found in the body.',
      'Filter returned 5, not true or false.',
    ]);
    expect((await rows('in.c-orders.big', 1)).map((r) => r[0])).toEqual(['o1']);
    const stats = await statistics('orders', 'big');
    expect(stats.filtered).toEqual({ count: 1 });
    expect(stats.mappingFailures).toEqual({ count: 2 });
    expect(metricValue(await scrape(), 'sluice_sink_records_failed_total', { source: 'orders', sink: 'big', reason: 'filter' })).toBe(2);

    // Fixed: a missing total is an order to keep; a small one is skipped.
    const fixed = { columns: [{ type: 'path', name: 'id', path: 'id', rawString: true }], filter: { language: 'jsonnet', content: 'Body("total", 1000) > 100' } };
    expect((await svc.task('PATCH', `${B()}/sources/orders/sinks/big`, { json: { table: { mapping: fixed } } })).status).toBe('success');
    const result = await svc.call('POST', `${B()}/sources/orders/sinks/big/failures/reprocess`);
    expect(result.status).toBe(200);
    expect(result.json).toEqual({ reprocessed: 1, failed: 0, filtered: 1 });
    expect((await rows('in.c-orders.big', 2)).map((r) => r[0]).sort()).toEqual(['o1', 'o3']);
    expect((await svc.call('GET', `${B()}/sources/orders/sinks/big/failures`)).json.count).toBe(0);
    expect((await statistics('orders', 'big')).filtered).toEqual({ count: 2 });
  });

  it('applies the filter to a replay of records that arrived before the sink existed', async () => {
    const since = new Date().toISOString();
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Late', type: 'http' } });
    await sink('late', 'first', { columns }, 3);
    const path = await svc.ingestPath('late');
    for (const [i, level] of ['error', 'info', 'error'].entries()) await post(path, { id: `l${i + 1}`, level });
    await rows('in.c-late.first', 3);
    await sink('late', 'errors', { columns, filter: ERRORS_ONLY }, 2);
    const task = await svc.task('POST', `${B()}/sources/late/sinks/errors/replay`, { json: { since } });
    expect(task.status).toBe('success');
    expect(task.outputs).toMatchObject({ written: 2, failed: 0, filtered: 1, skipped: 0 });
    expect(task.result).toBe('Replayed 3 records: 2 written, 0 failed mapping again, 1 filtered, 0 skipped.');
    expect((await rows('in.c-late.errors', 2)).map((r) => r[0]).sort()).toEqual(['l1', 'l3']);
    expect((await statistics('late', 'errors')).filtered).toEqual({ count: 1 });
    // Handled: a second replay finds nothing left to do.
    expect((await svc.task('POST', `${B()}/sources/late/sinks/errors/replay`, { json: { since } })).outputs).toMatchObject({ written: 0, skipped: 3 });
  });

  it('refuses a filter that does not compile, with its position, and changes nothing', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Strict', type: 'http' } });
    const create = await svc.call('POST', `${B()}/sources/strict/sinks`, {
      json: { sinkId: 'bad', name: 'bad', type: 'table', table: { type: 'keboola', tableId: 'in.c-strict.bad', mapping: { columns, filter: { language: 'jsonnet', content: 'Body("level") ==' } } } },
    });
    expect(create.status).toBe(400);
    expect(create.json).toMatchObject({ error: 'stream.api.badRequest', message: expect.stringMatching(/^Filter is invalid: 1:\d+(-\d+)? .+\.$/) });
    expect((await svc.call('GET', `${B()}/sources/strict/sinks`)).json.sinks).toEqual([]);
    const other = await svc.call('POST', `${B()}/sources/strict/sinks`, {
      json: { sinkId: 'bad', name: 'bad', type: 'table', table: { type: 'keboola', tableId: 'in.c-strict.bad', mapping: { columns, filter: { language: 'python', content: 'True' } } } },
    });
    expect(other.status).toBe(400);

    await sink('strict', 'good', { columns, filter: ERRORS_ONLY }, 1);
    const update = await svc.call('PATCH', `${B()}/sources/strict/sinks/good`, { json: { table: { mapping: { columns, filter: { language: 'jsonnet', content: 'Nope' } } } } });
    expect(update.status).toBe(400);
    expect(update.json.message).toBe('Filter is invalid: 1:1-5 Unknown variable: Nope.');
    expect((await svc.call('GET', `${B()}/sources/strict/sinks/good`)).json.table.mapping.filter).toEqual(ERRORS_ONLY);
    // A mapping without a filter removes it.
    expect((await svc.task('PATCH', `${B()}/sources/strict/sinks/good`, { json: { table: { mapping: { columns } } } })).status).toBe('success');
    expect((await svc.call('GET', `${B()}/sources/strict/sinks/good`)).json.table.mapping).not.toHaveProperty('filter');
  });

  it('the test endpoint shows a sample the filter skips (no row, filtered) and answers 422 when the filter fails', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Preview', type: 'http' } });
    await sink('preview', 'errors', { columns, filter: ERRORS_ONLY }, 1);
    await sink('preview', 'all', { columns: [{ type: 'body', name: 'body' }] }, 1);
    const test = (body: unknown) => svc.call('POST', `${B()}/sources/preview/test`, { body: JSON.stringify(body) });
    const kept = await test({ id: 'a', level: 'error' });
    expect(kept.status).toBe(200);
    const tables = (r: typeof kept) => Object.fromEntries(r.json.tables.map((t: { sinkId: string }) => [t.sinkId, t]));
    expect(tables(kept).errors).toEqual({ sinkId: 'errors', tableId: 'in.c-preview.errors', rows: [{ columns: [{ name: 'id', value: 'a' }, { name: 'level', value: 'error' }] }] });
    const skipped = await test({ id: 'b', level: 'info' });
    expect(tables(skipped).errors).toEqual({ sinkId: 'errors', tableId: 'in.c-preview.errors', rows: [], filtered: true });
    expect(tables(skipped).all).not.toHaveProperty('filtered');
    const failing = await test({ id: 'c' });
    expect(failing.status).toBe(422);
    expect(failing.json.message).toBe('Filter failed: path "level" not found in the body.');
  });
});
