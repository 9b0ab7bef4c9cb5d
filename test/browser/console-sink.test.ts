/**
 * The sink pages in a real browser: the mapping editor (create with a path and a template
 * column, the API's template error next to the template with its line and column, a table that
 * cannot take a column next to that column, reordering with the buttons), the live preview
 * (typed and picked samples, a failing path column), the settings tab, and a read-only token.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Browser, Locator, Page } from 'playwright-core';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { launchBrowser, openPage, screenshot, signIn } from './harness.js';

let svc: TestService;
let browser: Browser;
let readOnlyToken: string;
const B = () => `/v1/branches/${svc.branchId}`;
const WAIT = { timeout: 15_000 };
const BROKEN = 'local name = Body("user.name");\nlocal action = ;\nname + " " + action';
const FIXED = 'local name = Body("user.name");\nlocal action = Body("action");\nname + " " + action';

beforeAll(async () => {
  svc = await TestService.start({ args: ['--check-interval', '100ms'] });
  browser = await launchBrowser();
  expect((await svc.task('POST', `${B()}/sources`, { json: { name: 'Shop', type: 'http' } })).status).toBe('success');
  // Read on the sinks' bucket: the preview renders through the test endpoint, which needs it.
  const token = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'viewer', bucketPermissions: { 'in.c-shop': 'read' } } });
  expect(token.status).toBe(201);
  readOnlyToken = token.json.token;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

const column = (page: Page, n: number): Locator => page.getByRole('group', { name: new RegExp(`^Column ${n}\\b`) });

async function open(page: Page, hash: string): Promise<void> {
  await page.goto(`${svc.server.address}/console/#/${hash}`);
}

/** The value the preview shows for a column (its row in the "Row of ..." table). */
function previewValue(page: Page, name: string): Locator {
  return page.getByRole('table', { name: /^Row of/ }).getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) }).getByRole('cell');
}

