/**
 * `svc tui` in a real terminal: tmux (private socket) runs it for bob against his real
 * daemon, with alice on another home and a real relay. It starts while bob's daemon is
 * stopped (the screen says so, with `svc start`), picks the daemon up once it runs, shows
 * alice's message arriving live, and answers `send-keys` (Tab, Enter, Escape, `/` search,
 * `q`). The last screen is written to $SVC_TUI_CAPTURE when that is set (docs/tui.md).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tail, until } from '@svc/test-harness';
import { registerWithCli, stopCliAgents } from '@svc/test-harness/cli-agents';
import { type RelayProcess, spawnRelay } from '@svc/test-harness/relay-process';
import { daemonLog, newHome, svc, svcJson } from '@svc/test-harness/svc-cli';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// the `svc` users run: the committed bin over the bundle `npm run build` writes (npm test builds first)
const SVC_BIN = join(ROOT, 'cli', 'bin', 'svc.cjs');
const SOCKET = `svc-tui-test-${randomBytes(4).toString('hex')}`;
const SESSION = 'tui';

let relay: RelayProcess;
const homes = { a: newHome('tui-alice'), b: newHome('tui-bob') };
let failed = false;

const tmux = (...args: string[]) => execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
const screen = () => tmux('capture-pane', '-p', '-t', SESSION);
const keys = (...k: string[]) => tmux('send-keys', '-t', SESSION, ...k);
/** A tmux format of the pane: #{alternate_on}, #{cursor_flag}, #{pane_dead}… */
const pane = (format: string) => tmux('display-message', '-p', '-t', SESSION, format).trim();
const sessionAlive = () => {
  try {
    tmux('has-session', '-t', SESSION);
    return true;
  } catch {
    return false;
  }
};
const shows = (text: string | RegExp, what: string) =>
  until(
    () => {
      const s = screen();
      return (typeof text === 'string' ? s.includes(text) : text.test(s)) ? s : undefined;
    },
    30_000,
    `the tui shows ${what}`,
    100,
  );

/**
 * The screen once it has stayed the same for a second: what a redraw leaves there for
 * good, not a capture taken while one is under way. (The one wait here that is a span of
 * time: the condition is that nothing changes.)
 */
const settled = () => {
  let last = screen();
  let since = Date.now();
  return until(
    () => {
      const s = screen();
      if (s !== last) {
        last = s;
        since = Date.now();
        return undefined;
      }
      return Date.now() - since >= 1000 ? s : undefined;
    },
    20_000,
    'the screen to settle',
    100,
  );
};
/** Resizes the window, then the screen it settles on. */
const resized = async (x: number, y: number) => {
  tmux('resize-window', '-t', SESSION, '-x', String(x), '-y', String(y));
  return settled();
};
/**
 * One whole frame and nothing else, at `columns`: the header on the first line, one box
 * (one top border, one bottom), every box line as wide as the others, the keys line last
 * and only once, no line wider than the terminal. A piece of an earlier frame (a line
 * that wrapped at the old width, a second keys line) or a blank screen fails it.
 */
function expectOneFrame(s: string, columns: number): void {
  const lines = s.replace(/\n+$/, '').split('\n');
  const what = `at ${columns} columns:\n${s}`;
  expect(lines[0], what).toMatch(/^svc · /);
  expect(lines.filter((l) => l.startsWith('svc · ')).length, what).toBe(1);
  expect(lines.filter((l) => l.includes('q quit')).length, what).toBe(1);
  expect(lines.at(-1), what).toContain('q quit');
  expect(lines.filter((l) => /^[┌╔╭]/.test(l)).length, what).toBe(1);
  expect(lines.filter((l) => /^[└╚╰]/.test(l)).length, what).toBe(1);
  expect(new Set(lines.filter((l) => /^[┌╔╭│║└╚╰]/.test(l)).map((l) => l.length)).size, what).toBe(1);
  for (const line of lines) expect(line.length, what).toBeLessThanOrEqual(columns);
}

