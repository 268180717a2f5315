/** `svc tui`: the read-only terminal dashboard (@svc/tui, loaded only for this command). */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { DaemonClient } from '@svc/daemon/client';
import { loadSnapshot } from '@svc/tui/model';
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
    // no autostart: a dashboard shows a stopped daemon, with the command that starts it
    const agent = run.explicitAgent();
    const source = new DaemonClient({ home: app.home, timeoutMs: 10_000 });
    // The first snapshot is asked for before the terminal UI loads (synchronously, from its
    // bundle), so the daemon answers meanwhile; one turn of the event loop puts the first
    // request on the socket. The dashboard reports a failure: nothing is left unhandled.
    const initial = loadSnapshot(source, agent);
    initial.catch(() => undefined);
    await nextTurn();
    const { runTui } = await loadTui();
    await runTui({ source, ...(agent ? { agent } : {}), initial, stdin, stdout: process.stdout });
  });
}

type Tui = typeof import('@svc/tui');

/**
 * The terminal UI is not in the CLI bundle: the runner (cli/bin/svc.cjs) runs its own
 * bundle, tui.cjs (Ink, React and yoga in one CommonJS file, React's production build),
 * through a code cache like the CLI's; from the sources (tests, scripts/svc.sh) it is the
 * ES module @svc/tui from node_modules.
 */
async function loadTui(): Promise<Tui> {
  const runBundle = (globalThis as { svcRunBundle?: (name: 'tui') => unknown }).svcRunBundle;
  // Ink reads CI / CONTINUOUS_INTEGRATION once, when it loads, and in "CI mode" draws
  // nothing until exit: a blank screen for someone whose shell sets CI. This command has
  // already checked it owns a terminal, so the markers are hidden while the module loads.
  const hidden = hideCiMarkers();
  try {
    return runBundle ? (runBundle('tui') as Tui) : await import('@svc/tui');
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