describe('the sink pages', () => {
  it('creates a sink with a path and a template column; a template error is shown with its line and column', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await open(page, 'sources/shop/sinks/new');
    await page.getByRole('heading', { name: 'New sink of Shop' }).waitFor(WAIT);

    // Nothing obvious missing goes to the API: the name is asked for here; an empty table id is the default one.
    await page.getByRole('button', { name: 'Create sink' }).click();
    expect(await page.getByText('Enter a name.').isVisible()).toBe(true);
    expect(await page.getByText('Enter the table id, e.g. in.c-events.raw.').count()).toBe(0);

    await page.getByLabel(/^Name\s*1 to 40/).fill('Orders');
    expect(await page.getByLabel(/^Sink id/).getAttribute('placeholder')).toBe('orders');
    // The default table id and the accepted shape are shown; left empty, the sink writes to it.
    expect(await page.getByLabel(/^Table id/).getAttribute('placeholder')).toBe('in.c-shop.orders');
    expect(await page.getByText(/^in\.c-<bucket>\.<table>$/).isVisible()).toBe(true);
    // Three columns to start with (uuid, datetime, body); a path and a template column added.
    await page.getByLabel('Type of the new column').selectOption('path');
    await page.getByRole('button', { name: 'Add column' }).click();
    await column(page, 4).getByLabel('Name', { exact: true }).fill('user_id');
    await column(page, 4).getByLabel(/^Path/).fill('user.id');
    await page.getByLabel('Type of the new column').selectOption('template');
    await page.getByRole('button', { name: 'Add column' }).click();
    await column(page, 5).getByLabel('Name', { exact: true }).fill('label');
    await column(page, 5).getByLabel('Raw string: write a JSON string without its quotes').check();
    const template = column(page, 5).getByRole('textbox', { name: 'Template' });
    await template.fill(BROKEN);

    await page.getByRole('button', { name: 'Create sink' }).click();
    const alert = column(page, 5).getByRole('alert');
    await alert.waitFor(WAIT);
    expect(await alert.textContent()).toBe('Column "label" template is invalid: 2:16 unexpected: ";" while parsing terminal.');
    // The position: a caret marker under the template, the line marked in the gutter, and a way to the spot.
    const marker = column(page, 5).getByLabel('Line 2, column 16');
    expect(await marker.textContent()).toBe('2 | local action = ;\n  |                ^');
    expect(await column(page, 5).locator('.gutter .error-line').textContent()).toBe('2');
    await column(page, 5).getByRole('button', { name: 'Go to line 2, column 16' }).click();
    expect(await template.evaluate((el: any) => [(el.ownerDocument.activeElement === el), el.selectionStart])).toEqual([true, 47]);
    expect((await svc.call('GET', `${B()}/sources/shop/sinks/orders`)).status).toBe(404);
    await template.scrollIntoViewIfNeeded();
    await screenshot(page, 'sink-editor');

    await template.fill(FIXED);
    await page.getByRole('button', { name: 'Create sink' }).click();
    await page.waitForURL(/#\/sources\/shop\/sinks\/orders$/, WAIT);
    await page.getByRole('heading', { name: 'Orders' }).waitFor(WAIT);
    expect(await page.getByRole('link', { name: 'Mapping' }).getAttribute('aria-current')).toBe('page');
    const sink = (await svc.call('GET', `${B()}/sources/shop/sinks/orders`)).json;
    expect(sink.table.tableId).toBe('in.c-shop.orders');
    expect(sink.table.mapping.columns).toEqual([
      { type: 'uuid', name: 'id' },
      { type: 'datetime', name: 'received_at' },
      { type: 'body', name: 'body' },
      { type: 'path', name: 'user_id', path: 'user.id', rawString: false },
      { type: 'template', name: 'label', template: { language: 'jsonnet', content: FIXED }, rawString: true },
    ]);
    // The editor shows what is stored.
    expect(await column(page, 5).getByRole('textbox', { name: 'Template' }).inputValue()).toBe(FIXED);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('previews the sink\'s row as the sample is typed, from a recent record, and a failing path column', async () => {
    // A second sink of the source: the same sample's row is shown for it too.
    expect((await svc.task('POST', `${B()}/sources/shop/sinks`, { json: {
      sinkId: 'audit', name: 'Audit', type: 'table',
      table: { type: 'keboola', tableId: 'in.c-shop.audit', mapping: { columns: [{ type: 'path', name: 'who', path: 'user.name', defaultValue: 'nobody' }] } },
    } })).status).toBe('success');
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await open(page, 'sources/shop/sinks/orders/preview');
    const body = page.getByLabel(/^Event body/);
    await body.waitFor(WAIT);

    await body.fill('{"user": {"id": 7, "name": "Ann"}, "action": "login"}');
    await expect.poll(() => previewValue(page, 'label').textContent(), WAIT).toBe('Ann login');
    expect(await previewValue(page, 'user_id').textContent()).toBe('7');
    expect(await previewValue(page, 'body').textContent()).toBe('{"user": {"id": 7, "name": "Ann"}, "action": "login"}');
    // As you type: the row follows the text.
    await body.press('End');
    await body.press('ArrowLeft');
    await body.press('ArrowLeft');
    await body.pressSequentially('_again', { delay: 20 });
    await expect.poll(() => previewValue(page, 'label').textContent(), WAIT).toBe('Ann login_again');
    await page.getByText('Sink audit').click();
    expect(await page.getByRole('table', { name: 'Sink audit: its row' }).getByRole('cell').textContent()).toBe('"Ann"');

    // One of the source's recent records.
    const path = await svc.ingestPath('shop');
    const sent = await fetch(svc.server.address + path, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Shop': 'berlin' }, body: '{"user":{"id":99,"name":"Bob"},"action":"buy"}' });
    expect(sent.status).toBe(200);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByRole('button', { name: 'Use record 1' }).click();
    await expect.poll(() => previewValue(page, 'label').textContent(), WAIT).toBe('Bob buy');
    expect(await previewValue(page, 'user_id').textContent()).toBe('99');
    expect(await body.inputValue()).toBe('{"user":{"id":99,"name":"Bob"},"action":"buy"}');
    expect(await page.getByLabel(/^Headers/).inputValue()).toContain('X-Shop: berlin');
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot(page, 'preview');

    // A record without the path: the path column's error, in its row.
    await body.fill('{"action": "logout"}');
    const failed = previewValue(page, 'user_id');
    await expect.poll(() => failed.textContent(), WAIT).toMatch(/^Invalid value for column "user_id": path "user\.id" not found/);
    expect(await page.getByRole('alert').first().textContent()).toMatch(/column "user_id"/);
    expect(errors).toEqual([]);
    await page.context().close();
    expect((await svc.task('DELETE', `${B()}/sources/shop/sinks/audit`)).status).toBe('success');
  }, 60_000);

  it('reorders columns with the buttons; a table that cannot take a column is reported next to that column', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await open(page, 'sources/shop/sinks/orders');
    await column(page, 5).waitFor(WAIT);

    await page.getByRole('button', { name: 'Move label up' }).click();
    expect(await column(page, 4).getByLabel('Name', { exact: true }).inputValue()).toBe('label');
    // The keyboard: the moved column's button keeps the focus, Enter moves it again.
    expect(await page.evaluate("document.activeElement?.getAttribute('aria-label')")).toBe('Move label up');
    await page.keyboard.press('Enter');
    expect(await column(page, 3).getByLabel('Name', { exact: true }).inputValue()).toBe('label');
    await page.getByRole('button', { name: 'Move body down' }).click();
    const order = await page.locator('input[name="column-name"]').evaluateAll((els) => els.map((e) => (e as any).value));
    expect(order).toEqual(['id', 'received_at', 'label', 'user_id', 'body']);

    // A table made elsewhere whose "label" is an INTEGER column: the API refuses, the message is next to the column.
    await svc.server.services.tables.ensureTable('in.c-shop.typed', [{ name: 'label', type: 'INTEGER' }], { metadata: {} });
    await page.getByLabel(/^Table id/).fill('in.c-shop.typed');
    await page.getByRole('button', { name: 'Save mapping' }).click();
    await column(page, 3).getByRole('alert').waitFor(WAIT);
    expect(await column(page, 3).getByRole('alert').textContent()).toMatch(/^The column "label" of the table "in\.c-shop\.typed" is INTEGER \(BIGINT\) and the mapping asks for untyped/);

    // The sink's own table takes the new order (its columns keep theirs).
    await page.getByLabel(/^Table id/).fill('in.c-shop.orders');
    await page.getByRole('button', { name: 'Save mapping' }).click();
    await page.getByRole('status').filter({ hasText: /^Saved/ }).waitFor(WAIT);
    const sink = (await svc.call('GET', `${B()}/sources/shop/sinks/orders`)).json;
    expect(sink.table.tableId).toBe('in.c-shop.orders');
    expect(sink.table.mapping.columns.map((c: { name: string }) => c.name)).toEqual(['id', 'received_at', 'label', 'user_id', 'body']);
    expect((await svc.call('GET', '/v2/storage/tables/in.c-shop.orders')).json.columns).toEqual(['id', 'received_at', 'body', 'user_id', 'label']);
    expect(await page.getByRole('button', { name: 'Copy table id' }).isVisible()).toBe(true);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('keeps a typed sink\'s data types and key when its mapping is saved, and previews NULL in a typed column', async () => {
    expect((await svc.task('POST', `${B()}/sources/shop/sinks`, { json: {
      sinkId: 'typed', name: 'Typed', type: 'table',
      table: { type: 'keboola', tableId: 'in.c-shop.typed_sink', mapping: { columns: [
        { type: 'path', name: 'id', path: 'id', dataType: 'STRING', primaryKey: true },
        { type: 'path', name: 'n', path: 'n', dataType: 'INTEGER' },
      ] } },
    } })).status).toBe('success');
    const { page, errors } = await openPage(browser);
    // The sink goes again at the end whatever happens: the other tests preview every sink of the source.
    onTestFinished(async () => void (await svc.task('DELETE', `${B()}/sources/shop/sinks/typed`)));
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await open(page, 'sources/shop/sinks/typed');
    await column(page, 2).waitFor(WAIT);
    await page.locator('textarea[name="description"]').fill('Typed columns, edited in the console.');
    await page.getByRole('button', { name: 'Save mapping' }).click();
    await page.getByRole('status').filter({ hasText: /^Saved/ }).waitFor(WAIT);
    const sink = (await svc.call('GET', `${B()}/sources/shop/sinks/typed`)).json;
    expect(sink.description).toBe('Typed columns, edited in the console.');
    expect(sink.table.mapping.columns).toEqual([
      { type: 'path', name: 'id', path: 'id', rawString: false, dataType: 'STRING', primaryKey: true },
      { type: 'path', name: 'n', path: 'n', rawString: false, dataType: 'INTEGER' },
    ]);

    await page.getByRole('link', { name: 'Preview' }).click();
    // The test endpoint maps the sample through every sink of the source: one the others take too.
    await page.getByLabel(/^Event body/).fill('{"id": "a", "user": {"id": 1, "name": "Ann"}, "action": "view"}');
    await expect.poll(() => previewValue(page, 'id').textContent(), WAIT).toBe('a');
    expect(await previewValue(page, 'n').textContent()).toBe('NULL');
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('sets a column\'s data type and primary key in the editor; the choices follow the column type', async () => {
    const { page, errors } = await openPage(browser);
    onTestFinished(async () => void (await svc.task('DELETE', `${B()}/sources/shop/sinks/keyed`)));
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await open(page, 'sources/shop/sinks/new');
    await page.getByRole('heading', { name: 'New sink of Shop' }).waitFor(WAIT);
    await page.getByLabel(/^Name\s*1 to 40/).fill('Keyed');
    await page.getByLabel(/^Table id/).fill('in.c-shop.keyed');
    await page.getByLabel('Type of the new column').selectOption('path');
    await page.getByRole('button', { name: 'Add column' }).click();
    const added = column(page, 4);
    await added.getByLabel('Name', { exact: true }).fill('user_id');
    await added.getByLabel(/^Path/).fill('user.id');
    // A path column may have any base type, and be part of the key.
    const dataType = added.getByLabel('Data type');
    expect(await dataType.locator('option').allTextContents()).toEqual(['untyped text (never NULL)', 'STRING', 'INTEGER', 'NUMERIC', 'FLOAT', 'BOOLEAN', 'DATE', 'TIMESTAMP', 'JSON']);
    await dataType.selectOption('INTEGER');
    await added.getByLabel(/^Part of the primary key/).check();
    // The body column (3) offers only STRING or JSON and no key; the datetime column (2) STRING or TIMESTAMP.
    expect(await column(page, 3).getByLabel('Data type').locator('option').allTextContents()).toEqual(['untyped text (never NULL)', 'STRING', 'JSON']);
    expect(await column(page, 3).getByLabel(/^Part of the primary key/).count()).toBe(0);
    await column(page, 2).getByLabel('Data type').selectOption('TIMESTAMP');
    await page.getByRole('button', { name: 'Create sink' }).click();
    await page.waitForURL(/#\/sources\/shop\/sinks\/keyed$/, WAIT);
    const sink = (await svc.call('GET', `${B()}/sources/shop/sinks/keyed`)).json;
    expect(sink.table.mapping.columns).toEqual([
      { type: 'uuid', name: 'id' },
      { type: 'datetime', name: 'received_at', dataType: 'TIMESTAMP' },
      { type: 'body', name: 'body' },
      { type: 'path', name: 'user_id', path: 'user.id', rawString: false, dataType: 'INTEGER', primaryKey: true },
    ]);
    const table = (await svc.call('GET', '/v2/storage/tables/in.c-shop.keyed')).json;
    expect(table.primaryKey).toEqual(['user_id']);
    // The editor shows what is stored; a column type that cannot have the data type drops it.
    const saved = column(page, 4);
    expect(await saved.getByLabel('Data type').inputValue()).toBe('INTEGER');
    expect(await saved.getByLabel(/^Part of the primary key/).isChecked()).toBe(true);
    await saved.locator('select[name="column-type"]').selectOption('body');
    expect(await saved.getByLabel('Data type').inputValue()).toBe('');
    expect(await saved.getByLabel(/^Part of the primary key/).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('changes a setting: the API\'s validation message next to it, then marked overridden, and reset', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await open(page, 'sources/shop/sinks/orders/settings');
    const key = 'storage.level.staging.upload.trigger.interval';
    const row = page.getByRole('row').filter({ hasText: key });
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain('a duration (e.g. 500ms, 30s, 1m30s) from 1s to 30m; required');
    expect(await row.getByText('default', { exact: true }).isVisible()).toBe(true);

    const input = page.getByLabel(`Value of ${key}`);
    expect(await input.inputValue()).toBe('30s');
    await input.fill('100ms');
    await page.getByRole('button', { name: `Save ${key}` }).click();
    await row.getByRole('alert').waitFor(WAIT);
    expect(await row.getByRole('alert').textContent()).toBe(`- "${key}" must be 1s or greater.`);

    await input.fill('1s');
    await page.getByRole('button', { name: `Save ${key}` }).click();
    await row.getByText('overridden (sink)').waitFor(WAIT);
    expect(await row.getByRole('alert').count()).toBe(0);
    const settings = (await svc.call('GET', `${B()}/sources/shop/sinks/orders/settings`)).json.settings;
    expect(settings.find((s: { key: string }) => s.key === key)).toMatchObject({ value: '1s', overwritten: true });

    await page.getByRole('button', { name: `Reset ${key}` }).click();
    await row.getByText('default', { exact: true }).waitFor(WAIT);
    expect(await input.inputValue()).toBe('30s');
    // Set again for the rest of the file.
    await input.fill('1s');
    await page.getByRole('button', { name: `Save ${key}` }).click();
    await row.getByText('overridden (sink)').waitFor(WAIT);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('shows a read-only token the editor, the preview and the settings without any write button', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, readOnlyToken);
    await open(page, 'sources/shop/sinks/orders');
    await column(page, 5).waitFor(WAIT);
    expect(await page.getByText('This token can read the sink, not change it.').isVisible()).toBe(true);
    expect(await page.getByRole('textbox', { name: 'Template' }).inputValue()).toBe(FIXED);
    expect(await page.getByRole('textbox', { name: 'Template' }).getAttribute('readonly')).not.toBeNull();
    expect(await page.getByLabel(/^Table id/).getAttribute('readonly')).not.toBeNull();
    expect(await page.getByRole('button').filter({ hasText: /save|create|add column|up|down|remove|delete|disable|enable/i }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /move|remove|save|delete|disable/i }).count()).toBe(0);

    // The preview needs read on the sinks' buckets, no write permission.
    await page.getByRole('link', { name: 'Preview' }).click();
    await page.getByLabel(/^Event body/).fill('{"user": {"id": 1, "name": "Cy"}, "action": "view"}');
    await expect.poll(() => previewValue(page, 'label').textContent(), WAIT).toBe('Cy view');

    await page.getByRole('link', { name: 'Settings' }).click();
    const row = page.getByRole('row').filter({ hasText: 'storage.level.staging.upload.trigger.interval' });
    await row.getByText('overridden (sink)').waitFor(WAIT);
    expect(await page.getByRole('button', { name: /^(Save|Reset) / }).count()).toBe(0);
    expect(await page.getByRole('textbox').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('fits a phone: the editor at 390 px has no horizontal scroll', async () => {
    const { page, errors } = await openPage(browser, { width: 390, height: 800 });
    await signIn(page, svc.server.address, MASTER_TOKEN);
    await open(page, 'sources/shop/sinks/orders');
    await column(page, 5).waitFor(WAIT);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(await page.getByRole('button', { name: 'Move label down' }).isVisible()).toBe(true);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});
