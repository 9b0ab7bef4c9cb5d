/**
 * The console in a real browser: sign-in, the token kept out of URLs, write buttons only for a
 * token that may write, and a deleted token sent back to sign-in with a clear message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { VERSION } from '../../src/version.js';
import { launchBrowser, openPage, screenshot, signIn } from './harness.js';

let svc: TestService;
let browser: Browser;

beforeAll(async () => {
  svc = await TestService.start({ args: ['--check-interval', '100ms'] });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
});

describe('the console', () => {
  it('is served at /console and refuses a wrong token with the API\'s message', async () => {
    const { page, errors } = await openPage(browser);
    const res = await page.goto(`${svc.server.address}/console`);
    expect(res?.status()).toBe(200);
    expect(page.url()).toBe(`${svc.server.address}/console/`);
    expect(res?.headers()['content-security-policy']).toContain("default-src 'self'");
    await expect(page.getByRole('heading', { name: 'Sign in to Sluice' }).isVisible()).resolves.toBe(true);
    await page.getByLabel('Storage API token').fill('not-a-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe('Invalid access token');
    expect(errors).toEqual([]);
    await page.context().close();
  });

  it('is where a browser opening / lands, with an icon and no failed request; the API docs are Sluice\'s and link back', async () => {
    const { page, errors } = await openPage(browser);
    const failed: string[] = [];
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
    });
    await page.goto(`${svc.server.address}/`, { waitUntil: 'networkidle' });
    expect(page.url()).toBe(`${svc.server.address}/console/`);
    expect(await page.locator('link[rel="icon"]').getAttribute('href')).toBe('favicon.svg');
    const icon = await page.request.get(`${svc.server.address}/console/favicon.svg`);
    expect([icon.status(), icon.headers()['content-type']]).toEqual([200, 'image/svg+xml']);
    // The JSON answers a browser shows ask for /favicon.ico.
    expect((await page.request.get(`${svc.server.address}/favicon.ico`)).status()).toBe(200);

    await page.goto(`${svc.server.address}/v1/documentation/`, { waitUntil: 'networkidle' });
    expect(await page.title()).toBe(`Sluice ${VERSION} API`);
    expect((await page.locator('.info .version').first().textContent())?.trim()).toBe(VERSION);
    expect(await page.getByRole('link', { name: 'web console' }).getAttribute('href')).toBe('/console/');
    // Swagger UI's inline styles are allowed: no CSP violation, and nothing failed to load.
    expect(errors).toEqual([]);
    expect(failed).toEqual([]);
    await page.context().close();
  });

  it('signs in with the master token, keeps it out of the URL, and creates a source', async () => {
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, MASTER_TOKEN);
    expect(page.url()).not.toContain(MASTER_TOKEN);
    expect(await page.evaluate("sessionStorage.getItem('sluice.token')")).toBe(MASTER_TOKEN);
    await page.getByText('New source').click();
    await page.getByLabel('Name').fill('Web Shop');
    await page.getByRole('button', { name: 'Create source' }).click();
    await page.waitForURL(/#\/sources\/web-shop$/);
    await page.goto(`${svc.server.address}/console/#/sources`);
    await page.getByRole('link', { name: 'Web Shop' }).waitFor();
    await screenshot(page, 'sources');
    expect(errors).toEqual([]);
    await page.context().close();
  });

  it('shows a read-only token everything it may read and no write button; a deleted token returns to sign-in', async () => {
    const created = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'viewer', bucketPermissions: {} } });
    expect(created.status).toBe(201);
    const { page, errors } = await openPage(browser);
    await signIn(page, svc.server.address, created.json.token);
    await page.getByRole('link', { name: 'Web Shop' }).waitFor();
    expect(await page.getByText('read-only').isVisible()).toBe(true);
    expect(await page.getByText('New source').count()).toBe(0);
    expect(await page.getByRole('button', { name: /create|delete|disable|rotate/i }).count()).toBe(0);

    expect((await svc.call('DELETE', `/v2/storage/tokens/${created.json.id}`)).status).toBe(204);
    // The next call of the page (the list polls every 5 s) meets a 401: back to sign-in, with why.
    await page.getByRole('heading', { name: 'Sign in to Sluice' }).waitFor({ timeout: 15_000 });
    expect(await page.getByRole('alert').textContent()).toMatch(/no longer valid/);
    expect(await page.evaluate("sessionStorage.getItem('sluice.token')")).toBeNull();
    expect(errors).toEqual([]);
    await page.context().close();
  }, 30_000);
});
