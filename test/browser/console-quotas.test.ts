/**
 * A source's quota in the console (real browser, real node): set in the Settings tab (the
 * quota keys are there to set), shown as a badge in the list and on the source's page, and a
 * "throttled" badge once the node refused the source's records over it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { launchBrowser, openPage, screenshot, signIn } from './harness.js';

const WAIT = { timeout: 15_000 };
const KEY = 'source.quota.recordsPerSecond';

let svc: TestService;
let browser: Browser;
let page: Page;
let errors: string[];

const at = (hash: string) => `${svc.server.address}/console/#/${hash}`;

beforeAll(async () => {
  svc = await TestService.start({ args: ['--max-sink-backlog', '0'] });
  browser = await launchBrowser();
  ({ page, errors } = await openPage(browser));
  await signIn(page, svc.server.address, MASTER_TOKEN);
  for (const sourceId of ['limited', 'free']) {
    expect((await svc.task('POST', `/v1/branches/${svc.branchId}/sources`, { json: { sourceId, name: sourceId, type: 'http' } })).status).toBe('success');
  }
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('console: source quotas', () => {
  it('set a quota in the Settings tab, then show it and the throttling as badges in the list and on the source', async () => {
    await page.goto(at('sources/limited/settings'));
    const input = page.getByLabel(`New value of ${KEY}`);
    await input.waitFor(WAIT);
    await input.fill('1');
    await page.getByRole('button', { name: `Save ${KEY}` }).click();
    await expect.poll(async () => (await svc.call('GET', `/v1/branches/${svc.branchId}/sources/limited`)).json.quota, WAIT).toEqual({ recordsPerSecond: 1 });

    await page.goto(at('sources'));
    const row = page.getByRole('table', { name: 'Sources' }).getByRole('row').filter({ hasText: 'limited' });
    await row.getByText('quota 1 records/s').waitFor(WAIT);
    expect(await row.getByText('throttled').count()).toBe(0);
    const free = page.getByRole('table', { name: 'Sources' }).getByRole('row').filter({ hasText: 'free' });
    expect(await free.getByText(/quota/).count()).toBe(0);

    // Over the quota: the node answers 429, and the list (polled every 5 s) says so.
    const url = svc.server.address + (await svc.ingestPath('limited'));
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await fetch(url, { method: 'POST', body: '{}' })).status);
    expect(statuses).toContain(429);
    await row.getByText('throttled').waitFor(WAIT);
    await screenshot(page, 'console-source-quota');

    await page.goto(at('sources/limited'));
    const title = page.locator('.src-title');
    await title.getByText('quota 1 records/s').waitFor(WAIT);
    await title.getByText('throttled').waitFor(WAIT);
    const details = page.getByRole('region', { name: 'Details' });
    await details.getByText(/1 records\/s on each node/).waitFor(WAIT);
    await page.goto(at('sources/free'));
    await page.getByRole('heading', { level: 1, name: 'free' }).waitFor(WAIT);
    expect(await page.locator('.src-title').getByText(/quota/).count()).toBe(0);
    expect(errors).toEqual([]);
  });
});
