/**
 * `svc dashboard`: the daemon serves the dashboard page on loopback; this prints the
 * one-time sign-in link and opens it. `svc desktop`: the same page in the Electron shell,
 * or where none is installed, in a Chromium app window.
 */
import { join } from 'node:path';
import { type DashboardLaunch, isLoopbackHost } from '@svc/daemon/client';
import { Command } from 'commander';
import type { App, Run } from '../app.js';
import { CliError, usageError } from '../errors.js';
import {
  browserPlan,
  CHROMIUM_NAMES,
  chromiumPlan,
  DESKTOP_MAIN,
  electronBinary,
  findOnPath,
  launchFile,
  startWatched,
  unstartable,
} from '../launch.js';
import { action, intParser, withJson, withVerbose } from '../options.js';

export const DEFAULT_DASHBOARD_PORT = 8191;
const LINK_NOTE = 'The link signs one browser in, once, within 10 minutes; run `svc dashboard` again for another.';

/** Port from --port, else SVC_DASHBOARD_PORT, else 8191; host likewise (loopback only). */
export function dashboardAddress(
  opts: { port?: number; host?: string },
  env: NodeJS.ProcessEnv,
): { host: string; port: number } {
  let port = opts.port;
  if (port === undefined && env.SVC_DASHBOARD_PORT) {
    try {
      port = intParser(0, 65535, 'SVC_DASHBOARD_PORT', false)(env.SVC_DASHBOARD_PORT);
    } catch (err) {
      throw usageError((err as Error).message);
    }
  }
  const host = (opts.host ?? env.SVC_DASHBOARD_HOST ?? '127.0.0.1').trim();
  if (!isLoopbackHost(host)) {
    throw new CliError(
      'dashboard_host_not_loopback',
      `${host} is not a loopback address: the dashboard listens on loopback only (127.0.0.1, ::1 or localhost).`,
    );
  }
  return { host, port: port ?? DEFAULT_DASHBOARD_PORT };
}

async function openDashboard(run: Run, opts: { port?: number; host?: string }): Promise<DashboardLaunch> {
  const address = dashboardAddress(opts, run.env);
  const link = await run.link();
  run.info(`asking the daemon to serve the dashboard on ${address.host}:${address.port}`);
  return link.openDashboard(address);
}

export function dashboardCommand(app: App): Command {
  const cmd = withVerbose(
    withJson(
      new Command('dashboard')
        .description('serve the dashboard page on loopback and open it')
        .option(
          '--port <port>',
          'port (env SVC_DASHBOARD_PORT, fallback 8191; 0 picks a free one)',
          intParser(0, 65535, '--port'),
        )
        .option('--host <host>', 'loopback host only (env SVC_DASHBOARD_HOST, fallback 127.0.0.1)')
        .option('--no-browser', 'do not open a browser'),
    ),
  );
  return action(app, cmd, async (run) => {
    const o = run.opts<{ port?: number; host?: string; browser: boolean }>();
    const launch = await openDashboard(run, o);
    let browser: 'opened' | 'skipped' | 'failed' = 'skipped';
    if (o.browser) {
      const { command } = browserPlan('', run.env);
      try {
        // watched: xdg-open without a display or a browser exits at once with an error
        await startWatched(browserPlan(launchFile(launch.url, join(run.app.home, 'run')), run.env), run.env);
        browser = 'opened';
      } catch (err) {
        browser = 'failed';
        run.app.io.stderr.write(
          `svc: could not start ${command} (${(err as Error).message}); open the link yourself.\n`,
        );
      }
    }
    run.print({ ...launch, browser }, () => `Dashboard: ${launch.url}\n${LINK_NOTE}\n`);
  });
}

export function desktopCommand(app: App): Command {
  const cmd = withVerbose(
    withJson(
      new Command('desktop')
        .description('open the dashboard as a desktop app (Electron if installed, else a Chromium app window)')
        .option(
          '--port <port>',
          'dashboard port (env SVC_DASHBOARD_PORT, fallback 8191)',
          intParser(0, 65535, '--port'),
        )
        .option('--browser <path>', 'the Chromium-family browser for the app window (env SVC_CHROMIUM)')
        .option('--no-electron', 'use the Chromium app window even where Electron is installed'),
    ),
  );
  return action(app, cmd, async (run) => {
    const o = run.opts<{ port?: number; browser?: string; electron: boolean }>();
    const electron = o.electron ? electronBinary(run.env) : undefined;
    const launch = await openDashboard(run, o.port === undefined ? {} : { port: o.port });
    if (electron) {
      const child = await startWatched(
        {
          mode: 'electron',
          command: electron,
          args: [DESKTOP_MAIN],
          env: { SVC_HOME: run.app.home, SVC_DASHBOARD_URL: launch.url },
        },
        run.env,
      );
      run.print(
        { mode: 'electron', pid: child.pid, url: launch.base_url },
        () => `Opened svc desktop (Electron, pid ${child.pid}).\n`,
      );
      return;
    }
    const chromium = o.browser ?? run.env.SVC_CHROMIUM ?? findOnPath(CHROMIUM_NAMES, run.env.PATH);
    if (!chromium) {
      throw new CliError(
        'desktop_no_browser',
        `Neither Electron nor Chromium was found; install chromium (apt-get install chromium) or pass --browser PATH. Meanwhile the dashboard is at ${launch.base_url} (run \`svc dashboard\`).`,
      );
    }
    const plan = chromiumPlan(
      launchFile(launch.url, join(run.app.home, 'run')),
      chromium,
      join(run.app.home, 'desktop', 'chromium-profile'),
      run.env.SVC_DESKTOP_BROWSER_FLAGS,
    );
    let child: Awaited<ReturnType<typeof startWatched>>;
    try {
      const problem = unstartable(chromium, run.env.PATH);
      if (problem) throw new Error(problem);
      child = await startWatched(plan, run.env);
    } catch (err) {
      throw new CliError(
        'desktop_no_browser',
        `Could not start ${chromium}: ${(err as Error).message}. Meanwhile the dashboard is at ${launch.base_url} (run \`svc dashboard\`).`,
        { cause: err },
      );
    }
    run.print(
      { mode: 'chromium', pid: child.pid, url: launch.base_url, profile: plan.profile },
      () => `Opened the svc dashboard in a Chromium app window (pid ${child.pid}); profile ${plan.profile}.\n`,
    );
  });
}
