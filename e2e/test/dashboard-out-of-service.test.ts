/**
 * The dashboard page in real Chromium against a daemon that keeps two agents out of
 * service: zed's archive was written by a newer svc, yan's agent.json is damaged. Chosen
 * in the picker, each gets a banner that names the agent, the code, the file and what to
 * do, and no view of its archive pretends to load; ann, the machine's other agent, shows
 * as usual. Screenshots, light and dark, go to .tmp/dashboard-screenshots (the one
 * docs/dashboard.md shows also to docs/screenshots with SVC_UPDATE_SCREENSHOTS=1), as
 * dashboard.test.ts does.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { haveChromium, launchBrowser } from '@svc/test-harness/browser';
import { agentFile, homeWithAgents, startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SHOTS = join(ROOT, '.tmp', 'dashboard-screenshots');
const DOCS_SHOTS = join(ROOT, 'docs', 'screenshots');
/** the shots docs/dashboard.md shows (the others are for looking at a run) */
const IN_DOCS = new Set(['agent-out-of-service']);

let d: TestDaemon | undefined;
let home: string;
let file: string;
let config: string;
let browser: BrowserContext | undefined;
let page: Page;

async function shot(name: string): Promise<void> {
  // nothing may stick out sideways: a wider document than the window means something overflows
  const overflow = (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
  expect(overflow, `${name}: page wider than the window`).toBeLessThanOrEqual(0);
  await page.mouse.move(1, 700);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    const path = join(SHOTS, `${name}-${scheme}.png`);
    await page.screenshot({ path });
    if (process.env.SVC_UPDATE_SCREENSHOTS === '1' && IN_DOCS.has(name)) {
      copyFileSync(path, join(DOCS_SHOTS, `${name}-${scheme}.png`));
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
}

describe.skipIf(!haveChromium)('the dashboard with an agent out of service', () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    if (process.env.SVC_UPDATE_SCREENSHOTS === '1') mkdirSync(DOCS_SHOTS, { recursive: true });
    // a later svc ran on this home and moved zed's archive to a schema this one does not know;
    // yan's agent.json is cut short
    home = await homeWithAgents('svc-dashboard-unusable-', { ann: 'ok', yan: 'config-damaged', zed: 'archive-newer' });
    config = agentFile(home, 'yan', 'agent.json');
    file = agentFile(home, 'zed', 'archive.db');
    [d, browser] = await Promise.all([startDaemon(home), launchBrowser()]);
    page = browser.pages()[0] ?? (await browser.newPage());
    await page.goto((await d.client.openDashboard({ port: 0 })).url);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await d?.daemon.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  it('zed chosen: a banner names it, the code, the file and what to do; ann shows as usual', async () => {
    await page.getByRole('heading', { name: 'Inbox zero' }).waitFor();
    const picker = page.getByLabel('Agent');
    expect(await picker.inputValue()).toBe('ann');
    await picker.selectOption('zed');
    const banner = page.getByRole('alert').filter({ hasText: 'zed is out of service' });
    await banner.waitFor();
    const text = (await banner.textContent()) ?? '';
    expect(text).toContain('zed is out of service: its archive cannot be used (archive_unusable).');
    expect(text).toContain(`The archive ${file} was written by a newer svc`);
    expect(text).toContain('then restart the daemon (svc stop, then svc start -b).');
    // the header says it too, in place of the relay session
    await page.locator('header').getByText('out of service').waitFor();
    // its inbox is not shown as empty, nor as a failure to retry: the view says why there is nothing
    await page.getByRole('heading', { name: 'Nothing of zed to show' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Inbox zero' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Try again' }).count()).toBe(0);
    expect(await page.getByRole('alert').count()).toBe(1); // the reason once, in the banner
    await shot('agent-out-of-service');
    // narrow: the banner and its long file name stay inside the window
    await page.setViewportSize({ width: 420, height: 800 });
    await banner.waitFor();
    await shot('agent-out-of-service-narrow');
    await page.setViewportSize({ width: 1280, height: 800 });
    // the views of the machine still work, and say which agent is out of service
    await page.evaluate(`window.location.hash = '#/agents'`);
    await page.getByTestId('agent-zed').getByText('unusable', { exact: true }).waitFor();
    await page.getByTestId('agent-zed').getByText('unknown (out of service)').waitFor();
    await page.getByTestId('agent-ann').waitFor();
    await shot('agents-out-of-service');
    await page.evaluate(`window.location.hash = '#/inbox'`);

    await picker.selectOption('ann');
    await page.getByRole('heading', { name: 'Inbox zero' }).waitFor();
    await banner.waitFor({ state: 'detached' });
  });

  it('yan, whose agent.json cannot be read, is in the picker: its banner names the file; the Agents view shows why', async () => {
    const picker = page.getByLabel('Agent');
    expect(await picker.locator('option').allTextContents()).toEqual(['ann', 'yan', 'zed']);
    await picker.selectOption('yan');
    const banner = page.getByRole('alert').filter({ hasText: 'yan is out of service' });
    await banner.waitFor();
    const text = (await banner.textContent()) ?? '';
    expect(text).toContain('yan is out of service: its configuration cannot be read (config_invalid).');
    expect(text).toContain(`The agent config ${config} is damaged`);
    expect(text).toContain(
      'restore it from a backup (the next command for the agent, or svc agent list, finds it repaired (no restart needed)); or give the agent up: svc deregister yan --local',
    );
    await page.getByRole('heading', { name: 'Nothing of yan to show' }).waitFor();
    await shot('agent-config-unusable');
    await page.evaluate(`window.location.hash = '#/agents'`);
    const card = page.getByTestId('agent-yan');
    await card.getByText('unusable', { exact: true }).waitFor();
    expect(await card.textContent()).toContain(`The agent config ${config} is damaged`);
    expect(await page.locator('.card h3').allTextContents()).toEqual(['ann', 'yan', 'zed']);
    await shot('agents-config-unusable');
    await page.evaluate(`window.location.hash = '#/inbox'`);
    await picker.selectOption('ann');
    await banner.waitFor({ state: 'detached' });
  });
});
