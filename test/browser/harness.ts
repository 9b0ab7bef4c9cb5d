/**
 * The console's browser tests: a real service (TestService, in this process) and Debian's
 * chromium driven by playwright-core through its executablePath (scripts/ensure-chromium.sh
 * installs it; playwright's own browser download cannot reach the network here). Flags as the
 * machine's probe found them to work: no sandbox (root), no GPU, no background networking.
 */
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.SLUICE_CHROMIUM ?? '/usr/bin/chromium';
/**
 * Where the screenshots go: a temporary folder on every run (taking them still renders each
 * page at 1280x800), docs/screenshots with `npm run screenshots` (the README's pictures), so a
 * test run does not leave the checked-in pictures modified.
 */
export const SCREENSHOTS = process.env.SLUICE_SCREENSHOTS_DIR ? resolve(process.env.SLUICE_SCREENSHOTS_DIR) : join(tmpdir(), 'sluice-screenshots');

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/** A new page at 1280x800 whose console errors fail the test (collected in `errors`). */
export async function openPage(browser: Browser, viewport = { width: 1280, height: 800 }): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport, timezoneId: 'Europe/Prague', locale: 'en-GB' });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    // A failed fetch of an API call the page handles (401, 4xx) is the browser's own log line, not a page error.
    if (msg.type() === 'error' && !/Failed to load resource/.test(msg.text())) errors.push(`console: ${msg.text()}`);
  });
  return { page, errors };
}

/** Signs in with `token` on the console of `base` and waits for the first page. */
export async function signIn(page: Page, base: string, token: string): Promise<void> {
  await page.goto(`${base}/console/`);
  await page.getByLabel('Storage API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

/** A screenshot for the README, under docs/screenshots/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}
