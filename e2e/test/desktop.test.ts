/**
 * `svc desktop` where no Electron exists: the real CLI (in-process) asks a real daemon for
 * the dashboard and starts Chromium as an app window with its own profile. The test looks
 * into that window through its DevTools port: the one-time link was redeemed (the window
 * is on the dashboard's origin, signed in) and the page rendered.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../cli/src/program.js';
import { buildDashboard } from '../../daemon/dashboard/build.mjs';
import { startDaemon, type TestDaemon, until } from '../../daemon/test/helpers.js';
import { CHROMIUM, CHROMIUM_FLAGS, haveChromium } from './browser.js';

let d: TestDaemon;
let pid: number | undefined;
let cdp: Browser | undefined;

describe.skipIf(!haveChromium)('svc desktop (Chromium app window)', () => {
  beforeAll(async () => {
    [d] = await Promise.all([startDaemon(), buildDashboard()]);
  });

  afterAll(async () => {
    await cdp?.close().catch(() => undefined);
    // the window's process group, which this test started through the CLI
    if (pid !== undefined) {
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await d?.daemon.close();
  });

  it('opens the dashboard, signed in, in its own profile', async () => {
    let out = '';
    const code = await run(['desktop', '--json', '--no-electron', '--browser', CHROMIUM], {
      env: {
        ...process.env,
        SVC_HOME: d.home,
        SVC_DASHBOARD_PORT: '0', // a free port: other tests may hold 8191
        SVC_DESKTOP_BROWSER_FLAGS: ['--headless', ...CHROMIUM_FLAGS, '--remote-debugging-port=0'].join(' '),
      },
      stdout: {
        write: (s: string) => {
          out += s;
        },
      },
      stderr: { write: () => undefined },
    });
    expect(code, out).toBe(0);
    const answer = JSON.parse(out) as { mode: string; pid: number; url: string; profile: string };
    pid = answer.pid;
    expect(answer).toMatchObject({ mode: 'chromium', profile: join(d.home, 'desktop', 'chromium-profile') });
    // Chromium writes the DevTools port it picked into the profile
    const portFile = join(answer.profile, 'DevToolsActivePort');
    const port = await until(
      () => (existsSync(portFile) ? readFileSync(portFile, 'utf8').split('\n')[0] : undefined),
      20_000,
      'DevToolsActivePort',
    );
    cdp = await chromium.connectOverCDP(`http://127.0.0.1:${port}`);
    const page = await until(
      () =>
        cdp!
          .contexts()
          .flatMap((c) => c.pages())
          .find((p) => p.url() === `${answer.url}/`),
      20_000,
      'the app window on the dashboard',
    );
    // signed in: a fresh daemon without agents shows its designed empty state, not the sign-in hint
    await page.getByRole('heading', { name: 'No agents on this machine yet' }).waitFor();
    expect(await page.title()).toBe('svc dashboard');
  });
});
