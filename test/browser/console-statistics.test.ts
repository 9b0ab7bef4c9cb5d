/**
 * A sink's statistics and mapping failures in the console: live cards that reach the target
 * level, charts that gain points with an accessible summary, a failure listed with its reason
 * and raw body, Reprocess after the mapping is fixed, a replay task followed to its result,
 * Clear statistics, a read-only token without write buttons, a phone's width, a server
 * that protects /metrics (the lag chart hidden, the session kept), and files kept from stored
 * state without statistics ("no figures yet").
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { seedStoredFiles } from '../helpers/stored-files.js';
import { launchBrowser, openPage, screenshot, signIn } from './harness.js';
import { parsePrometheus, sinkLag } from '../../src/console/pages/sink-statistics-metrics.js';

const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '300ms', '--statistics-history-interval', '500ms'];
const WAIT = { timeout: 20_000 };

let svc: TestService;
let browser: Browser;
let ingest: string;
const B = '/v1/branches/default';
const STATS = '#/sources/shop/sinks/events/statistics';
const FAILURES = '#/sources/shop/sinks/events/failures';

async function createSink(service: TestService, sourceId: string, sinkId: string, tableId: string): Promise<void> {
  expect((await service.task('POST', `${B}/sources`, { json: { sourceId, name: sourceId, type: 'http' } })).status).toBe('success');
  const columns = [{ type: 'path', name: 'user', path: 'user.id', rawString: true }];
  const created = await service.task('POST', `${B}/sources/${sourceId}/sinks`, {
    json: { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId, mapping: { columns } } },
  });
  expect(created.status).toBe('success');
  const settings = [
    { key: 'storage.level.staging.upload.trigger.interval', value: '1s' },
    { key: 'storage.level.target.import.trigger.count', value: 1 },
  ];
  expect((await service.task('PATCH', `${B}/sources/${sourceId}/sinks/${sinkId}/settings`, { json: { settings } })).status).toBe('success');
}

async function send(body: unknown): Promise<void> {
  const res = await fetch(svc.server.address + ingest, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
}

/** The card of a level (a group named by its label). */
const card = (page: Page, label: RegExp) => page.getByRole('group', { name: label });

/** Waits until the first chart's summary says it has at least `n` points. */
async function chartPoints(page: Page, n: number): Promise<void> {
  const summary = page.locator('figure.chart .chart-summary').first();
  const points = async () => Number(/\((\d+) points?\)/.exec((await summary.textContent()) ?? '')?.[1] ?? 0);
  await expect.poll(points, { timeout: WAIT.timeout, interval: 250 }).toBeGreaterThanOrEqual(n);
}