beforeAll(async () => {
  relay = await spawnRelay({ env: { SVC_RELAY_TENANTS: 'acme' } });
  await Promise.all([registerWithCli(relay, homes.a, 'alice'), registerWithCli(relay, homes.b, 'bob')]);
  // a first message, so the dashboard has a conversation to open
  await svcJson(homes.a, ['send', 'bob', '-m', 'hello bob, lunch at noon?', '--json']);
  await until(
    async () => (await svcJson<unknown[]>(homes.b, ['inbox', '--json'])).length === 1,
    30_000,
    'bob has the first message',
  );
  // the tui starts against a stopped daemon
  await svc(homes.b, ['--no-autostart', 'stop']);
}, 120_000);

beforeEach(({ onTestFailed }) => {
  onTestFailed(() => {
    failed = true;
    let last = '';
    try {
      last = screen();
    } catch {
      last = '(no tmux session)';
    }
    console.error(`screen:\n${last}\n--- bob daemon\n${tail(daemonLog(homes.b))}\n--- relay\n${tail(relay.logFile)}`);
  });
});

afterAll(async () => {
  try {
    tmux('kill-server');
  } catch {
    // already gone
  }
  await stopCliAgents(relay, Object.values(homes), failed);
}, 60_000);

describe('svc tui in tmux against a live daemon', () => {
  it('shows a stopped daemon with the command that starts it, then the dashboard once it runs', async () => {
    // CI=true as many shells and CI runners set it: Ink then draws nothing until exit
    const env = Object.entries({ ...homes.b.env, CI: 'true' }).map(([k, v]) => `${k}=${v}`);
    const command = ['env', ...env, process.execPath, SVC_BIN, 'tui']
      .map((a) => `'${a.replace(/'/g, "'\\''")}'`)
      .join(' ');
    // the shell stays after svc tui exits, to read the terminal it leaves behind
    const then = `; echo "svc tui exited: $?"; exec sleep 60`;
    tmux('new-session', '-d', '-s', SESSION, '-x', '110', '-y', '30', '-c', ROOT, command + then);
    const down = await shows('The svc daemon is not running.', 'the daemon down');
    expect(down).toContain('Start it with:  svc start -b');
    expect(down).not.toMatch(/Error:|at .*\.ts:\d+/);
    // resized, it settles on one whole frame: narrower than its 80-column box (which wrapped
    // at 60 columns as Ink first laid out the old frame, and its top stayed above the new
    // one), then a change of height alone (the frame is the same: the screen stayed blank),
    // then wider than the box (the same again)
    for (const [x, y] of [
      [60, 30],
      [60, 24],
      [100, 24],
      [120, 24],
      [110, 30],
    ] as const) {
      const s = await resized(x, y);
      expectOneFrame(s, x);
      expect(s).toContain('The svc daemon is not running.');
    }

    expect((await svc(homes.b, ['start', '-b'])).code).toBe(0);
    const up = await shows('hello bob, lunch at noon?', 'the inbox once the daemon runs');
    expect(up).toMatch(/Inbox · 1 unread/);
    expect(up).toMatch(/● bob/);
  }, 60_000);

  it('a message arrives live', async () => {
    await shows(/bob\s+connected/, 'bob connected to the relay');
    await svcJson(homes.a, ['send', 'bob', '-m', 'second point: the budget needs a vote', '--json']);
    const s = await shows('the budget needs a vote', 'the new message');
    expect(s).toContain('Inbox · 2 unread');
    expect(s).toMatch(/alice \(2 new\) · 2/);
  }, 60_000);

  it('navigates with the keyboard: Tab, Enter opens a conversation, Escape, / searches, q quits', async () => {
    // one key at a time, each seen on screen first: keys sent together can reach the tui as one read
    keys('Tab'); // inbox → conversations
    await shows('▸ Conversations', 'the conversations pane focused');
    keys('Enter');
    const conv = await shows('Conversation with alice', 'the open conversation');
    expect(conv).toContain('hello bob, lunch at noon?');
    expect(conv).toContain('the budget needs a vote');
    keys('Escape');
    await shows('Inbox · 2 unread', 'the overview again');
    keys('/');
    await shows('search: ', 'the search line');
    keys('-l', 'budget');
    await shows('search: budget', 'the query');
    keys('Enter');
    const found = await shows(/Search “budget” · 1 found/, 'the search results');
    if (process.env.SVC_TUI_CAPTURE) writeFileSync(process.env.SVC_TUI_CAPTURE, found);
    keys('Escape');
    const overview = await shows('Inbox · 2 unread', 'the overview after the search');
    if (process.env.SVC_TUI_CAPTURE) writeFileSync(`${process.env.SVC_TUI_CAPTURE}.overview`, overview);
    // a narrower terminal: redrawn to fit
    tmux('resize-window', '-t', SESSION, '-x', '72', '-y', '24');
    const narrow = await shows(/^┌─{22}┐┌─{46}┐$/m, 'the dashboard redrawn 72 columns wide');
    for (const line of narrow.split('\n')) expect(line.length, line).toBeLessThanOrEqual(72);
    expect(narrow).toContain('Inbox · 2 unread');
    // drawn on the alternate screen, from its top: no piece of an earlier frame above it
    expect(pane('#{alternate_on}')).toBe('1');
    expect(narrow.split('\n')[0]).toMatch(/^svc · daemon /);
    // narrower still: every key named on screen, the quit key first of all
    tmux('resize-window', '-t', SESSION, '-x', '60', '-y', '20');
    // the whole frame: a capture taken while the redraw is under way can hold the boxes of
    // the new width and the keys line of the old one
    const sixty = await shows(/^┌─{22}┐┌─{34}┐$(?=[\s\S]*q quit)/m, 'the dashboard redrawn 60 columns wide');
    expect(sixty.split('\n')[0]).toMatch(/^svc · daemon /);
    expect(sixty).toContain('Enter open');
    expect(sixty).toContain('q quit');
    // what stays on screen after a resize: one whole frame of the new size, whether the
    // height alone changed (the same frame), the width grew or shrank, one at a time or
    // several in quick succession
    expectOneFrame(await resized(60, 24), 60);
    // too small for the frame: one line saying what it needs, within the window
    for (const [x, y] of [
      [80, 12],
      [60, 10],
      [30, 24],
    ] as const) {
      const small = await resized(x, y);
      // one line on the usual 80 columns (what tui.md promises), wrapped only on a narrower one
      if (x >= 80) expect(small.replace(/\n+$/, '').trim().split('\n'), small).toHaveLength(1);
      expect(small.replace(/\s+/g, ' '), small).toContain(
        `svc tui needs at least 40×13; this terminal is ${x}×${y}: make it larger (q quits).`,
      );
      expect(small.replace(/\n+$/, '').split('\n').length, small).toBeLessThanOrEqual(y);
      for (const line of small.split('\n')) expect(line.length, small).toBeLessThanOrEqual(x);
    }
    for (const [x, y] of [
      [120, 30],
      [60, 20],
      [100, 26],
      [40, 24],
      [80, 30],
      [80, 22],
    ] as const) {
      expectOneFrame(await resized(x, y), x);
    }
    for (const [x, y] of [
      [120, 30],
      [60, 20],
      [100, 30],
      [40, 24],
    ] as const) {
      tmux('resize-window', '-t', SESSION, '-x', String(x), '-y', String(y));
    }
    expectOneFrame(await settled(), 40);
    // and while a message arrives: resized every 50 ms until it is on screen
    const sent = svcJson(homes.a, ['send', 'bob', '-m', 'third: resized while it came', '--json']);
    const widths = [90, 50, 110, 70];
    let width = 0;
    await until(
      () => {
        width = widths[(widths.indexOf(width) + 1) % widths.length] as number;
        tmux('resize-window', '-t', SESSION, '-x', String(width), '-y', '26');
        return screen().includes('Inbox · 3 unread');
      },
      30_000,
      'the third message, while the window is resized',
      50,
    );
    await sent;
    const arrived = await settled();
    expectOneFrame(arrived, width);
    expect(arrived).toContain('Inbox · 3 unread');
    keys('q');
    await shows('svc tui exited: 0', 'the tui to quit with status 0');
    // the terminal as the shell had it: the main screen, the cursor shown
    expect(pane('#{alternate_on} #{cursor_flag}')).toBe('0 1');
    tmux('kill-session', '-t', SESSION);
    expect(sessionAlive()).toBe(false);
  }, 60_000);
});
