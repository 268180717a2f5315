/**
 * The desktop shell's logic, given the Electron module: one instance; find or start the
 * daemon; the dashboard in a locked-down window; a tray icon with the unread count; an
 * OS notification per new message (not for muted senders); the daemon followed across its
 * restarts (the tray says when it is down); a clean quit. main.ts hands in
 * the real Electron; tests hand in a fake and check every rule without Electron.
 */
import type { ArchivedMessage, DaemonEvent, DashboardLaunch } from '@svc/daemon/client';
import type { BrowserWindowLike, ElectronLike, TrayLike } from './electron-api.js';
import { notificationFor, TRAY_DAEMON_DOWN, trayLabel, unreadCount } from './notifications.js';
import { dashboardWindowOptions, navigationAllowed } from './window-options.js';

/** What the shell needs of the daemon (DaemonClient has it; see daemon-link.ts). */
export interface DesktopDaemon {
  /** serves the dashboard (at this address, else the daemon's default) and mints a sign-in link */
  openDashboard(address?: { host: string; port: number }): Promise<DashboardLaunch>;
  listAgents(): Promise<Array<{ name: string }>>;
  inbox(agent: string): Promise<ArchivedMessage[]>;
  events(): Promise<DaemonEvents>;
}

type DaemonEvents = AsyncIterable<DaemonEvent> & { close(): void };

/** Re-subscribing after the event stream ended: the first wait, doubled after each failed try up to the last. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;

export interface DesktopOptions {
  /**
   * finds the running daemon, or starts it; with autostart false (after the daemon went
   * away) only finds it: `svc stop` is the owner's, and a daemon the shell started again
   * would lack what the owner starts it with (a vault passphrase, say)
   */
  connect: (options?: { autostart?: boolean }) => Promise<DesktopDaemon>;
  trayIcon: string;
  windowIcon?: string;
  /** a sign-in link already minted (by `svc desktop`); otherwise the shell asks the daemon */
  launchUrl?: string;
  /** how often the unread count is re-read (acknowledging in the page raises no event) */
  refreshMs?: number;
  log?: (message: string) => void;
}

export interface DesktopHandle {
  readonly window: BrowserWindowLike | undefined;
  readonly unread: number;
  /** resolves when the unread count has been re-read */
  refresh(): Promise<void>;
  quit(): void;
}

