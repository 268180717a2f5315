/** @svc/desktop: the Electron shell's logic (shell.ts), usable and testable without Electron. */
export type { ElectronLike, WindowOptions } from './electron-api.js';
export { notificationFor, TRAY_DAEMON_DOWN, trayLabel, unreadCount } from './notifications.js';
export { type DesktopDaemon, type DesktopHandle, type DesktopOptions, runDesktop } from './shell.js';
export { dashboardWindowOptions, navigationAllowed } from './window-options.js';
export const PACKAGE = '@svc/desktop';
