/**
 * A sink whose writes keep failing does not block its source (actors/sink-health.ts): a real
 * service with two sinks of one source, one of which cannot write its local slices (a plain
 * file stands where its slice directory must be created: the opening fails with ENOTDIR, also
 * as root). After its bounded retries it is failing, in its statistics and in the metrics, while
 * the other sink's rows keep arriving; once the file is gone it catches up from its own position
 * and has every record exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { TestService } from '../helpers/service.js';
import { hasMetric, metricValue } from '../helpers/prometheus.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
// Sink retries: 100, 200, 400, 800 ms (failing after 1.5 s), then tried again after 3 s, 6 s, ... (at most 30 s).
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '300ms', '--sink-retry-base', '100ms'];
const ID = [{ type: 'path', name: 'id', path: 'id', rawString: true }];

async function sink(sinkId: string) {
  const task = await svc.task('POST', `${B()}/sources/shop/sinks`, { json: { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId: `in.c-shop.${sinkId}`, mapping: { columns: ID } } } });
  expect(task.status).toBe('success');
  const settings = [
    { key: 'storage.level.staging.upload.trigger.interval', value: '1s' },
    { key: 'storage.level.target.import.trigger.count', value: 1 },
  ];
  expect((await svc.task('PATCH', `${B()}/sources/shop/sinks/${sinkId}/settings`, { json: { settings } })).status).toBe('success');
}

async function ids(sinkId: string): Promise<string[]> {
  const res = await svc.call('GET', `/v2/storage/tables/in.c-shop.${sinkId}/data-preview?limit=1000`);
  return (parse(res.text) as string[][]).slice(1).map((r) => r[0]).sort();
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `e${String(from + i).padStart(2, '0')}`).sort();
const stats = async (sinkId: string) => (await svc.call('GET', `${B()}/sources/shop/sinks/${sinkId}/statistics/total`)).json;
const scrape = async () => (await svc.call('GET', '/metrics')).text;

describe('a sink whose writes keep failing', () => {
  beforeAll(async () => {
    svc = await TestService.start({ args: FAST });
  });
  afterAll(async () => {
    await svc.close();
  });

  it('is marked failing with its reason while the other sink goes on, and catches up exactly once when its writes work again', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Shop', type: 'http' } });
    await sink('good');
    // The fault: a file where the failing sink's slice directory is to be created.
    const obstacle = join(svc.dataDir, 'local', String(svc.branchId), 'shop', 'bad');
    mkdirSync(join(obstacle, '..'), { recursive: true });
    writeFileSync(obstacle, 'not a directory');
    await sink('bad');
    const path = await svc.ingestPath('shop');
    const post = async (from: number, to: number) => {
      for (const id of range(from, to)) {
        const res = await svc.call('POST', path, { token: null, body: JSON.stringify({ id }) });
        expect(res.status).toBe(200);
      }
    };

    await post(1, 5);
    await svc.until('the good sink\'s rows', async () => ((await ids('good')).length >= 5 ? true : undefined));
    const failing = await svc.until('the bad sink failing', async () => (await stats('bad')).failing);
    expect(failing.reason).toMatch(/ENOTDIR|not a directory/);
    expect(Date.parse(failing.since)).not.toBeNaN();
    expect(Date.parse(failing.retryAfter)).not.toBeNaN();
    // The field is Sluice's addition, only while failing: the other sink's answer is the reference's.
    expect((await stats('good')).failing).toBeUndefined();
    const metrics = await scrape();
    const labels = (sink: string) => ({ source: 'shop', sink, branch: String(svc.branchId) });
    expect(metricValue(metrics, 'sluice_sink_failing', labels('bad'))).toBe(1);
    expect(hasMetric(metrics, 'sluice_sink_failing', labels('good'))).toBe(true);
    expect(metricValue(metrics, 'sluice_sink_failing', labels('good'))).toBe(0);
    expect(metricValue(metrics, 'sluice_sink_give_ups_total', labels('bad'))).toBe(1);

    // The source is not blocked: the good sink takes the next records at once (the router does not wait for the failing one).
    await post(6, 10);
    expect(await svc.until('the good sink\'s next rows', async () => {
      const got = await ids('good');
      return got.length >= 10 ? got : undefined;
    })).toEqual(range(1, 10));
    expect(await ids('bad')).toEqual([]);
    expect((await stats('bad')).failing).toBeDefined();

    // The fault is removed: at its next retry the failing sink catches up from its own position.
    rmSync(obstacle);
    const caughtUp = await svc.until('the bad sink caught up', async () => {
      const got = await ids('bad');
      return got.length >= 10 ? got : undefined;
    }, 60_000);
    expect(caughtUp).toEqual(range(1, 10));
    await svc.until('the bad sink no longer failing', async () => ((await stats('bad')).failing === undefined ? true : undefined));
    expect(metricValue(await scrape(), 'sluice_sink_failing', labels('bad'))).toBe(0);

    // Both in the group again: new records reach both, each once.
    await post(11, 12);
    for (const sinkId of ['good', 'bad']) {
      expect(await svc.until(`${sinkId} has every record`, async () => {
        const got = await ids(sinkId);
        return got.length >= 12 ? got : undefined;
      })).toEqual(range(1, 12));
    }
    expect((await stats('bad')).total.recordsCount).toBe(12);
  }, 120_000);
});
