/**
 * `svc desktop` where no Electron exists: the real CLI (in-process) asks a real daemon for
 * the dashboard and starts Chromium as an app window with its own profile. The test looks
 * into that window through its DevTools port: the one-time link was redeemed (the window
 * is on the dashboard's origin, signed in) and the page rendered.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '@svc/cli';
import { until } from '@svc/test-harness';
import { CHROMIUM, CHROMIUM_FLAGS, haveChromium } from '@svc/test-harness/browser';
import { startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let d: TestDaemon;
let pid: number | undefined;

/** `svc …` in-process against the test's daemon; stdout parsed as JSON. */
async function svcJson(
  argv: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; body: Record<string, unknown> }> {
  let out = '';
  const code = await run(argv, {
    env: { ...process.env, SVC_HOME: d.home, ...env },
    stdout: {
      write: (s: string) => {
        out += s;
      },
    },
    stderr: { write: () => undefined },
  });
  return { code, body: JSON.parse(out) as Record<string, unknown> };
}

describe('svc dashboard (real daemon)', () => {
  beforeAll(async () => {
    d = await startDaemon(); // the page comes from the build (the global setup builds a stale one)
  });
  afterAll(async () => {
    await d?.daemon.close();
  });

  it('prints a one-time link; redeeming it sets the session cookie and gives the page key, which the API then accepts', async () => {
    const { code, body } = await svcJson(['dashboard', '--no-browser', '--json'], { SVC_DASHBOARD_PORT: '0' });
    expect(code).toBe(0);
    const launch = body as { url: string; base_url: string; port: number };
    const first = await fetch(launch.url, { redirect: 'manual' });
    expect(first.status).toBe(303);
    const key = /^\/#key=([A-Za-z0-9_-]{43})$/.exec(first.headers.get('location') ?? '')?.[1];
    expect(key).toBeDefined();
    const cookie = first.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(
      new RegExp(`^svc_dashboard_${launch.port}=[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Strict$`),
    );
    const session = cookie.split(';')[0]!;
    const status = await fetch(`${launch.base_url}/api/v1/status`, {
      headers: { cookie: session, 'x-svc-page-key': key! },
    });
    expect(status.status).toBe(200);
    expect((await fetch(launch.url, { redirect: 'manual' })).status).toBe(401); // once
    const refused = await svcJson(['dashboard', '--no-browser', '--json', '--host', '0.0.0.0']);
    expect(refused).toMatchObject({ code: 1, body: { error: 'dashboard_host_not_loopback' } });
  });
});

describe.skipIf(!haveChromium)('svc desktop (Chromium app window)', () => {
  beforeAll(async () => {
    d = await startDaemon(); // the page comes from the build (the global setup builds a stale one)
  });

  afterAll(async () => {
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
      // the file can be seen before its first line is written
      () => (existsSync(portFile) ? readFileSync(portFile, 'utf8').split('\n')[0] || undefined : undefined),
      45_000,
      'DevToolsActivePort',
    );
    // The window's targets from the DevTools HTTP endpoint (a plain GET: attaching a CDP client
    // to a Chromium under load hung in one run). Signed in: the page is on the dashboard's
    // origin and rendered the empty state of a daemon without agents, whose tab title differs
    // from the signed-out page's ("Sign in · svc dashboard").
    type Target = { type: string; url: string; title: string };
    await until(
      async () => {
        // the port is written before the endpoint answers: a refused connection means not yet
        const targets = (await fetch(`http://127.0.0.1:${port}/json/list`)
          .then((r) => r.json())
          .catch(() => [])) as Target[];
        return targets.find(
          (t) => t.type === 'page' && t.url === `${answer.url}/` && t.title === 'No agents yet · svc dashboard',
        );
      },
      45_000,
      'the app window on the dashboard, signed in',
    );
    // a browser's first start on a busy 2-core machine can take most of a minute
  }, 120_000);
});
