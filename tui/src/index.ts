/**
 * `svc tui`: the read-only terminal dashboard. `runTui` renders it on a terminal until the
 * user quits; the CLI loads this module only for that command.
 */
import { type Instance, render, useStdout } from 'ink';
import { createElement, type ReactNode, useEffect } from 'react';
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
 * After each resize, the screen cleared and Ink's last frame drawn on it again, in full:
 * Ink's `write` erases its frame, writes the text given (here the clear) and draws the
 * frame again. Its listener comes after Ink's own (added when render starts), and by then
 * that frame is the one laid out for the new size (see runTui).
 */
function FullScreen(props: { children: ReactNode }): ReactNode {
  const { stdout, write } = useStdout();
  useEffect(() => {
    const redraw = () => write(CLEAR);
    stdout.on('resize', redraw);
    return () => {
      stdout.off('resize', redraw);
    };
  }, [stdout, write]);
  return props.children;
}

/**
 * Renders the dashboard; resolves when the user quits. On a terminal it draws on the
 * alternate screen, and after a resize the whole frame for the new size on a cleared
 * screen. Ink (6) alone does not: on a resize it draws only a frame that changed (a change
 * of height alone left the cleared screen blank), and it first draws the tree React
 * rendered for the old size, laid out at the new width, before React hears of the resize
 * (a state update is not synchronous); on a narrower terminal a box of the old width
 * (the daemon-down box, the agents pane) wrapped onto more lines than Ink then erased, and
 * their tops stayed above the new frame. So `relayout` renders the dashboard for the new
 * size (Ink's rerender is synchronous) before Ink's listener runs, and FullScreen draws
 * the frame on a cleared screen after it. Leaving the alternate screen (on quit, or
 * however the process ends) gives the shell its screen back as it was.
 */
export async function runTui(options: RunTuiOptions): Promise<void> {
  const { stdin, stdout, ...props } = options;
  const out = stdout ?? process.stdout;
  const fullScreen = out.isTTY === true;
  const tree = () =>
    fullScreen ? createElement(FullScreen, null, createElement(Dashboard, props)) : createElement(Dashboard, props);
  const leave = () => out.write(ALT_SCREEN_OFF);
  let app: Instance | undefined;
  // a new element each time: React renders the dashboard again, at the size the terminal has now
  const relayout = () => app?.rerender(tree());
  if (fullScreen) {
    out.write(ALT_SCREEN_ON + CLEAR);
    process.once('exit', leave);
    // before Ink's own resize listener (added by render), which draws the tree it has
    out.on('resize', relayout);
  }
  try {
    app = render(tree(), {
      ...(stdin ? { stdin } : {}),
      stdout: out,
      exitOnCtrlC: true,
    });
    await app.waitUntilExit();
  } finally {
    if (fullScreen) {
      out.off('resize', relayout);
      process.off('exit', leave);
      leave();
    }
  }
}