beforeAll(async () => {
  svc = await TestService.start({ args: FAST });
  browser = await launchBrowser();
  await createSink(svc, 'shop', 'events', 'in.c-shop.events');
  ingest = await svc.ingestPath('shop');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('the Prometheus text parser of the statistics page', () => {
  it('reads the lag of one sink: records summed, seconds the largest', () => {
    const text = [
      '# HELP sluice_sink_lag_records Records not yet mapped.',
      '# TYPE sluice_sink_lag_records gauge',
      'sluice_sink_lag_records{source="shop",sink="events"} 7',
      'sluice_sink_lag_records{source="shop",sink="other"} 100',
      'sluice_sink_lag_seconds{source="shop",sink="events"} 2.5',
      'sluice_sink_lag_seconds{sink="events",source="shop",extra="a \\"quoted\\" value"} 4 1700000000000',
      'process_cpu_seconds_total 1.2e3',
      'sluice_build_info{version="0.1.0"} +Inf',
      'not a sample line at all {',
    ].join('\n');
    const samples = parsePrometheus(text);
    expect(samples.find((s) => s.name === 'process_cpu_seconds_total')?.value).toBe(1200);
    expect(samples.find((s) => s.name === 'sluice_build_info')?.value).toBe(Infinity);
    expect(samples.find((s) => s.labels.extra !== undefined)?.labels.extra).toBe('a "quoted" value');
    expect(sinkLag(text, 'shop', 'events')).toEqual({ records: 7, seconds: 4 });
    expect(sinkLag(text, 'shop', 'missing')).toBeUndefined();
  });
});

describe('a sink\'s statistics and mapping failures in the console', () => {
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    ({ page, errors } = await openPage(browser));
    page.on('dialog', (dialog) => void dialog.accept());
    await signIn(page, svc.server.address, MASTER_TOKEN);
  }, 30_000);

  afterAll(async () => {
    await page?.context().close();
  });

  it('shows the levels live, the files, and charts that gain points', async () => {
    await page.goto(`${svc.server.address}/console/${STATS}`);
    await page.getByRole('heading', { name: 'Statistics', exact: true }).waitFor(WAIT);
    await card(page, /^Target/).waitFor(WAIT);
    for (const id of ['ann', 'bob', 'cyd']) await send({ user: { id } });

    await card(page, /^Target/).filter({ hasText: '3 records' }).waitFor(WAIT);
    await card(page, /^Received/).filter({ hasText: '3 records' }).waitFor(WAIT);
    expect(await card(page, /^Mapping failures/).textContent()).toContain('0 records');
    // The files table lists the imported files with their record counts.
    await page.getByRole('table', { name: 'Files' }).getByText('imported').first().waitFor(WAIT);
    expect(await page.getByRole('table', { name: 'Failed imports' }).count()).toBe(0);

    // Both charts are drawn (uPlot canvases) and their summaries speak the latest numbers.
    expect(await page.locator('figure.chart canvas').count()).toBe(2);
    expect(await page.getByRole('img', { name: /Records received, imported and failed/ }).count()).toBe(1);
    await page.getByText(/points?\): Received 3, Imported 3, Failed 0\./).waitFor(WAIT);
    await page.getByText(/points?\): Lag \(records\) 0, Lag \(seconds\) 0 s\./).waitFor(WAIT);
    await chartPoints(page, 4);
    // Rates beside the chart: a number per second once there are two polls.
    expect(await page.getByRole('complementary', { name: 'Rates' }).textContent()).toMatch(/Received[\d.,]+\/s/);
    await screenshot(page, 'statistics');
    expect(errors).toEqual([]);
  }, 60_000);

  it('starts a new visit with the server\'s history of the sink, not an empty chart', async () => {
    const history = await svc.call('GET', `/v1/branches/${svc.branchId}/sources/shop/sinks/events/statistics/history`);
    expect(history.json.intervalSeconds).toBe(0.5);
    const points = history.json.points as { received: number }[];
    expect(points.length).toBeGreaterThanOrEqual(6);
    expect(points.at(-1)!.received).toBe(3);
    const fresh = await openPage(browser);
    await signIn(fresh.page, svc.server.address, MASTER_TOKEN);
    await fresh.page.goto(`${svc.server.address}/console/${STATS}`);
    await chartPoints(fresh.page, 1);
    // Within 4 s of the first point: a poll every 2.5 s makes at most three of them, the history all.
    const summary = fresh.page.locator('figure.chart .chart-summary').first();
    const count = async () => Number(/\((\d+) points?\)/.exec((await summary.textContent()) ?? '')?.[1] ?? 0);
    await expect.poll(count, { timeout: 4000, interval: 100 }).toBeGreaterThanOrEqual(points.length);
    expect(fresh.errors).toEqual([]);
    await fresh.page.context().close();
  }, 60_000);

  it('lists a record the mapping cannot take, with its reason and raw body', async () => {
    await send({ account: { id: 'dan' } });
    await card(page, /^Mapping failures/).filter({ hasText: '1 record' }).waitFor(WAIT);
    await page.getByText(/points?\): Received 3, Imported 3, Failed 1\./).waitFor(WAIT);
    await page.getByRole('link', { name: 'See the failures' }).click();
    await page.waitForURL(/\/failures$/);
    await page.getByRole('heading', { name: 'Mapping failures', exact: true }).waitFor(WAIT);

    const list = page.getByRole('table', { name: 'Mapping failures' });
    await list.getByText('Invalid value for column "user": path "user.id" not found in the body.').waitFor(WAIT);
    expect(await card(page, /^Failed now/).textContent()).toContain('1 record');
    await list.locator('summary', { hasText: 'Body' }).click();
    const body = page.getByLabel(/Body of the record at offset/);
    await body.waitFor(WAIT);
    expect(JSON.parse((await body.textContent())!)).toEqual({ account: { id: 'dan' } });
    await screenshot(page, 'failures');
    expect(errors).toEqual([]);
  }, 60_000);

  it('shows a read-only token the statistics and the failures, without Reprocess, Replay or Clear', async () => {
    // Read on the sink's bucket: the failures show raw records, which need it.
    const created = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'viewer', bucketPermissions: { 'in.c-shop': 'read' } } });
    expect(created.status).toBe(201);
    const viewer = await openPage(browser);
    try {
      await signIn(viewer.page, svc.server.address, created.json.token);
      await viewer.page.goto(`${svc.server.address}/console/${STATS}`);
      await card(viewer.page, /^Target/).filter({ hasText: '3 records' }).waitFor(WAIT);
      await viewer.page.locator('figure.chart canvas').first().waitFor(WAIT);
      expect(await viewer.page.getByRole('button', { name: /clear/i }).count()).toBe(0);

      await viewer.page.goto(`${svc.server.address}/console/${FAILURES}`);
      await viewer.page.getByRole('table', { name: 'Mapping failures' }).getByText(/path "user.id" not found/).waitFor(WAIT);
      expect(await viewer.page.getByRole('button', { name: /reprocess|replay|clear/i }).count()).toBe(0);
      expect(await viewer.page.getByRole('heading', { name: /Replay/ }).count()).toBe(0);
      expect(viewer.errors).toEqual([]);
    } finally {
      await viewer.page.context().close();
    }
  }, 60_000);

  it('reprocesses the failed record once the mapping is fixed, and the row reaches the table', async () => {
    const fixed = [{ type: 'template', name: 'user', rawString: true, template: { language: 'jsonnet', content: 'Body("user.id", Body("account.id", ""))' } }];
    expect((await svc.task('PATCH', `${B}/sources/shop/sinks/events`, { json: { table: { mapping: { columns: fixed } } } })).status).toBe('success');

    await page.getByRole('button', { name: 'Reprocess failed records' }).click();
    await page.getByRole('status').filter({ hasText: 'Reprocessed: 1 written, 0 failed again.' }).waitFor(WAIT);
    await card(page, /^Failed now/).filter({ hasText: '0 records' }).waitFor(WAIT);
    await page.getByRole('table', { name: 'Mapping failures' }).getByText('No failed records.').waitFor(WAIT);

    await page.getByRole('link', { name: 'statistics', exact: true }).click();
    await card(page, /^Target/).filter({ hasText: '4 records' }).waitFor(WAIT);
    await card(page, /^Mapping failures/).filter({ hasText: '0 records' }).waitFor(WAIT);
    await page.getByText(/points?\): Received 4, Imported 4, Failed 0\./).waitFor(WAIT);
    const rows = await svc.call('GET', '/v2/storage/tables/in.c-shop.events/data-preview?limit=100');
    expect(rows.text.split('\n').filter((l) => l !== '').slice(1).map((l) => l.replace(/"/g, '')).sort()).toEqual(['ann', 'bob', 'cyd', 'dan']);
    expect(errors).toEqual([]);
  }, 60_000);

  it('replays from the event log and follows the task to its result', async () => {
    await page.goto(`${svc.server.address}/console/${FAILURES}`);
    const replay = page.getByRole('region', { name: 'Replay from the event log' });
    await replay.waitFor(WAIT);
    // Since an hour ago (the form's default): every record of this test.
    await replay.getByRole('combobox', { name: /^Records/ }).selectOption('all');
    await replay.getByRole('button', { name: 'Start replay' }).click();
    const task = replay.getByRole('status', { name: 'Replay task' });
    await task.getByText('success').waitFor(WAIT);
    expect(await task.textContent()).toContain('Scanned 4 of 4 offsets');
    await task.getByText('Replayed 0 records: 0 written, 0 failed mapping again, 4 skipped.').waitFor(WAIT);
    expect(await task.getByRole('progressbar').getAttribute('value')).toBe('4');

    // A full remap writes them again (after a confirmation): 4 more rows.
    await replay.getByLabel(/Full remap/).check();
    await replay.getByRole('button', { name: 'Start replay' }).click();
    await task.getByText('Replayed 4 records: 4 written, 0 failed mapping again, 0 skipped.').waitFor(WAIT);
    await page.goto(`${svc.server.address}/console/${STATS}`);
    await card(page, /^Target/).filter({ hasText: '8 records' }).waitFor(WAIT);
    expect(errors).toEqual([]);
  }, 60_000);

  it('clears the statistics after a confirmation', async () => {
    await chartPoints(page, 2);
    await page.getByRole('button', { name: 'Clear statistics' }).click();
    await card(page, /^Target/).filter({ hasText: '0 records' }).waitFor(WAIT);
    await card(page, /^Received/).filter({ hasText: '0 records' }).waitFor(WAIT);
    await page.getByRole('table', { name: 'Files' }).getByText('No files yet').waitFor(WAIT);
    const total = (await svc.call('GET', `${B}/sources/shop/sinks/events/statistics/total`)).json;
    expect(total.total.recordsCount).toBe(0);
    expect(errors).toEqual([]);
  }, 60_000);

  it('fits a phone\'s width', async () => {
    const phone = await openPage(browser, { width: 390, height: 800 });
    try {
      await signIn(phone.page, svc.server.address, MASTER_TOKEN);
      for (const route of [STATS, FAILURES]) {
        await phone.page.goto(`${svc.server.address}/console/${route}`);
        await phone.page.locator('.sink-stats-head h2').waitFor(WAIT);
        if (route === STATS) await phone.page.locator('figure.chart canvas').first().waitFor(WAIT);
        const widths = (await phone.page.evaluate(`({
          page: document.documentElement.scrollWidth,
          chart: Math.max(0, ...[...document.querySelectorAll('figure.chart .uplot')].map((e) => e.getBoundingClientRect().right)),
        })`)) as { page: number; chart: number };
        expect(widths.page, route).toBeLessThanOrEqual(390);
        expect(widths.chart, route).toBeLessThanOrEqual(390);
      }
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.page.context().close();
    }
  }, 60_000);
});

