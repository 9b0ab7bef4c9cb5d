/**
 * A sink's record filter in a real browser: the editor edits it (the API's syntax error next to
 * the filter, with its line and column), the preview shows a sample the filter skips as
 * filtered out and one it cannot decide as its failure, the recent records are checked against
 * it, and the statistics show what it skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { launchBrowser, openPage, screenshot, signIn } from './harness.js';

let svc: TestService;
let browser: Browser;
const B = () => `/v1/branches/${svc.branchId}`;
const WAIT = { timeout: 15_000 };
const BROKEN = 'local level = Body("level");\nlevel == ';
const ERRORS_ONLY = 'local level = Body("level");\nlevel == "error"';

beforeAll(async () => {
  svc = await TestService.start({ args: ['--check-interval', '100ms'] });
  browser = await launchBrowser();
  expect((await svc.task('POST', `${B()}/sources`, { json: { name: 'Logs', type: 'http' } })).status).toBe('success');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

async function open(page: Page, hash: string): Promise<void> {
  await page.goto(`${svc.server.address}/console/#/${hash}`);
}

function previewValue(page: Page, name: string): Locator {
  return page.getByRole('table', { name: /^Row of/ }).getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) }).getByRole('cell');
}

describe('a sink\'s filter in the console', () => {
  it('is edited in the sink editor: a syntax error is shown next to it with its position, then the sink is saved with it', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await open(page, 'sources/logs/sinks/new');
    await page.getByRole('heading', { name: 'New sink of Logs' }).waitFor(WAIT);
    await page.getByLabel(/^Name\s*1 to 40/).fill('Errors');
    await page.getByLabel(/^Table id/).fill('in.c-logs.errors');
    await page.getByLabel('Type of the new column').selectOption('path');
    await page.getByRole('button', { name: 'Add column' }).click();
    const added = page.getByRole('group', { name: /^Column 4\b/ });
    await added.getByLabel('Name', { exact: true }).fill('level');
    await added.getByLabel(/^Path/).fill('level');
    const filter = page.getByRole('textbox', { name: 'Filter expression' });
    await filter.fill(BROKEN);

    await page.getByRole('button', { name: 'Create sink' }).click();
    const field = page.locator('.template-field').filter({ has: filter });
    const alert = field.getByRole('alert');
    await alert.waitFor(WAIT);
    expect(await alert.textContent()).toMatch(/^Filter is invalid: 2:\d+/);
    expect(await field.locator('.gutter .error-line').textContent()).toBe('2');
    expect(await field.getByRole('button', { name: /^Go to line 2, column \d+$/ }).isVisible()).toBe(true);
    await field.scrollIntoViewIfNeeded();
    await screenshot(page, 'sink-filter-editor');
    expect((await svc.call('GET', `${B()}/sources/logs/sinks`)).json.sinks).toEqual([]);

    await filter.fill(ERRORS_ONLY);
    await page.getByRole('button', { name: 'Create sink' }).click();
    await page.waitForURL(/#\/sources\/logs\/sinks\/errors/, WAIT);
    const stored = await svc.call('GET', `${B()}/sources/logs/sinks/errors`);
    expect(stored.json.table.mapping.filter).toEqual({ language: 'jsonnet', content: ERRORS_ONLY });
    // The editor shows what is stored.
    await page.getByRole('textbox', { name: 'Filter expression' }).waitFor(WAIT);
    expect(await page.getByRole('textbox', { name: 'Filter expression' }).inputValue()).toBe(ERRORS_ONLY);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('previews a sample the filter skips as filtered out, one it keeps as its row, one it cannot decide as its failure, and checks the recent records', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await open(page, 'sources/logs/sinks/errors/preview');
    const body = page.getByLabel(/^Event body/);
    await body.waitFor(WAIT);

    await body.fill('{"level": "error", "msg": "disk full"}');
    await expect.poll(() => previewValue(page, 'level').textContent(), WAIT).toBe('"error"');
    await body.fill('{"level": "info", "msg": "started"}');
    const note = page.locator('.preview-filtered');
    await note.waitFor(WAIT);
    expect(await note.textContent()).toMatch(/^Filtered out: the sink's filter returns false for this sample/);
    expect(await previewValue(page, 'level').textContent()).toBe('—');
    await body.fill('{"msg": "no level"}');
    await expect.poll(() => page.getByRole('alert').first().textContent(), WAIT).toBe('Filter failed: path "level" not found in the body.');
    expect(await page.getByText('The filter could not decide for this sample').isVisible()).toBe(true);

    // Three records of the source, checked against the filter (each through the test endpoint).
    const path = await svc.ingestPath('logs');
    for (const record of [{ level: 'error' }, { level: 'debug' }, { msg: 'no level' }]) {
      const sent = await fetch(svc.server.address + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(record) });
      expect(sent.status).toBe(200);
    }
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByRole('button', { name: 'Use record 3' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Check against the filter' }).click();
    const recent = page.getByRole('table', { name: 'Recent records of the source' });
    const verdict = (offset: number) => recent.getByRole('row').filter({ has: page.getByText(`offset ${offset}`, { exact: true }) }).getByRole('cell').nth(2);
    await expect.poll(() => verdict(1).textContent(), WAIT).toBe('kept');
    expect(await verdict(2).textContent()).toBe('filtered out');
    expect(await verdict(3).textContent()).toBe('Filter failed: path "level" not found in the body.');
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot(page, 'preview-filter');
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('shows on the statistics page how many records the filter skipped', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await svc.until('the sink handled the three records', async () => {
      const s = (await svc.call('GET', `${B()}/sources/logs/sinks/errors/statistics/total`)).json;
      return s.filtered?.count === 1 && s.mappingFailures?.count === 1 ? true : undefined;
    });
    await open(page, 'sources/logs/sinks/errors/statistics');
    const card = page.getByRole('group', { name: /^Filtered/ });
    await card.waitFor(WAIT);
    expect(await card.locator('.value').textContent()).toMatch(/^1\b/);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});