export async function runDesktop(electron: ElectronLike, o: DesktopOptions): Promise<DesktopHandle | undefined> {
  const { app } = electron;
  // a second start only brings the first one's window forward
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return undefined;
  }
  let win: BrowserWindowLike | undefined;
  let tray: TrayLike | undefined;
  let unread = 0;
  let stream: { close(): void } | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let retry: { timer: ReturnType<typeof setTimeout>; done: () => void } | undefined;
  let quitting = false;

  await app.whenReady();
  // replaced when the daemon comes back after its event stream ended
  let daemon = await o.connect();
  const firstUrl = o.launchUrl ?? (await daemon.openDashboard()).url;
  const origin = new URL(firstUrl).origin;
  const address = { host: new URL(firstUrl).hostname, port: Number(new URL(firstUrl).port) };

  const openWindow = (url: string): BrowserWindowLike => {
    const w = new electron.BrowserWindow(dashboardWindowOptions(o.windowIcon));
    const guard = (event: { preventDefault(): void }, target: string) => {
      if (!navigationAllowed(target, origin)) {
        event.preventDefault();
        o.log?.(`navigation away from the dashboard refused: ${new URL(target).origin}`);
      }
    };
    w.webContents.on('will-navigate', guard);
    w.webContents.on('will-redirect', guard);
    w.webContents.setWindowOpenHandler(() => ({ action: 'deny' }));
    // no camera, microphone, notifications or anything else for the page
    w.webContents.session.setPermissionRequestHandler((_wc, _permission, callback) => callback(false));
    w.once('ready-to-show', () => w.show());
    w.on('focus', () => void refresh());
    w.on('closed', () => {
      if (win === w) win = undefined;
    });
    void w.loadURL(url);
    return w;
  };

  // a fresh link: since the last one the daemon may have restarted (its sessions and its
  // dashboard server gone) or the session expired; same address, so the origin holds
  const freshLink = () =>
    daemon.openDashboard(address).then(
      (launch) => (new URL(launch.url).origin === origin ? launch.url : `${origin}/`),
      (err: Error) => {
        o.log?.(`no new sign-in link: ${err.message}`);
        return `${origin}/`;
      },
    );

  const show = async () => {
    if (!win || win.isDestroyed()) {
      const url = await freshLink();
      if (!win || win.isDestroyed()) win = openWindow(url);
      return;
    }
    if (win.isMinimized()) win.restore();
    win.show();
    win.focus();
  };

  const showUnread = (label: string) => {
    tray?.setToolTip(label);
    tray?.setTitle(unread > 0 ? String(unread) : '');
    app.setBadgeCount?.(unread);
  };
  // no count while the daemon is gone: the last one would be stale
  const daemonDown = () => {
    unread = 0;
    showUnread(TRAY_DAEMON_DOWN);
  };

  const refresh = async () => {
    try {
      const from = daemon;
      const agents = await from.listAgents();
      unread = unreadCount(await Promise.all(agents.map((a) => from.inbox(a.name))));
    } catch (err) {
      o.log?.(`unread count not read: ${(err as Error).message}`);
      if ((err as { code?: unknown }).code === 'daemon_unavailable') daemonDown();
      return;
    }
    showUnread(trayLabel(unread));
  };

  const notify = (event: DaemonEvent) => {
    if (event.type === 'message' || event.type === 'receipt') void refresh();
    const note = notificationFor(event);
    // the owner looking at the dashboard needs no popup
    if (!note || (win && !win.isDestroyed() && win.isFocused()) || !electron.Notification.isSupported()) return;
    const n = new electron.Notification({ title: note.title, body: note.body });
    n.on('click', reopen);
    n.show();
  };

  // a wait that quitting cuts short, so no timer outlives the app
  const pause = (ms: number) =>
    new Promise<void>((done) => {
      retry = { timer: setTimeout(done, ms), done };
    }).finally(() => {
      retry = undefined;
    });

  const subscribe = async (connect: () => Promise<DesktopDaemon>): Promise<DaemonEvents | undefined> => {
    try {
      const next = await connect();
      const events = await next.events();
      daemon = next;
      return events;
    } catch (err) {
      if (!quitting) o.log?.(`daemon not answering: ${(err as Error).message}`);
      return undefined;
    }
  };

  /**
   * The event stream ends only when the daemon goes away (svc stop, a restart, a crash):
   * re-subscribe with a growing wait; once it answers again, re-read the count and give the
   * window a fresh sign-in link (the page it shows was the old daemon's).
   */
  const follow = async (first: DaemonEvents | undefined) => {
    let events = first;
    let wait = RETRY_FIRST_MS;
    while (!quitting) {
      if (events) {
        stream = events;
        wait = RETRY_FIRST_MS;
        try {
          for await (const event of events) notify(event);
        } catch (err) {
          if (!quitting) o.log?.(`event stream failed: ${(err as Error).message}`);
        }
        if (quitting) return;
        o.log?.('event stream ended; waiting for the daemon');
      }
      // a wait even after a success, so a daemon that accepts and drops the stream is no busy loop
      await pause(wait);
      if (quitting) return;
      wait = Math.min(wait * 2, RETRY_MAX_MS);
      events = await subscribe(() => o.connect({ autostart: false }));
      if (quitting) {
        events?.close();
        return;
      }
      if (!events) {
        daemonDown();
        continue;
      }
      void refresh();
      if (win && !win.isDestroyed()) {
        const url = await freshLink();
        if (win && !win.isDestroyed() && !quitting) void win.loadURL(url);
      }
    }
  };

  const cleanup = () => {
    if (quitting) return;
    quitting = true;
    if (timer) clearInterval(timer);
    if (retry) {
      clearTimeout(retry.timer);
      retry.done();
    }
    stream?.close();
    tray?.destroy();
  };

  const reopen = () => void show();
  app.on('second-instance', reopen);
  app.on('activate', reopen);
  // closing the window keeps the shell in the tray; Quit in its menu ends it
  app.on('window-all-closed', () => undefined);
  app.on('before-quit', cleanup);

  win = openWindow(firstUrl);
  tray = new electron.Tray(o.trayIcon);
  tray.setContextMenu(
    electron.Menu.buildFromTemplate([
      { label: 'Open svc', click: reopen },
      { type: 'separator', label: '' },
      { label: 'Quit svc', click: () => app.quit() },
    ]),
  );
  tray.on('click', reopen);
  await refresh();
  timer = setInterval(() => void refresh(), o.refreshMs ?? 30_000);

  // subscribed before returning: events from here on are seen
  void follow(await subscribe(async () => daemon));

  return {
    get window() {
      return win;
    },
    get unread() {
      return unread;
    },
    refresh,
    quit: () => {
      cleanup();
      app.quit();
    },
  };
}
