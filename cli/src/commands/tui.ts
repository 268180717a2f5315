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
async function loadTui(): Promise<typeof import('@svc/tui')> {
  const viaRunner = (globalThis as { svcImport?: (specifier: string) => Promise<unknown> }).svcImport;
  // Ink reads CI / CONTINUOUS_INTEGRATION once, when it loads, and in "CI mode" draws
  // nothing until exit: a blank screen for someone whose shell sets CI. This command has
  // already checked it owns a terminal, so the markers are hidden while the module loads.
  const hidden = hideCiMarkers();
  try {
    return await (viaRunner ? (viaRunner('@svc/tui') as Promise<typeof import('@svc/tui')>) : import('@svc/tui'));
  } finally {
    hidden.restore();
  }
}

const CI_MARKERS = ['CI', 'CONTINUOUS_INTEGRATION'] as const;

/** Removes the CI markers from process.env; restore() puts back the values it removed. */
function hideCiMarkers(env: NodeJS.ProcessEnv = process.env): { restore(): void } {
  const saved = CI_MARKERS.filter((k) => k in env).map((k) => [k, env[k]] as const);
  for (const [k] of saved) delete env[k];
  return {
    restore: () => {
      for (const [k, v] of saved) env[k] = v;
    },
  };
}
