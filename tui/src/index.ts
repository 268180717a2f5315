/**
 * `svc tui`: the read-only terminal dashboard. `runTui` renders it on a terminal until the
 * user quits; the CLI loads this module only for that command.
 */
import { render } from 'ink';
import { createElement } from 'react';
import { Dashboard, type DashboardProps } from './app.js';

export const PACKAGE = '@svc/tui';
export { Dashboard, type DashboardProps } from './app.js';
export { loadSnapshot, type Snapshot, type Source } from './model.js';

export interface RunTuiOptions extends DashboardProps {
  stdin?: NodeJS.ReadStream;
  stdout?: NodeJS.WriteStream;
}

/** Renders the dashboard; resolves when the user quits. */
export async function runTui(options: RunTuiOptions): Promise<void> {
  const { stdin, stdout, ...props } = options;
  const app = render(createElement(Dashboard, props), {
    ...(stdin ? { stdin } : {}),
    ...(stdout ? { stdout } : {}),
    exitOnCtrlC: true,
  });
  await app.waitUntilExit();
}
