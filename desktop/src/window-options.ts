/**
 * The dashboard window: the renderer is a sandboxed page with context isolation and no
 * Node, exactly like a browser tab, and it may only ever show the dashboard's own origin.
 */
import type { WindowOptions } from './electron-api.js';

export function dashboardWindowOptions(icon?: string): WindowOptions {
  return {
    width: 1280,
    height: 820,
    minWidth: 720,
    minHeight: 480,
    title: 'svc',
    show: false,
    autoHideMenuBar: true,
    backgroundColor: '#f6f7f9',
    ...(icon ? { icon } : {}),
    webPreferences: {
      sandbox: true,
      contextIsolation: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      spellcheck: false,
      safeDialogs: true,
    },
  };
}

/** Whether the window may navigate to `url`: the dashboard's origin (scheme, host, port) only. */
export function navigationAllowed(url: string, dashboardOrigin: string): boolean {
  try {
    return new URL(url).origin === new URL(dashboardOrigin).origin;
  } catch {
    return false;
  }
}
