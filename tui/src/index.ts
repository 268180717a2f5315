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

/** The terminal's alternate screen (as less and htop use), and clearing it. */
const ALT_SCREEN_ON = '\u001b[?1049h';
/** back to the main screen, the cursor shown (Ink hid it, and its own restore lands on the alternate screen) */
const ALT_SCREEN_OFF = '\u001b[?1049l\u001b[?25h';
const CLEAR = '\u001b[2J\u001b[H';

/**
 * Renders the dashboard; resolves when the user quits. On a terminal it draws on the
 * alternate screen and clears it on every resize: Ink redraws in place by erasing the
 * lines of its last frame, and after the terminal rewraps or scrolls those lines on a
 * resize, pieces of old frames stayed above the new one. Leaving the alternate screen (on
 * quit, or however the process ends) gives the shell its screen back as it was.
 */
export async function runTui(options: RunTuiOptions): Promise<void> {
  const { stdin, stdout, ...props } = options;
  const out = stdout ?? process.stdout;
  const fullScreen = out.isTTY === true;
  const leave = () => out.write(ALT_SCREEN_OFF);
  const clear = () => out.write(CLEAR);
  if (fullScreen) {
    out.write(ALT_SCREEN_ON + CLEAR);
    process.once('exit', leave);
    // before Ink's own resize listener (added by render): the screen is clean when it redraws
    out.on('resize', clear);
  }
  try {
    const app = render(createElement(Dashboard, props), {
      ...(stdin ? { stdin } : {}),
      stdout: out,
      exitOnCtrlC: true,
    });
    await app.waitUntilExit();
  } finally {
    if (fullScreen) {
      out.off('resize', clear);
      process.off('exit', leave);
      leave();
    }
  }
}
