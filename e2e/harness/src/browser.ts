/**
 * Debian's chromium for browser tests, through playwright-core (no browser download):
 * one browser per test file, with its own temp profile. Tests skip with a reason when
 * /usr/bin/chromium is missing (`bash scripts/setup.sh` installs it).
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
export const haveChromium = existsSync(CHROMIUM);

/** The flags this machine needs: no sandbox (root), no GPU, and nothing that calls out to the network. */
export const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchBrowser(): Promise<BrowserContext> {
  const profile = mkdtempSync(join(tmpdir(), 'svc-chromium-profile-'));
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 800 },
    timezoneId: 'UTC',
    locale: 'en-US',
  });
}
