/** The desktop shell's rules, checked against a fake Electron (no binary exists on these machines). */
import type { ArchivedMessage, DaemonEvent } from '@svc/daemon/client';
import { until } from '@svc/test-harness';
import { startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { archivedMessage } from '@svc/test-harness/fixtures';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { daemonConnector } from './daemon-link.js';
import type { ElectronLike, WindowOptions } from './electron-api.js';
import { notificationFor, TRAY_DAEMON_DOWN, trayLabel, unreadCount } from './notifications.js';
import { type DesktopDaemon, runDesktop } from './shell.js';
import { dashboardWindowOptions, navigationAllowed } from './window-options.js';

const BASE = 'http://127.0.0.1:8191';

const msg = (over: Partial<ArchivedMessage> = {}): ArchivedMessage =>
  archivedMessage({ message_id: `m-${Math.random()}`, content: 'the secret plan', ...over });

/** An event stream the test pushes into. */
function pushStream() {
  const queue: DaemonEvent[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  const stream = {
    closed: () => closed,
    push(e: DaemonEvent) {
      queue.push(e);
      wake?.();
    },
    close() {
      closed = true;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      while (!closed) {
        const e = queue.shift();
        if (e) yield e;
        else await new Promise<void>((r) => (wake = r));
      }
    },
  };
  return stream;
}

function fakeElectron(lock = true) {
  const rec = {
    quit: 0,
    handlers: new Map<string, () => void>(),
    windows: [] as Array<{
      options: WindowOptions;
      url?: string;
      focused: boolean;
      shown: number;
      destroyed: boolean;
      closed?: () => void;
      nav: Map<string, (e: { preventDefault(): void }, url: string) => void>;
      openHandler?: (d: { url: string }) => { action: string };
      permission?: (wc: unknown, p: string, cb: (g: boolean) => void) => void;
    }>,
    notifications: [] as Array<{ title: string; body: string }>,
    tray: { tooltip: '', title: '', destroyed: false },
    badge: 0,
  };
  const electron: ElectronLike = {
    app: {
      requestSingleInstanceLock: () => lock,
      on: (event, fn) => void rec.handlers.set(event, fn),
      whenReady: async () => undefined,
      quit: () => {
        rec.quit++;
        rec.handlers.get('before-quit')?.();
      },
      setBadgeCount: (n) => {
        rec.badge = n;
        return true;
      },
    },
    BrowserWindow: class {
      readonly r: (typeof rec.windows)[number];
      webContents;
      constructor(options: WindowOptions) {
        const r: (typeof rec.windows)[number] = {
          options,
          focused: false,
          shown: 0,
          destroyed: false,
          nav: new Map(),
        };
        this.r = r;
        rec.windows.push(r);
        this.webContents = {
          on: (e: string, fn: (ev: { preventDefault(): void }, url: string) => void) => void r.nav.set(e, fn),
          setWindowOpenHandler: (fn: (d: { url: string }) => { action: 'deny' | 'allow' }) => {
            r.openHandler = fn;
          },
          session: {
            setPermissionRequestHandler: (fn: (wc: unknown, p: string, cb: (g: boolean) => void) => void) => {
              r.permission = fn;
            },
          },
        };
      }
      async loadURL(url: string) {
        this.r.url = url;
      }
      once(_e: string, fn: () => void) {
        fn();
      }
      on(e: string, fn: () => void) {
        if (e === 'closed') this.r.closed = fn;
      }
      show() {
        this.r.shown++;
      }
      focus() {
        this.r.focused = true;
      }
      restore() {}
      isMinimized() {
        return false;
      }
      isFocused() {
        return this.r.focused;
      }
      isDestroyed() {
        return this.r.destroyed;
      }
    },
    Tray: class {
      setToolTip(t: string) {
        rec.tray.tooltip = t;
      }
      setTitle(t: string) {
        rec.tray.title = t;
      }
      setContextMenu() {}
      on() {}
      destroy() {
        rec.tray.destroyed = true;
      }
    },
    Notification: Object.assign(
      class {
        readonly o: { title: string; body: string };
        constructor(o: { title: string; body: string }) {
          this.o = o;
        }
        on() {}
        show() {
          rec.notifications.push(this.o);
        }
      },
      { isSupported: () => true },
    ),
    Menu: { buildFromTemplate: (items) => items },
    shell: { openExternal: async () => undefined },
  };
  return { electron, rec };
}

/** A daemon the test can stop (its event streams end, nothing answers) and start again. */
function fakeDaemon(inbox: ArchivedMessage[] = [], open?: DesktopDaemon['openDashboard']) {
  const streams: Array<ReturnType<typeof pushStream>> = [];
  const calls = { connect: 0, open: 0, addresses: [] as unknown[], autostart: [] as unknown[], at: [] as number[] };
  let down = false;
  // what DaemonClient throws when no daemon listens on the socket
  const answer = <T>(value: () => T): T => {
    if (down) throw Object.assign(new Error('No svc daemon answers'), { code: 'daemon_unavailable' });
    return value();
  };
  const daemon: DesktopDaemon = {
    openDashboard:
      open ??
      (async (address) => {
        calls.open++;
        calls.addresses.push(address);
        return { url: `${BASE}/auth?token=t${calls.open}`, base_url: BASE, host: '127.0.0.1', port: 8191 };
      }),
    listAgents: async () => answer(() => [{ name: 'bob' }]),
    inbox: async () => answer(() => inbox),
    events: async () =>
      answer(() => {
        const s = pushStream();
        streams.push(s);
        return s;
      }),
  };
  return {
    /** the latest event stream */
    get stream() {
      return streams.at(-1)!;
    },
    streams,
    calls,
    stop() {
      down = true;
      for (const s of streams) s.close();
    },
    start() {
      down = false;
    },
    connect: async (options?: { autostart?: boolean }) => {
      calls.connect++;
      calls.autostart.push(options?.autostart);
      calls.at.push(Date.now());
      return answer(() => daemon);
    },
  };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('window options', () => {
  it('sandbox, context isolation, no Node in the renderer', () => {
    expect(dashboardWindowOptions().webPreferences).toMatchObject({
      sandbox: true,
      contextIsolation: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
    });
  });
  it('navigation stays on the dashboard origin', () => {
    expect(navigationAllowed(`${BASE}/#/inbox`, BASE)).toBe(true);
    for (const u of [
      'http://127.0.0.1:8192/',
      'https://127.0.0.1:8191/',
      'http://evil.example/',
      'file:///etc/passwd',
      'nonsense',
    ])
      expect(navigationAllowed(u, BASE), u).toBe(false);
  });
});

describe('notifications and the tray', () => {
  it('a new inbound message notifies with the sender only; muted, outbound and other events do not', () => {
    const note = notificationFor({ type: 'message', agent: 'bob', message: msg() });
    expect(note?.title).toBe('New message from alice');
    expect(JSON.stringify(note)).not.toContain('secret plan');
    expect(notificationFor({ type: 'message', agent: 'bob', message: msg({ muted: true }) })).toBeUndefined();
    expect(notificationFor({ type: 'message', agent: 'bob', message: msg({ direction: 'outbound' }) })).toBeUndefined();
    expect(notificationFor({ type: 'session', agent: 'bob', state: 'connected' })).toBeUndefined();
    expect(notificationFor({ type: 'peer_key_changed', agent: 'bob', peer: 'alice' })?.title).toContain('alice');
  });
  it('counts unacknowledged, unmuted inbound messages', () => {
    expect(
      unreadCount([[msg(), msg({ muted: true }), msg({ acked_at: 'x' }), msg({ direction: 'outbound' })], [msg()]]),
    ).toBe(2);
    expect(trayLabel(0)).toBe('svc: no unread messages');
    expect(trayLabel(1)).toBe('svc: 1 unread message');
  });
});

describe('runDesktop', () => {
  it('a second instance quits at once, before touching the daemon', async () => {
    const { electron, rec } = fakeElectron(false);
    const d = fakeDaemon();
    expect(await runDesktop(electron, { connect: d.connect, trayIcon: 't.png' })).toBeUndefined();
    expect(rec.quit).toBe(1);
    expect(d.calls.connect).toBe(0);
    expect(rec.windows).toHaveLength(0);
  });

  it('opens the dashboard locked to its origin, counts unread in the tray, notifies, and quits cleanly', async () => {
    const { electron, rec } = fakeElectron();
    const inbox = [msg(), msg({ muted: true })];
    const d = fakeDaemon(inbox);
    const handle = await runDesktop(electron, { connect: d.connect, trayIcon: 't.png', refreshMs: 60_000 });
    expect(handle).toBeDefined();
    const w = rec.windows[0]!;
    expect(w.url).toBe(`${BASE}/auth?token=t1`);
    expect(w.options.webPreferences).toMatchObject({ sandbox: true, contextIsolation: true, nodeIntegration: false });
    const blocked = { n: 0 };
    const ev = { preventDefault: () => blocked.n++ };
    w.nav.get('will-navigate')!(ev, 'http://evil.example/');
    w.nav.get('will-redirect')!(ev, 'http://127.0.0.1:9999/');
    w.nav.get('will-navigate')!(ev, `${BASE}/#/search`);
    expect(blocked.n).toBe(2);
    expect(w.openHandler!({ url: 'http://evil.example' })).toEqual({ action: 'deny' });
    let granted: boolean | undefined;
    w.permission!(null, 'media', (g) => {
      granted = g;
    });
    expect(granted).toBe(false);

    expect(rec.tray.tooltip).toBe('svc: 1 unread message');
    expect(rec.badge).toBe(1);

    // a second start brings this window forward
    rec.handlers.get('second-instance')!();
    expect(w.focused).toBe(true);
    w.focused = false;

    inbox.push(msg());
    d.stream.push({ type: 'message', agent: 'bob', message: msg() });
    d.stream.push({ type: 'message', agent: 'bob', message: msg({ muted: true, from: 'spammer' }) });
    await tick();
    await handle!.refresh();
    expect(rec.notifications.map((n) => n.title)).toEqual(['New message from alice']);
    expect(rec.tray.tooltip).toBe('svc: 2 unread messages');
    expect(rec.tray.title).toBe('2');

    // not while the owner looks at the dashboard
    w.focused = true;
    d.stream.push({ type: 'message', agent: 'bob', message: msg({ from: 'carol' }) });
    await tick();
    expect(rec.notifications).toHaveLength(1);

    handle!.quit();
    expect(d.stream.closed()).toBe(true);
    expect(rec.tray.destroyed).toBe(true);
    expect(rec.quit).toBe(1);
  });

  it('uses the link `svc desktop` minted instead of asking for another', async () => {
    const { electron, rec } = fakeElectron();
    const d = fakeDaemon();
    const handle = await runDesktop(electron, {
      connect: d.connect,
      trayIcon: 't.png',
      launchUrl: `${BASE}/auth?token=from-cli`,
    });
    expect(d.calls.open).toBe(0);
    expect(rec.windows[0]!.url).toBe(`${BASE}/auth?token=from-cli`);
    handle!.quit();
  });

  it('a window opened again signs in with a fresh link at the same address (the daemon may have restarted)', async () => {
    const { electron, rec } = fakeElectron();
    const d = fakeDaemon();
    const handle = await runDesktop(electron, {
      connect: d.connect,
      trayIcon: 't.png',
      launchUrl: `${BASE}/auth?token=from-cli`,
    });
    const first = rec.windows[0]!;
    first.destroyed = true;
    first.closed?.();
    rec.handlers.get('activate')!();
    await until(async () => rec.windows.length === 2, 2000, 'a new window');
    expect(rec.windows[1]!.url).toBe(`${BASE}/auth?token=t1`);
    expect(d.calls.addresses).toEqual([{ host: '127.0.0.1', port: 8191 }]);
    handle!.quit();
  });

  it('without a new link (the daemon does not answer) the window opens the page itself', async () => {
    const { electron, rec } = fakeElectron();
    const d = fakeDaemon([], async () => {
      throw new Error('daemon gone');
    });
    const logged: string[] = [];
    const handle = await runDesktop(electron, {
      connect: d.connect,
      trayIcon: 't.png',
      launchUrl: `${BASE}/auth?token=from-cli`,
      log: (m) => logged.push(m),
    });
    rec.windows[0]!.destroyed = true;
    rec.handlers.get('second-instance')!();
    await until(async () => rec.windows.length === 2, 2000, 'a new window');
    expect(rec.windows[1]!.url).toBe(`${BASE}/`);
    expect(logged.join('\n')).toContain('daemon gone');
    handle!.quit();
  });

  it('follows the daemon across a stop and a start: says it is down, then notifies, counts and signs in again', async () => {
    const { electron, rec } = fakeElectron();
    const inbox = [msg()];
    const d = fakeDaemon(inbox);
    const handle = await runDesktop(electron, { connect: d.connect, trayIcon: 't.png', refreshMs: 60_000 });
    expect(rec.tray.tooltip).toBe('svc: 1 unread message');
    expect(rec.windows[0]!.url).toBe(`${BASE}/auth?token=t1`);

    d.stop();
    await until(() => rec.tray.tooltip === TRAY_DAEMON_DOWN, 5000, 'the tray to say the daemon is down');
    // no stale count
    expect(rec.tray.title).toBe('');
    expect(rec.badge).toBe(0);
    expect(handle!.unread).toBe(0);
    // the first start may start a daemon; later ones never start one the owner stopped
    expect(d.calls.autostart[0]).toBeUndefined();
    expect(d.calls.autostart.slice(1)).toEqual(d.calls.autostart.slice(1).map(() => false));

    inbox.push(msg());
    d.start();
    await until(() => d.streams.length === 2, 5000, 'a new subscription');
    // the page was the stopped daemon's: a fresh sign-in link at the same address
    await until(() => rec.windows[0]!.url === `${BASE}/auth?token=t2`, 5000, 'a fresh sign-in link');
    expect(d.calls.addresses).toEqual([undefined, { host: '127.0.0.1', port: 8191 }]);
    d.stream.push({ type: 'message', agent: 'bob', message: msg({ from: 'carol' }) });
    await until(() => rec.notifications.length === 1, 5000, 'a notification');
    expect(rec.notifications[0]!.title).toBe('New message from carol');
    await until(() => rec.tray.tooltip === 'svc: 2 unread messages', 5000, 'the count');
    expect(rec.tray.title).toBe('2');
    expect(rec.badge).toBe(2);

    handle!.quit();
    expect(d.stream.closed()).toBe(true);
  });

  it('re-subscribes after 0.5 s doubling to 10 s, from 0.5 s again after a success; quitting leaves no timer', async () => {
    vi.useFakeTimers();
    try {
      const { electron, rec } = fakeElectron();
      const d = fakeDaemon();
      const handle = await runDesktop(electron, { connect: d.connect, trayIcon: 't.png', refreshMs: 60_000 });
      const stoppedAt = Date.now();
      d.stop();
      await vi.advanceTimersByTimeAsync(36_000);
      const after = (from: number) => d.calls.at.slice(1).map((t) => t - from);
      expect(after(stoppedAt)).toEqual([500, 1500, 3500, 7500, 15_500, 25_500, 35_500]);
      expect(rec.tray.tooltip).toBe(TRAY_DAEMON_DOWN);

      d.start();
      await vi.advanceTimersByTimeAsync(10_000);
      expect(d.streams).toHaveLength(2);
      expect(rec.tray.tooltip).toBe('svc: no unread messages');
      const restartedAt = Date.now();
      const before = d.calls.at.length;
      d.stop();
      await vi.advanceTimersByTimeAsync(1_000);
      expect(d.calls.at.slice(before).map((t) => t - restartedAt)).toEqual([500]);

      // quitting mid-wait: the wait's timer and the refresh timer both go
      handle!.quit();
      expect(vi.getTimerCount()).toBe(0);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(d.calls.at.length).toBe(before + 1);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('runDesktop on a real daemon', () => {
  let d: TestDaemon | undefined;
  afterEach(async () => {
    await d?.daemon.close();
    d = undefined;
  });

  it('its event stream ends with the daemon; the shell says so and follows the next daemon of the home', async () => {
    d = await startDaemon();
    const { home } = d;
    const { electron, rec } = fakeElectron();
    const logged: string[] = [];
    const handle = await runDesktop(electron, {
      connect: daemonConnector(home, process.execPath),
      trayIcon: 't.png',
      refreshMs: 60_000,
      log: (m) => logged.push(m),
    });
    expect(rec.tray.tooltip).toBe('svc: no unread messages');
    const first = new URL(rec.windows[0]!.url!);

    await d.daemon.close();
    await until(() => rec.tray.tooltip === TRAY_DAEMON_DOWN, 10_000, 'the tray to say the daemon is down');
    expect(logged.join('\n')).toContain('event stream ended');

    d = await startDaemon(home);
    await until(() => rec.windows[0]!.url !== first.href, 15_000, 'a fresh sign-in link');
    const next = new URL(rec.windows[0]!.url!);
    expect(next.origin).toBe(first.origin);
    await until(() => rec.tray.tooltip === 'svc: no unread messages', 5000, 'the tray back');
    handle!.quit();
    expect(rec.tray.destroyed).toBe(true);
  });
});
