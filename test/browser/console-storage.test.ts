/**
 * The console's tables, jobs, configurations and tokens pages in a real browser: the table page
 * (schema, preview, export with its download, SQL and the API's refusal of a write), running a
 * job and following its log, killing a running job, configuration versions and rollback, a
 * scoped token shown once and deleted, a sink's token kept, and a read-only token's view.
 */
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { launchBrowser, openPage, screenshot, signIn } from './harness.js';

const WAIT = { timeout: 20_000 };
const TABLE = 'in.c-shop.orders';
const TYPED_TABLE = 'in.c-shop.invoices';
const ROWS = [
  ['1', 'Alice', '10.50'],
  ['2', 'Bob, "the builder"', '7'],
  ['3', 'multi\nline', '0'],
];

let svc: TestService;
let browser: Browser;
let echoConfigId: string;

beforeAll(async () => {
  svc = await TestService.start({ args: ['--check-interval', '100ms', '--job-workers', '2'] });
  browser = await launchBrowser();
  const tables = svc.server.services.tables;
  await tables.ensureTable(TABLE, [{ name: 'id' }, { name: 'name' }, { name: 'amount' }], { metadata: {} });
  await tables.insertRows(TABLE, ROWS);
  await tables.ensureTable(TYPED_TABLE, [{ name: 'order_id', type: 'INTEGER' }, { name: 'total', type: 'NUMERIC' }, { name: 'note' }], { primaryKey: ['order_id'], metadata: {} });
  const created = await svc.call('POST', '/v2/storage/components/sluice.echo/configs', {
    json: { name: 'Echo', configuration: { parameters: { destination: 'in.c-echo.out', a: '1' } } },
  });
  expect(created.status).toBe(201);
  echoConfigId = created.json.id;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

async function open(path: string, token = MASTER_TOKEN): Promise<{ page: Page; errors: string[] }> {
  const opened = await openPage(browser);
  await signIn(opened.page, svc.server.address, token);
  await opened.page.goto(`${svc.server.address}/console/#/${path}`);
  opened.page.on('dialog', (dialog) => void dialog.accept());
  return opened;
}

describe('the console\'s storage pages', () => {
  it('lists buckets and tables, and shows a table\'s schema, preview, export and SQL', async () => {
    const { page, errors } = await open('tables');
    await page.getByRole('heading', { name: 'in.c-shop' }).waitFor(WAIT);
    await page.getByRole('link', { name: 'orders' }).click();
    await page.waitForURL(/#\/tables\/in\.c-shop\.orders$/);

    // Schema and the parsed CSV preview (a comma, quotes and a line break inside values).
    const schema = page.locator('section', { has: page.getByRole('heading', { name: 'Schema' }) });
    await schema.getByRole('cell', { name: 'amount' }).waitFor(WAIT);
    expect(await schema.locator('tbody tr').count()).toBe(3);
    const preview = page.getByRole('table', { name: 'Data preview' });
    await preview.getByRole('cell', { name: 'Bob, "the builder"' }).waitFor(WAIT);
    expect(await preview.locator('tbody tr').count()).toBe(3);
    expect(await preview.locator('tbody tr').nth(2).locator('td').nth(1).textContent()).toBe('multi\nline');
    expect(await page.getByText('3 of 3 rows').isVisible()).toBe(true);

    // Export and SQL are a click away above the preview.
    await page.getByRole('button', { name: 'Go to SQL' }).click();
    await expect.poll(() => page.getByLabel('SQL query').isVisible()).toBe(true);
    // Scrolled down to it (as far as the page goes): its heading is in the window.
    expect(await page.evaluate('window.scrollY')).toBeGreaterThan(0);
    expect(await page.evaluate("document.getElementById('sql').getBoundingClientRect().top < window.innerHeight")).toBe(true);

    // Export to gzipped CSV: the job's progress, then a link to the signed URL.
    await page.getByRole('button', { name: 'Export', exact: true }).click();
    const status = page.getByRole('status').filter({ hasText: 'Export job' });
    await status.waitFor(WAIT);
    await status.getByText('3 rows exported.').waitFor(WAIT);
    const link = page.getByRole('link', { name: /^Download / });
    await link.waitFor(WAIT);
    const url = new URL((await link.getAttribute('href'))!);
    expect(url.searchParams.get('signature')).toBeTruthy();
    expect(url.href).not.toContain(MASTER_TOKEN);
    // The signed URL names the public API URL (https://api.test here): fetch its path from the test server.
    const file = await fetch(svc.server.address + url.pathname + url.search);
    expect(file.status).toBe(200);
    const csv = gunzipSync(Buffer.from(await file.arrayBuffer())).toString('utf8');
    expect(csv).toContain('"Bob, ""the builder"""');
    expect(csv.split('\n')[0]).toContain('amount');

    // SQL: the prefilled SELECT runs and shows rows.
    const box = page.getByLabel('SQL query');
    expect(await box.inputValue()).toBe('SELECT * FROM "in.c-shop"."orders" LIMIT 100');
    await page.getByRole('button', { name: 'Run query' }).click();
    const result = page.getByRole('table', { name: 'Query result' });
    await result.getByRole('cell', { name: 'Alice' }).waitFor(WAIT);
    expect(await result.locator('tbody tr').count()).toBe(3);
    await page.getByText('3 rows (').waitFor(WAIT);
    await page.evaluate('scrollTo(0, 0)');
    await screenshot(page, 'tables');

    // One row is "1 row".
    await box.fill('SELECT count(*) AS n FROM "in.c-shop"."orders"');
    await page.getByRole('button', { name: 'Run query' }).click();
    await page.getByText(/^1 row \(/).waitFor(WAIT);

    // A statement that writes: the API's 400 message next to the box.
    await box.fill('DELETE FROM "in.c-shop"."orders"');
    await page.getByRole('button', { name: 'Run query' }).click();
    const alert = page.locator('section.sql').getByRole('alert');
    await alert.waitFor(WAIT);
    const api = await svc.call('POST', '/v2/storage/sql', { json: { query: 'DELETE FROM "in.c-shop"."orders"' } });
    expect(api.status).toBe(400);
    expect(await alert.textContent()).toBe(api.json.error);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('shows a typed table\'s column types and primary key', async () => {
    const { page, errors } = await open(`tables/${TYPED_TABLE}`);
    const schema = page.locator('section', { has: page.getByRole('heading', { name: 'Schema' }) });
    await schema.getByRole('cell', { name: 'order_id' }).waitFor(WAIT);
    const row = (name: string) => schema.locator('tbody tr', { has: page.getByRole('cell', { name, exact: true }) });
    expect(await row('order_id').locator('td').nth(2).textContent()).toBe('INTEGER');
    expect(await row('order_id').locator('td').nth(3).textContent()).toBe('key');
    expect(await row('total').locator('td').nth(2).textContent()).toBe('NUMERIC');
    expect(await row('total').locator('td').nth(3).textContent()).toBe('');
    // An untyped column of a typed table: its base type is STRING, shown as the table detail says.
    expect(await row('note').locator('td').nth(2).textContent()).toMatch(/^(STRING|string)$/);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('runs a job of a configuration and follows its log until it succeeds', async () => {
    const { page, errors } = await open('jobs');
    await page.getByText('Run a job').click();
    const select = page.getByRole('combobox', { name: 'Configuration to run' });
    await select.locator('option', { hasText: `Echo (${echoConfigId})` }).waitFor({ state: 'attached', ...WAIT });
    await select.selectOption({ label: `Echo (${echoConfigId})` });
    await page.getByRole('button', { name: 'Run job' }).click();
    await page.waitForURL(/#\/jobs\/\d+$/, WAIT);
    const jobId = page.url().split('/').pop()!;
    const log = page.getByRole('log', { name: 'Job log' });
    await log.getByText('Parameter "a" written.').waitFor(WAIT);
    await page.locator('h1 .badge', { hasText: 'success' }).waitFor(WAIT);
    await page.getByText('Echoed 2 parameters.').waitFor(WAIT);
    await page.getByRole('link', { name: 'in.c-echo.out' }).waitFor(WAIT);
    expect(await page.getByRole('button', { name: 'Kill' }).count()).toBe(0);
    const api = await svc.call('GET', `/jobs/${jobId}`);
    expect(api.json.status).toBe('success');
    await screenshot(page, 'job');

    // A line posted through the API says who posted it: it cannot pass for one of the job's own.
    const posted = await svc.call('POST', '/v2/storage/events', { json: { component: 'sluice.echo', message: 'A note from outside.', runId: api.json.runId } });
    expect(posted.status).toBe(201);
    await page.reload();
    const note = log.getByRole('row').filter({ hasText: 'A note from outside.' });
    await note.waitFor(WAIT);
    expect(await note.textContent()).toContain('posted by token Master Token (1)');
    expect(await log.getByRole('row').filter({ hasText: 'Parameter "a" written.' }).textContent()).not.toContain('posted by');

    // The list shows it, newest first, and filters by status.
    await page.goto(`${svc.server.address}/console/#/jobs?status=success`);
    await page.getByRole('link', { name: jobId, exact: true }).waitFor(WAIT);
    await page.goto(`${svc.server.address}/console/#/jobs?status=error`);
    await page.getByText('No job matches these filters.').waitFor(WAIT);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('kills a running job', async () => {
    const created = await svc.call('POST', '/v2/storage/components/sluice.echo/configs', {
      json: { name: 'Sleeper', configuration: { parameters: { sleepSeconds: 60 } } },
    });
    const job = await svc.call('POST', '/jobs', { json: { component: 'sluice.echo', config: created.json.id } });
    expect(job.status).toBe(201);
    const { page, errors } = await open(`jobs/${job.json.id}`);
    await page.locator('h1 .badge', { hasText: 'processing' }).waitFor(WAIT);
    await page.getByRole('log', { name: 'Job log' }).getByText('Sleeping 60 s.').waitFor(WAIT);
    await page.getByRole('button', { name: 'Kill' }).click();
    await page.locator('h1 .badge', { hasText: 'terminated' }).waitFor(WAIT);
    await page.getByRole('log', { name: 'Job log' }).getByText(`Job "${job.json.id}" was terminated.`).waitFor(WAIT);
    expect(await page.getByRole('button', { name: 'Kill' }).count()).toBe(0);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('lists configurations, shows versions and rolls back, and runs one', async () => {
    const path = `/v2/storage/components/sluice.echo/configs/${echoConfigId}`;
    const changed = await svc.call('PUT', path, { json: { configuration: { parameters: { destination: 'in.c-echo.out', a: '2' } } } });
    expect(changed.status).toBe(200);
    const { page, errors } = await open('configurations');
    await page.getByRole('link', { name: 'Echo', exact: true }).click();
    await page.waitForURL(/#\/configurations\/sluice\.echo\//);
    const versions = page.locator('section', { has: page.getByRole('heading', { name: 'Versions' }) });
    await versions.getByRole('cell', { name: 'Configuration updated' }).waitFor(WAIT);
    await versions.getByRole('cell', { name: 'Configuration created' }).waitFor(WAIT);
    await page.getByText('"a": "2"').waitFor(WAIT);

    // View version 1 against the current one, then roll back to it.
    await page.getByRole('button', { name: 'View version 1' }).click();
    const diff = page.getByRole('region', { name: 'Version 1 compared with the current version' });
    await diff.locator('.del', { hasText: '"a": "1"' }).waitFor(WAIT);
    await diff.locator('.add', { hasText: '"a": "2"' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'Roll back to version 1' }).click();
    await versions.getByRole('cell', { name: 'Rollback to version 1' }).waitFor(WAIT);
    await page.locator('pre', { hasText: '"a": "1"' }).waitFor(WAIT);
    expect((await svc.call('GET', path)).json.version).toBe(3);

    // Run: a link to the new job.
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.getByRole('link', { name: 'follow it' }).click();
    await page.waitForURL(/#\/jobs\/\d+$/, WAIT);
    await page.locator('h1 .badge', { hasText: 'success' }).waitFor(WAIT);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('creates a scoped token shown once, deletes it, and keeps a sink\'s token', async () => {
    expect((await svc.task('POST', '/v1/branches/default/sources', { json: { name: 'S', type: 'http' } })).status).toBe('success');
    const sink = await svc.task('POST', '/v1/branches/default/sources/s/sinks', {
      json: { name: 'K', type: 'table', table: { type: 'keboola', tableId: 'in.c-s.k', mapping: { columns: [{ type: 'uuid', name: 'id' }, { type: 'body', name: 'body' }] } } },
    });
    expect(sink.status).toBe('success');

    const { page, errors } = await open('tokens');
    const sinkRow = page.getByRole('row', { name: /\[_internal\] Stream Sink s\/k/ });
    await sinkRow.waitFor(WAIT);
    expect(await sinkRow.getByRole('button', { name: /delete/i }).count()).toBe(0);
    expect(await sinkRow.getByText('managed by its sink').isVisible()).toBe(true);

    await page.getByText('New token').click();
    await page.getByLabel('Description').fill('Console reader');
    await page.getByLabel('in.c-shop').selectOption('read');
    await page.getByLabel('Expires in', { exact: true }).fill('2');
    await page.getByRole('button', { name: 'Create token' }).click();
    const once = page.getByRole('region', { name: 'New token' });
    await once.waitFor(WAIT);
    expect(await once.textContent()).toContain('it is not shown again');
    const secret = await once.getByRole('textbox', { name: 'New token' }).inputValue();
    const verify = await svc.call('GET', '/v2/storage/tokens/verify', { token: secret });
    expect(verify.status).toBe(200);
    expect(verify.json.bucketPermissions).toEqual({ 'in.c-shop': 'read' });
    expect(verify.json.expires).not.toBeNull();
    expect(page.url()).not.toContain(secret);
    const row = page.getByRole('row', { name: /Console reader/ });
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain('in.c-shop: read');
    await screenshot(page, 'tokens');

    await page.getByRole('button', { name: 'I have copied it' }).click();
    expect(await page.getByRole('region', { name: 'New token' }).count()).toBe(0);
    await row.getByRole('button', { name: 'Delete token Console reader' }).click();
    await row.waitFor({ state: 'detached', ...WAIT });
    expect((await svc.call('GET', '/v2/storage/tokens/verify', { token: secret })).status).toBe(401);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('shows a read-only token tables, jobs and configurations without write buttons', async () => {
    const created = await svc.call('POST', '/v2/storage/tokens', {
      json: { description: 'reader', bucketPermissions: { 'in.c-shop': 'read' }, componentAccess: ['sluice.echo'] },
    });
    expect(created.status).toBe(201);
    const token = created.json.token as string;
    const writeButtons = /^(run|run job|kill|roll back.*|delete.*|create token)$/i;

    const { page, errors } = await open('tables', token);
    await page.getByRole('link', { name: 'orders' }).waitFor(WAIT);
    expect(await page.locator('h2 code', { hasText: /^in\.c-s$/ }).count()).toBe(0);
    expect(await page.locator('h2 code', { hasText: /^in\.c-shop$/ }).count()).toBe(1);
    await page.getByRole('link', { name: 'orders' }).click();
    await page.getByRole('table', { name: 'Data preview' }).getByRole('cell', { name: 'Alice' }).waitFor(WAIT);

    await page.goto(`${svc.server.address}/console/#/jobs`);
    await page.getByRole('link', { name: echoConfigId }).first().waitFor(WAIT);
    expect(await page.getByText('Run a job').count()).toBe(0);
    await page.getByRole('link', { name: /^\d+$/ }).first().click();
    await page.getByRole('heading', { name: 'Log' }).waitFor(WAIT);
    expect(await page.getByRole('button', { name: writeButtons }).count()).toBe(0);

    await page.goto(`${svc.server.address}/console/#/configurations`);
    await page.getByRole('link', { name: 'Echo', exact: true }).click();
    await page.getByRole('heading', { name: 'Versions' }).waitFor(WAIT);
    await page.getByRole('button', { name: 'View version 1' }).waitFor(WAIT);
    expect(await page.getByRole('button', { name: writeButtons }).count()).toBe(0);

    await page.goto(`${svc.server.address}/console/#/tokens`);
    await page.getByRole('alert').waitFor(WAIT);
    expect(await page.getByRole('button', { name: writeButtons }).count()).toBe(0);
    expect(await page.getByText('New token').count()).toBe(0);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 60_000);
});
