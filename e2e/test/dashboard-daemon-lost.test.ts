/**
 * The dashboard page when its daemon goes away (`svc stop`, a crash): real Chromium, a real
 * daemon with a local agent. The page said "reconnecting" for ever beside a green "relay
 * connected", with the old data and no word of what to do; now, after a few seconds of a
 * stream that does not come back, it says the daemon does not answer and how to return.
 */
import { haveChromium, launchBrowser } from '@svc/test-harness/browser';
import { startDaemon } from '@svc/test-harness/daemon';
import type { BrowserContext } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';

let browser: BrowserContext | undefined;
afterAll(async () => {
  await browser?.close();
});

describe.skipIf(!haveChromium)('the dashboard without its daemon', () => {
  it('says the daemon does not answer, how to start it and get a new link, and that the relay state is unknown', async () => {
    const d = await startDaemon();
    await d.client.registerLocal({ name: 'ann' });
    const launch = await d.client.openDashboard({ port: 0 });
    browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(launch.url);
    await page.getByText('live', { exact: true }).waitFor();
    expect(await page.getByRole('alert').filter({ hasText: 'does not answer' }).count()).toBe(0);
    await d.daemon.close();
    const banner = page.getByRole('alert').filter({ hasText: 'The daemon does not answer.' });
    await banner.waitFor({ timeout: 30_000 });
    expect(await banner.textContent()).toContain('svc start -b');
    expect(await banner.textContent()).toContain('svc dashboard');
    await page.getByText('daemon lost', { exact: true }).waitFor();
    await page.getByText('relay unknown', { exact: true }).waitFor();
  }, 90_000);
});
