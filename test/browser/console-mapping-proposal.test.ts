/**
 * "Propose mapping from recent records" in the new-sink form, in a real browser: with no
 * records it says so and leaves the columns alone; with records it fills the columns editor
 * from POST .../sinks/infer and lists the fields seen; the user edits the proposal and creates
 * the sink with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { launchBrowser, openPage, screenshot, signIn } from './harness.js';

let svc: TestService;
let browser: Browser;
const B = () => `/v1/branches/${svc.branchId}`;
const WAIT = { timeout: 15_000 };

beforeAll(async () => {
  svc = await TestService.start();
  browser = await launchBrowser();
  for (const name of ['Shop', 'Quiet']) {
    expect((await svc.task('POST', `${B()}/sources`, { json: { name, type: 'http' } })).status).toBe('success');
  }
  const path = await svc.ingestPath('shop');
  for (const event of [
    { order: 1, user: { id: 'u1', vip: true }, total: 10, at: '2026-11-27T01:02:03.456Z' },
    { order: 2, user: { id: 'u2', vip: false }, total: 12.5, at: '2026-11-27T01:05:00Z', coupon: 'XMAS' },
  ]) {
    const res = await svc.call('POST', path, { token: null, body: JSON.stringify(event) });
    expect(res.status).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

const column = (page: Page, n: number): Locator => page.getByRole('group', { name: new RegExp(`^Column ${n}\\b`) });
const names = (page: Page) => page.locator('input[name="column-name"]').evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));

async function newSinkForm(page: Page, sourceId: string, heading: string): Promise<void> {
  await page.goto(`${svc.server.address}/console/#/sources/${sourceId}/sinks/new`);
  await page.getByRole('heading', { name: heading }).waitFor(WAIT);
}

describe('proposing a mapping in the new-sink form', () => {
  it('says when the source has no records, and leaves the columns as they were', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await newSinkForm(page, 'quiet', 'New sink of Quiet');
    await page.getByRole('button', { name: 'Propose mapping from recent records' }).click();
    const status = page.getByRole('status').filter({ hasText: 'The source has no records yet' });
    await status.waitFor(WAIT);
    expect(await status.textContent()).toBe('The source has no records yet: send a few events, then propose again.');
    expect(await names(page)).toEqual(['id', 'received_at', 'body']);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('fills the columns editor from the newest records; the user edits the proposal and creates the sink', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await newSinkForm(page, 'shop', 'New sink of Shop');
    await page.getByRole('button', { name: 'Propose mapping from recent records' }).click();
    const status = page.getByRole('status').filter({ hasText: /^Proposed/ });
    await status.waitFor(WAIT);
    expect(await status.textContent()).toBe('Proposed 7 columns from 2 of the 2 newest records. Edit them below, then create the sink.');
    expect(await names(page)).toEqual(['received_at', 'order', 'user_id', 'user_vip', 'total', 'at', 'coupon']);
    expect(await column(page, 1).locator('select[name="column-type"]').inputValue()).toBe('datetime');
    expect(await column(page, 3).locator('select[name="column-type"]').inputValue()).toBe('path');
    expect(await column(page, 3).getByLabel(/^Path/).inputValue()).toBe('user.id');
    expect(await column(page, 3).getByLabel('Raw string: write a JSON string without its quotes').isChecked()).toBe(true);
    expect(await column(page, 5).getByLabel(/^Path/).inputValue()).toBe('total');
    expect(await column(page, 5).getByLabel('Raw string: write a JSON string without its quotes').isChecked()).toBe(false);

    // The fields seen, with their values' kinds and their columns.
    await page.getByText('Fields seen (7)').click();
    const fields = page.getByRole('table', { name: 'Fields seen' });
    const row = (path: string) => fields.getByRole('row').filter({ has: page.getByRole('cell', { name: path, exact: true }) });
    expect(await row('total').getByRole('cell').allTextContents()).toEqual(['total', '2', 'integer 1, decimal 1', 'total', 'NUMERIC']);
    expect(await row('coupon').getByRole('cell').allTextContents()).toEqual(['coupon', '1', 'string 1', 'coupon', 'STRING']);
    expect(await row('user').getByRole('cell').allTextContents()).toEqual(['user', '2', 'object 2', ' An object: its members are columns.', '']);
    await screenshot(page, 'sink-proposal');

    // Edited: a column removed, one renamed; then created as any sink.
    await page.getByRole('button', { name: 'Remove coupon' }).click();
    await column(page, 2).getByLabel('Name', { exact: true }).fill('order_no');
    await page.getByLabel(/^Name\s*1 to 40/).fill('Orders');
    await page.getByLabel(/^Table id/).fill('in.c-shop.orders');
    await page.getByRole('button', { name: 'Create sink' }).click();
    await page.waitForURL(/#\/sources\/shop\/sinks\/orders$/, WAIT);
    const sink = (await svc.call('GET', `${B()}/sources/shop/sinks/orders`)).json;
    expect(sink.table.mapping.columns.map((c: { name: string; path?: string }) => [c.name, c.path])).toEqual([
      ['received_at', undefined], ['order_no', 'order'], ['user_id', 'user.id'], ['user_vip', 'user.vip'], ['total', 'total'], ['at', 'at'],
    ]);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});
