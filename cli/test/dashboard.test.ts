/** `svc dashboard` and `svc desktop` against a fake daemon link: address rules, output, launching. */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { browserPlan, chromiumPlan, launchFile } from '../src/launch.js';
import { fakeLink, svc, withTempHome } from './helpers.js';

const launch = (input: { host?: string; port?: number } = {}) => ({
  url: `http://127.0.0.1:${input.port}/auth?token=${'t'.repeat(43)}`,
  base_url: `http://127.0.0.1:${input.port}`,
  host: '127.0.0.1',
  port: input.port,
});

describe('svc dashboard', () => {
  it('asks the daemon for 127.0.0.1:8191 by default and prints the link (--json too)', async () => {
    const { link, calls } = fakeLink({ openDashboard: launch });
    const human = await svc(['dashboard', '--no-browser'], { link });
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`Dashboard: http://127.0.0.1:8191/auth?token=`);
    const json = await svc(['dashboard', '--no-browser', '--json'], { link });
    expect(JSON.parse(json.stdout)).toMatchObject({ base_url: 'http://127.0.0.1:8191', browser: 'skipped' });
    expect(calls.filter((c) => c.method === 'openDashboard').map((c) => c.args[0])).toEqual([
      { host: '127.0.0.1', port: 8191 },
      { host: '127.0.0.1', port: 8191 },
    ]);
  });

  it('takes the port and host from the environment, and --port/--host over it', async () => {
    const { link, calls } = fakeLink({ openDashboard: launch });
    const env = { SVC_DASHBOARD_PORT: '9100', SVC_DASHBOARD_HOST: 'localhost' };
    expect((await svc(['dashboard', '--no-browser'], { link, env })).code).toBe(0);
    expect((await svc(['dashboard', '--no-browser', '--port', '9200', '--host', '::1'], { link, env })).code).toBe(0);
    expect(calls.map((c) => c.args[0])).toEqual([
      { host: 'localhost', port: 9100 },
      { host: '::1', port: 9200 },
    ]);
    const bad = await svc(['dashboard', '--no-browser'], { link, env: { SVC_DASHBOARD_PORT: 'eighty' } });
    expect(bad.code).toBe(2);
    // an environment variable is followed by no option: its bad value is just a bad number
    const dashes = await svc(['dashboard', '--no-browser'], { link, env: { SVC_DASHBOARD_PORT: '--x' } });
    expect(dashes.code).toBe(2);
    expect(dashes.stderr).toBe('svc: error: SVC_DASHBOARD_PORT must be a whole number. (validation_failed)\n');
  });

  it.each([['0.0.0.0'], ['192.168.1.20'], ['evil.example'], ['::'], ['127.0.0.1.nip.io']])(
    'refuses the non-loopback host %s before asking the daemon',
    async (host) => {
      const { link, calls } = fakeLink({ openDashboard: launch });
      for (const r of [
        await svc(['dashboard', '--no-browser', '--host', host, '--json'], { link }),
        await svc(['dashboard', '--no-browser'], { link, env: { SVC_DASHBOARD_HOST: host } }),
      ]) {
        expect(r.code).toBe(1);
        expect(r.stdout + r.stderr).toContain('dashboard_host_not_loopback');
      }
      expect(calls).toEqual([]);
    },
  );

  it('opens the link with SVC_BROWSER (the default browser command otherwise)', async () => {
    await withTempHome(async (dir) => {
      const script = join(dir, 'browser.sh');
      const seen = join(dir, 'seen');
      // written whole, then renamed: the test must never read the file half-written
      writeFileSync(script, `#!/bin/sh\nprintf '%s' "$1" > '${seen}.tmp' && mv '${seen}.tmp' '${seen}'\n`);
      chmodSync(script, 0o755);
      const { link } = fakeLink({ openDashboard: launch });
      const r = await svc(['dashboard', '--json'], { link, env: { SVC_BROWSER: script, SVC_HOME: dir } });
      expect(JSON.parse(r.stdout)).toMatchObject({ browser: 'opened' });
      const deadline = Date.now() + 10_000;
      while (!existsSync(seen) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
      // the browser gets a file of this user's (0600) that leads to the link, never the link
      // itself: a command line is readable by every local user
      const url = JSON.parse(r.stdout).url as string;
      const opened = readFileSync(seen, 'utf8');
      expect(opened).toMatch(/^file:\/\//);
      expect(opened).not.toContain(new URL(url).searchParams.get('token'));
      const file = fileURLToPath(opened);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8')).toContain(`content="0;url=${url.replace(/&/g, '&amp;')}"`);
      const missing = await svc(['dashboard'], {
        link,
        env: { SVC_BROWSER: join(dir, 'no-such-browser'), SVC_HOME: dir },
      });
      expect(missing.code).toBe(0); // the link is printed; the owner opens it
      expect(missing.stderr).toContain('open the link yourself');
      // xdg-open on a machine without a display or a browser: it exits at once with an error
      const noDisplay = join(dir, 'xdg-open');
      writeFileSync(noDisplay, '#!/bin/sh\necho "xdg-open: no method available for opening \'$1\'" >&2\nexit 3\n');
      chmodSync(noDisplay, 0o755);
      const headless = await svc(['dashboard', '--json'], { link, env: { SVC_BROWSER: noDisplay, SVC_HOME: dir } });
      expect(headless.code).toBe(0);
      expect(JSON.parse(headless.stdout)).toMatchObject({ browser: 'failed' });
      expect(headless.stderr).toContain('it exited at once (code 3)');
      expect(headless.stderr).toContain('open the link yourself');
    });
  });

  it('SVC_BROWSER may carry arguments (flatpak run …), quoted words, or be a path with spaces', () => {
    expect(browserPlan('file:///x', { SVC_BROWSER: 'flatpak run org.chromium.Chromium' })).toMatchObject({
      command: 'flatpak',
      args: ['run', 'org.chromium.Chromium', 'file:///x'],
    });
    expect(browserPlan('file:///x', { SVC_BROWSER: `"/opt/My Browser/browser" --new-window` })).toMatchObject({
      command: '/opt/My Browser/browser',
      args: ['--new-window', 'file:///x'],
    });
    const dir = mkdtempSync(join(tmpdir(), 'svc browser '));
    const spaced = join(dir, 'my browser');
    writeFileSync(spaced, '#!/bin/sh\n', { mode: 0o755 });
    expect(browserPlan('file:///x', { SVC_BROWSER: spaced })).toMatchObject({ command: spaced, args: ['file:///x'] });
  });
});

describe('svc desktop', () => {
  it('without Electron or Chromium says what to install, and where the dashboard is', async () => {
    const { link } = fakeLink({ openDashboard: launch });
    const r = await svc(['desktop', '--json'], { link, env: { PATH: '/nonexistent' } });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: 'desktop_no_browser' });
    expect(JSON.parse(r.stdout).message).toContain('http://127.0.0.1:8191');
  });

  it('a browser that exits at once with an error is reported, not said to have opened', async () => {
    await withTempHome(async (dir) => {
      const browser = join(dir, 'no-display.sh');
      writeFileSync(browser, '#!/bin/sh\necho "Missing X server or $DISPLAY" >&2\nexit 1\n');
      chmodSync(browser, 0o755);
      const { link } = fakeLink({ openDashboard: launch });
      const r = await svc(['desktop', '--json', '--no-electron', '--browser', browser], {
        link,
        env: { SVC_HOME: dir },
      });
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stdout)).toMatchObject({
        error: 'desktop_no_browser',
        message: expect.stringMatching(/exited at once \(code 1\).*dashboard is at http:\/\/127\.0\.0\.1/),
      });
    });
  });

  it('--browser that cannot be a browser says why in words, not as EACCES or ENOENT', async () => {
    await withTempHome(async (dir) => {
      const { link } = fakeLink({ openDashboard: launch });
      const message = async (browser: string) =>
        JSON.parse(
          (await svc(['desktop', '--json', '--no-electron', '--browser', browser], { link, env: { SVC_HOME: dir } }))
            .stdout,
        ) as { error: string; message: string };
      const missing = join(dir, 'missing');
      expect(await message(missing)).toMatchObject({
        error: 'desktop_no_browser',
        message: expect.stringContaining(`${missing}: no such file`),
      });
      // a directory (as /nonexistent is on some systems: the home of `nobody`) is what spawn calls EACCES
      expect((await message(dir)).message).toMatch(new RegExp(`${dir}: not a file\\.`));
      const plain = join(dir, 'not-executable');
      writeFileSync(plain, '', { mode: 0o644 });
      expect((await message(plain)).message).toContain(`${plain}: not executable`);
      expect((await message('no-such-browser-here')).message).toContain('not found on PATH');
    });
  });

  it('the launch file is 0600 even over a leftover temporary file another user could read', async () => {
    await withTempHome(async (dir) => {
      const run = join(dir, 'run');
      mkdirSync(run, { mode: 0o700 });
      // a crash between write and rename left it, with a loose mode
      writeFileSync(join(run, 'dashboard-launch.html.tmp'), 'old', { mode: 0o644 });
      chmodSync(join(run, 'dashboard-launch.html.tmp'), 0o644);
      const file = fileURLToPath(launchFile('http://127.0.0.1:8191/auth?token=secret', run));
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(readFileSync(file, 'utf8')).toContain('token=secret');
    });
  });

  it('plans a Chromium app window with its own profile', () => {
    const plan = chromiumPlan(
      'http://127.0.0.1:8191/auth?token=x',
      '/usr/bin/chromium',
      '/h/desktop/p',
      ' --headless  --x ',
    );
    expect(plan.args.slice(0, 2)).toEqual(['--app=http://127.0.0.1:8191/auth?token=x', '--user-data-dir=/h/desktop/p']);
    expect(plan.args.slice(-2)).toEqual(['--headless', '--x']);
  });
});
