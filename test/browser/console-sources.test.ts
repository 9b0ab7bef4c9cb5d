/**
 * The console's source pages in a real browser: the list (sinks, records, last hour, state,
 * deleted sources), a source's overview (ingestion URL, curl example, sinks, write actions),
 * versions (compare, rollback), settings, a read-only token, and a phone-sized screen.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { launchBrowser, openPage, screenshot, signIn } from './harness.js';

let svc: TestService;
let browser: Browser;
/** The master token's page, shared by the tests in order (they build on each other's state). */
let page: Page;
let errors: string[];
/** The confirm() texts the page asked; all accepted. */
const dialogs: string[] = [];

const WAIT = { timeout: 15_000 };
const B = () => `/v1/branches/${svc.branchId}`;
const at = (hash: string) => `${svc.server.address}/console/#/${hash}`;

async function sourceUrl(sourceId: string): Promise<string> {
  return (await svc.call('GET', `${B()}/sources/${sourceId}`)).json.http.url;
}

/** Posts an event to the source's ingestion URL (its path on the test server). */
async function send(sourceId: string, body: unknown): Promise<number> {
  const res = await fetch(svc.server.address + (await svc.ingestPath(sourceId)), {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  return res.status;
}

/** The text of each cell of the table row that has `name` in it. */
async function rowCells(p: Page, table: string, name: string): Promise<string[]> {
  const row = p.getByRole('table', { name: table }).getByRole('row').filter({ hasText: name });
  if ((await row.count()) === 0) return [];
  return row.first().locator('td').allInnerTexts();
}

const rawSink = {
  name: 'Raw',
  type: 'table',
  table: {
    type: 'keboola',
    tableId: 'in.c-orders.raw',
    mapping: { columns: [{ type: 'uuid', name: 'id' }, { type: 'datetime', name: 'received' }, { type: 'body', name: 'body' }] },
  },
};

beforeAll(async () => {
  svc = await TestService.start({ args: ['--check-interval', '100ms'] });
  browser = await launchBrowser();
  ({ page, errors } = await openPage(browser));
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.accept();
  });
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.server.address });
  await signIn(page, svc.server.address, MASTER_TOKEN);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('the source pages', () => {
  it('create an HTTP source from the list and show its ingestion URL with a copy button and a curl example', async () => {
    await page.getByText('New source').click();
    await page.getByLabel('Name').fill('Orders');
    await page.getByRole('button', { name: 'Create source' }).click();
    await page.waitForURL(/#\/sources\/orders$/, WAIT);
    await page.getByRole('heading', { level: 1, name: 'Orders', exact: true }).waitFor(WAIT);
    const url = await sourceUrl('orders');
    expect(url).toMatch(/^https:\/\/in\.test\/stream\/11\/orders\/\w+$/);

    await page.locator('#src-url').waitFor(WAIT);
    expect(await page.locator('#src-url').textContent()).toBe(url);
    expect(await page.locator('#src-curl').textContent()).toBe(`curl -X POST '${url}' -H 'Content-Type: application/json' -d '{"hello":"world"}'`);
    const copy = page.getByRole('button', { name: 'Copy ingestion URL' });
    expect(await copy.count()).toBe(1);
    await copy.click();
    await page.getByRole('button', { name: 'Copy ingestion URL' }).filter({ hasText: 'Copied' }).waitFor(WAIT);
    // (A string: the tests are type-checked without the DOM library.)
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(url);
    expect(await page.getByRole('button', { name: 'Copy curl example' }).count()).toBe(1);

    // Details: type, state, version 1.
    const details = page.getByRole('region', { name: 'Details' });
    expect(await details.innerText()).toMatch(/Type\s+HTTP/);
    expect(await details.innerText()).toMatch(/Version\s+1: New source\./);
    expect(await page.getByRole('table', { name: 'Sinks' }).innerText()).toContain('No sinks yet');
    expect(errors).toEqual([]);
  });

  it('list the sink and count the records sent to the ingestion URL, on the page and in the list', async () => {
    const task = await svc.task('POST', `${B()}/sources/orders/sinks`, { json: rawSink });
    expect(task.status).toBe('success');
    // The page polls: the new sink appears without a reload.
    await expect.poll(() => rowCells(page, 'Sinks', 'Raw'), WAIT).toEqual(['Raw', expect.stringContaining('raw'), 'in.c-orders.raw', 'enabled', '0', '0']);
    expect(await page.getByRole('link', { name: 'Raw' }).getAttribute('href')).toBe('#/sources/orders/sinks/raw');
    expect(await page.getByRole('link', { name: 'New sink' }).getAttribute('href')).toBe('#/sources/orders/sinks/new');

    for (let i = 0; i < 3; i++) expect(await send('orders', { order: i })).toBe(200);
    await expect.poll(async () => (await rowCells(page, 'Sinks', 'Raw')).slice(4), WAIT).toEqual(['3', '3']);
    await screenshot(page, 'source');

    await page.goto(at('sources'));
    // Name, Id, Type, Sinks, Records, Last hour, State.
    await expect.poll(() => rowCells(page, 'Sources', 'Orders'), WAIT).toEqual(['Orders', 'orders', 'HTTP', '1', '3', '3', 'enabled']);
    expect(await page.getByText('whose last record arrived within the hour').count()).toBe(1);
    expect(errors).toEqual([]);
  });

  it('disable and enable the source: the state badge follows', async () => {
    await page.goto(at('sources/orders'));
    const badge = page.locator('.src-title .badge');
    await badge.filter({ hasText: 'enabled' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Disable' }).click();
    await badge.filter({ hasText: 'disabled' }).waitFor(WAIT);
    expect((await svc.call('GET', `${B()}/sources/orders`)).json.disabled).toBeDefined();
    await page.getByRole('button', { name: 'Enable' }).click();
    await badge.filter({ hasText: 'enabled' }).waitFor(WAIT);
    expect((await svc.call('GET', `${B()}/sources/orders`)).json.disabled).toBeUndefined();
    expect(errors).toEqual([]);
  });

  it('rotate the secret after a confirmation: the URL changes and the old one stops working', async () => {
    const before = await sourceUrl('orders');
    const oldPath = new URL(before).pathname;
    expect(await page.locator('#src-url').textContent()).toBe(before);
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await expect.poll(() => page.locator('#src-url').textContent(), WAIT).not.toBe(before);
    expect(dialogs.at(-1)).toMatch(/stops working at once/);
    const after = await sourceUrl('orders');
    expect(await page.locator('#src-url').textContent()).toBe(after);
    expect(await page.locator('#src-curl').textContent()).toContain(after);
    expect((await fetch(svc.server.address + oldPath, { method: 'POST', body: '{}' })).status).toBe(404);
    expect(await send('orders', { order: 'after rotation' })).toBe(200);
    expect(errors).toEqual([]);
  });

  it('edit the name, list the versions, compare one with the current and roll back to it', async () => {
    await page.getByRole('button', { name: 'Edit name and description' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Orders v2');
    await page.getByLabel('Description', { exact: true }).fill('Orders of the shop');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Orders v2' }).waitFor(WAIT);
    expect((await svc.call('GET', `${B()}/sources/orders`)).json.description).toBe('Orders of the shop');

    await page.getByRole('link', { name: 'Versions' }).click();
    await page.waitForURL(/#\/sources\/orders\/versions$/);
    const versions = page.getByRole('table', { name: 'Versions' });
    await versions.waitFor(WAIT);
    // New source, Disabled, Enabled, Rotated secret, Updated: newest first.
    await expect.poll(async () => (await versions.locator('tbody tr').allInnerTexts()).length, WAIT).toBe(5);
    const rows = await versions.locator('tbody tr td:nth-child(2)').allInnerTexts();
    expect(rows).toEqual(['Updated.', 'Rotated secret.', 'Enabled.', 'Disabled.', 'New source.']);
    expect(await page.getByRole('button', { name: 'Compare version 5 with the current' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Compare version 1 with the current' }).click();
    const diff = page.getByRole('region', { name: 'Version 1 compared with the current version 5' });
    await diff.locator('.del').first().waitFor(WAIT);
    const removed = await diff.locator('.src-diff .del').allInnerTexts();
    const added = await diff.locator('.src-diff .add').allInnerTexts();
    expect(removed.join('\n')).toContain('number: 1');
    expect(removed.join('\n')).toContain('description: New source.');
    expect(added.join('\n')).toContain('number: 5');
    expect(added.join('\n')).toContain('description: Updated.');
    expect(await diff.innerText()).toContain('differs from the current one');

    await page.getByRole('button', { name: 'Roll back to version 1' }).click();
    await page.getByRole('heading', { level: 1, name: 'Orders', exact: true }).waitFor(WAIT);
    expect(dialogs.at(-1)).toMatch(/back to version 1/);
    await expect.poll(async () => (await versions.locator('tbody tr td:nth-child(2)').allInnerTexts())[0], WAIT).toBe('Rollback to version "1".');
    const source = (await svc.call('GET', `${B()}/sources/orders`)).json;
    expect(source.name).toBe('Orders');
    expect(source.description).toBe('');
    expect(source.version.number).toBe(6);
    expect(errors).toEqual([]);
  });

  it('show the settings and change one, with the API\'s message for a value it refuses', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    const key = 'storage.level.staging.upload.trigger.interval';
    await expect.poll(() => rowCells(page, 'Settings', key), WAIT).toEqual([
      expect.stringContaining(key), '30s', '30s', 'default', 'string', expect.stringContaining('Save'),
    ]);
    // Protected keys only on demand.
    expect(await page.getByText('storage.level.local.encoding.encoder.type').count()).toBe(0);
    await page.getByLabel('Show the protected keys too').check();
    await page.getByText('storage.level.local.encoding.encoder.type').waitFor(WAIT);

    const input = page.getByLabel(`New value of ${key}`);
    await input.fill('1ms');
    await page.getByRole('button', { name: `Save ${key}` }).click();
    const refused = await svc.call('PATCH', `${B()}/sources/orders/settings`, { json: { settings: [{ key, value: '1ms' }] } });
    expect(refused.status).toBe(400);
    const alert = page.getByRole('table', { name: 'Settings' }).getByRole('alert');
    await alert.waitFor(WAIT);
    expect(await alert.textContent()).toBe(refused.json.message);

    await input.fill('5s');
    await page.getByRole('button', { name: `Save ${key}` }).click();
    await expect.poll(async () => (await rowCells(page, 'Settings', key)).slice(1, 4), WAIT).toEqual(['5s', '30s', 'overridden']);
    const settings = (await svc.call('GET', `${B()}/sources/orders/settings`)).json.settings;
    expect(settings.find((s: { key: string }) => s.key === key)).toMatchObject({ value: '5s', overwritten: true });
    expect(errors).toEqual([]);
  });

  it('create the default sinks of an OTLP source and show its OTLP URL', async () => {
    expect((await svc.task('POST', `${B()}/sources`, { json: { name: 'Telemetry', type: 'otlp' } })).status).toBe('success');
    const otlp = (await svc.call('GET', `${B()}/sources/telemetry`)).json.otlp;
    await page.goto(at('sources/telemetry'));
    await page.locator('#src-otlp-url').waitFor(WAIT);
    expect(await page.locator('#src-otlp-url').textContent()).toBe(otlp.url);
    expect(await page.locator('#src-otlp-base-url').textContent()).toBe(otlp.baseUrl);
    expect(await page.locator('#src-otlp-env').textContent()).toContain(`OTEL_EXPORTER_OTLP_ENDPOINT='${otlp.url}'`);
    await page.getByRole('button', { name: 'Create default sinks' }).click();
    for (const signal of ['logs', 'metrics', 'traces']) {
      await expect.poll(async () => (await rowCells(page, 'Sinks', `in.c-telemetry.${signal}`))[3], WAIT).toBe(signal);
    }
    // Once more: the API's own message (all three exist).
    await page.getByRole('button', { name: 'Create default sinks' }).click();
    await page.getByRole('alert').filter({ hasText: 'already exist' }).waitFor(WAIT);
    expect(await page.getByRole('alert').textContent()).toBe('The default sinks of source "telemetry" already exist.');
    expect(errors).toEqual([]);
  });

  it('fit a 390 px wide screen: the ingestion URL is whole, nothing scrolls sideways', async () => {
    const phone = await openPage(browser, { width: 390, height: 844 });
    await signIn(phone.page, svc.server.address, MASTER_TOKEN);
    await phone.page.goto(at('sources/orders'));
    const url = phone.page.locator('#src-url');
    await url.waitFor(WAIT);
    expect(await url.textContent()).toBe(await sourceUrl('orders'));
    const box = await url.boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    const widths = await phone.page.evaluate<{ main: number[]; page: number[] }>(`(() => {
      const main = document.querySelector('main');
      return { main: [main.scrollWidth, main.clientWidth], page: [document.documentElement.scrollWidth, document.documentElement.clientWidth] };
    })()`);
    expect(widths.main[0]).toBeLessThanOrEqual(widths.main[1]);
    expect(widths.page[0]).toBeLessThanOrEqual(widths.page[1]);
    expect(await phone.page.getByRole('button', { name: 'Copy ingestion URL' }).isVisible()).toBe(true);
    expect(phone.errors).toEqual([]);
    await phone.page.context().close();
  });

  it('show a read-only token the source, its sinks, versions, settings and deleted sources, and no write control', async () => {
    expect((await svc.task('POST', `${B()}/sources`, { json: { name: 'Old Feed', type: 'http' } })).status).toBe('success');
    expect((await svc.task('DELETE', `${B()}/sources/old-feed`)).status).toBe('success');
    const created = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'viewer' } });
    expect(created.status).toBe(201);
    const viewer = await openPage(browser);
    const p = viewer.page;
    await signIn(p, svc.server.address, created.json.token);
    const writes = /\b(disable|enable|rotate|delete|edit|create|roll back|save|reset|undelete)\b/i;

    await p.goto(at('sources/orders'));
    await p.getByRole('heading', { level: 1, name: 'Orders', exact: true }).waitFor(WAIT);
    // No write on the source's buckets: no ingestion URL, and a note that says why.
    expect(await p.locator('#src-no-secret').textContent()).toMatch(/shown only to tokens that may write to the buckets of all the source's sinks/);
    expect(await p.locator('#src-url').count()).toBe(0);
    await expect.poll(async () => (await rowCells(p, 'Sinks', 'Raw'))[2], WAIT).toBe('in.c-orders.raw');
    expect(await p.getByRole('button', { name: writes }).count()).toBe(0);
    expect(await p.getByRole('link', { name: 'New sink' }).count()).toBe(0);
    expect(await p.getByRole('region', { name: 'Actions' }).count()).toBe(0);

    await p.getByRole('link', { name: 'Versions' }).click();
    await p.getByRole('button', { name: 'Compare version 1 with the current' }).waitFor(WAIT);
    expect(await p.getByRole('button', { name: writes }).count()).toBe(0);

    await p.getByRole('link', { name: 'Settings' }).click();
    await p.getByRole('table', { name: 'Settings' }).waitFor(WAIT);
    expect(await p.getByRole('columnheader', { name: 'Change' }).count()).toBe(0);
    expect(await p.getByRole('textbox').count()).toBe(0);
    expect(await p.getByRole('button', { name: writes }).count()).toBe(0);

    await p.goto(at('sources'));
    await p.getByLabel('Show deleted sources').check();
    await expect.poll(async () => (await rowCells(p, 'Deleted sources', 'Old Feed'))[1], WAIT).toBe('old-feed');
    expect(await p.getByRole('button', { name: writes }).count()).toBe(0);
    expect(await p.getByText('New source').count()).toBe(0);
    expect(viewer.errors).toEqual([]);
    await p.context().close();
  });

  it('delete a source and undelete it from the deleted sources; delete with its tables for good', async () => {
    await page.goto(at('sources/orders'));
    await page.getByRole('button', { name: 'Delete source' }).click();
    await page.waitForURL(/#\/sources$/, WAIT);
    expect(dialogs.at(-1)).toMatch(/can be restored/);
    await page.getByRole('table', { name: 'Sources' }).waitFor(WAIT);
    await expect.poll(() => page.getByRole('link', { name: 'Orders', exact: true }).count(), WAIT).toBe(0);
    await page.getByLabel('Show deleted sources').check();
    await expect.poll(async () => (await rowCells(page, 'Deleted sources', 'Orders'))[1], WAIT).toBe('orders');

    await page.getByRole('button', { name: 'Undelete Orders' }).click();
    await page.getByRole('link', { name: 'Orders', exact: true }).waitFor(WAIT);
    await expect.poll(async () => (await rowCells(page, 'Deleted sources', 'Orders')).length, WAIT).toBe(0);
    expect((await svc.call('GET', `${B()}/sources/orders/sinks/raw`)).status).toBe(200);

    await page.getByRole('link', { name: 'Orders', exact: true }).click();
    await page.getByLabel(/Also delete its sinks, their tables/).check();
    await page.getByRole('button', { name: 'Delete source' }).click();
    await page.waitForURL(/#\/sources$/, WAIT);
    expect(dialogs.at(-1)).toMatch(/for good/);
    await page.getByRole('table', { name: 'Sources' }).waitFor(WAIT);
    await expect.poll(() => page.getByRole('link', { name: 'Orders', exact: true }).count(), WAIT).toBe(0);
    await page.getByLabel('Show deleted sources').check();
    await expect.poll(async () => (await rowCells(page, 'Deleted sources', 'Old Feed'))[1], WAIT).toBe('old-feed');
    expect(await rowCells(page, 'Deleted sources', 'Orders')).toEqual([]);
    expect((await svc.call('GET', `${B()}/sources/orders`)).status).toBe(404);
    expect((await svc.call('GET', '/v2/storage/tables/in.c-orders.raw')).status).toBe(404);
    expect(errors).toEqual([]);
  }, 60_000);
});
