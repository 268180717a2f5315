/** `svc tui`: the read-only terminal dashboard (@svc/tui, loaded only for this command). */
import { DaemonClient } from '@svc/daemon/client';
import { Command } from 'commander';
import type { App } from '../app.js';
import { CliError } from '../errors.js';
import { action, withAs } from '../options.js';

export function tuiCommand(app: App): Command {
  const tui = withAs(
    new Command('tui').description('read-only terminal dashboard: agents, inbox, conversations, live'),
    'agent to show first (overrides SVC_AGENT)',
  );
  return action(app, tui, async (run) => {
    const stdin = app.io.stdin as (NodeJS.ReadStream & { isTTY?: boolean }) | undefined;
    if (!stdin?.isTTY || !process.stdout.isTTY) {
      throw new CliError('io_error', 'svc tui needs a terminal; for scripts use svc inbox, svc read or svc watch.');
    }
    const { runTui } = await loadTui();
    // no autostart: a dashboard shows a stopped daemon, with the command that starts it
    const agent = run.explicitAgent();
    await runTui({
      source: new DaemonClient({ home: app.home, timeoutMs: 10_000 }),
      ...(agent ? { agent } : {}),
      stdin,
      stdout: process.stdout,
    });
  });
}

/**
 * The terminal UI is an ES module (ink has top-level await) that the CLI bundle leaves out.
 * The bundle runs inside a vm.Script (cli/bin/svc.cjs), where import() has no loader, so
 * the runner lends its own; from the sources (tests, scripts/svc.sh) import() just works.
 */
function loadTui(): Promise<typeof import('@svc/tui')> {
  const viaRunner = (globalThis as { svcImport?: (specifier: string) => Promise<unknown> }).svcImport;
  return viaRunner ? (viaRunner('@svc/tui') as Promise<typeof import('@svc/tui')>) : import('@svc/tui');
}
