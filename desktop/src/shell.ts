/**
 * The desktop shell's logic, given the Electron module: one instance; find or start the
 * daemon; the dashboard in a locked-down window; a tray icon with the unread count; an
 * OS notification per new message (not for muted senders); a clean quit. main.ts hands in
 * the real Electron; tests hand in a fake and check every rule without Electron.
 */
import type { ArchivedMessage, DaemonEvent, DashboardLaunch } from '@svc/daemon/client';
import type { BrowserWindowLike, ElectronLike, TrayLike } from './electron-api.js';
import { notificationFor, trayLabel, unreadCount } from './notifications.js';
import { dashboardWindowOptions, navigationAllowed } from './window-options.js';

/** What the shell needs of the daemon (DaemonClient has it; see daemon-link.ts). */
export interface DesktopDaemon {
  /** serves the dashboard (at this address, else the daemon's default) and mints a sign-in link */
  openDashboard(address?: { host: string; port: number }): Promise<DashboardLaunch>;
  listAgents(): Promise<Array<{ name: string }>>;
  inbox(agent: string): Promise<ArchivedMessage[]>;
  events(): Promise<AsyncIterable<DaemonEvent> & { close(): void }>;
}

export interface DesktopOptions {
  /** finds the running daemon, or starts it */
  connect: () => Promise<DesktopDaemon>;
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
  let quitting = false;

  await app.whenReady();
  const daemon = await o.connect();
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

  const show = async () => {
    if (!win || win.isDestroyed()) {
      // a fresh link: since the last window the daemon may have restarted (its sessions and
      // its dashboard server gone) or the session expired; same address, so the origin holds
      const url = await daemon.openDashboard(address).then(
        (launch) => (new URL(launch.url).origin === origin ? launch.url : `${origin}/`),
        (err: Error) => {
          o.log?.(`no new sign-in link: ${err.message}`);
          return `${origin}/`;
        },
      );
      if (!win || win.isDestroyed()) win = openWindow(url);
      return;
    }
    if (win.isMinimized()) win.restore();
    win.show();
    win.focus();
  };

  const refresh = async () => {
    try {
      const agents = await daemon.listAgents();
      unread = unreadCount(await Promise.all(agents.map((a) => daemon.inbox(a.name))));
    } catch (err) {
      o.log?.(`unread count not read: ${(err as Error).message}`);
      return;
    }
    tray?.setToolTip(trayLabel(unread));
    tray?.setTitle(unread > 0 ? String(unread) : '');
    app.setBadgeCount?.(unread);
  };

  const cleanup = () => {
    if (quitting) return;
    quitting = true;
    if (timer) clearInterval(timer);
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

  const events = await daemon.events();
  stream = events;
  void (async () => {
    try {
      for await (const event of events) {
        if (event.type === 'message' || event.type === 'receipt') void refresh();
        const note = notificationFor(event);
        // the owner looking at the dashboard needs no popup
        if (!note || (win && !win.isDestroyed() && win.isFocused()) || !electron.Notification.isSupported()) continue;
        const n = new electron.Notification({ title: note.title, body: note.body });
        n.on('click', reopen);
        n.show();
      }
    } catch (err) {
      if (!quitting) o.log?.(`event stream ended: ${(err as Error).message}`);
    }
  })();

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