describe('a server that protects /metrics with a token', () => {
  let guarded: TestService;

  beforeAll(async () => {
    guarded = await TestService.start({ args: [...FAST, '--metrics-token', 'scrape-secret'] });
    await createSink(guarded, 'shop', 'events', 'in.c-shop.events');
  }, 60_000);

  afterAll(async () => {
    await guarded?.close();
  });

  it('hides the lag chart with a note and keeps the session', async () => {
    const { page, errors } = await openPage(browser);
    try {
      await signIn(page, guarded.server.address, MASTER_TOKEN);
      await page.goto(`${guarded.server.address}/console/${STATS}`);
      await page.getByText(/The lag chart is hidden/).waitFor(WAIT);
      expect(await page.locator('figure.chart canvas').count()).toBe(1);
      await chartPoints(page, 3);
      // Still signed in: the 401 of /metrics is not the session's.
      expect(await page.getByRole('heading', { name: 'Sign in to Sluice' }).count()).toBe(0);
      expect(await page.evaluate("sessionStorage.getItem('sluice.token')")).toBe(MASTER_TOKEN);
      expect(errors).toEqual([]);
    } finally {
      await page.context().close();
    }
  }, 60_000);
});

describe('files kept from stored state, some without statistics', () => {
  let seeded: TestService;

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sluice-console-stored-'));
    await seedStoredFiles(dataDir, { projectId: 11, branchId: 22, sourceId: 'shop', sinkId: 'events' });
    // No periodic checks: the stored files stay as seeded.
    seeded = await TestService.start({ dataDir, args: ['--check-interval', '24h'] });
    await createSink(seeded, 'shop', 'events', 'in.c-shop.events');
  }, 60_000);

  afterAll(async () => {
    await seeded?.close();
  });

  it('says "no figures yet" for a file without statistics, and counts the others', async () => {
    const { page, errors } = await openPage(browser);
    try {
      await signIn(page, seeded.server.address, MASTER_TOKEN);
      await page.goto(`${seeded.server.address}/console/${STATS}`);
      const files = page.getByRole('table', { name: 'Files' });
      const row = (state: string) => files.getByRole('row').filter({ has: page.getByText(state, { exact: true }) });
      await row('importing').waitFor(WAIT);
      // Stored without statistics: the imported file (a slice with none) and the failed one (no slice).
      expect(await row('imported').getByText('no figures yet').count()).toBe(1);
      expect(await files.getByText('no figures yet').count()).toBe(2);
      // Stored with statistics (2 records); the service's writing file has statistics of none.
      expect(await row('importing').locator('td.num').first().textContent()).toBe('2');
      expect(await row('writing').locator('td.num').first().textContent()).toBe('0');
      await page.getByText('No figures yet: no statistics have been recorded for the file.').waitFor(WAIT);
      expect(errors).toEqual([]);
    } finally {
      await page.context().close();
    }
  }, 60_000);
});
