/**
 * The Electron main process: `electron desktop/dist/main.js` (or the packaged app). All
 * logic lives in shell.ts; this file only loads Electron and the daemon client.
 */
import { fileURLToPath } from 'node:url';
import { defaultHome } from '@svc/daemon/client';
import { daemonConnector } from './daemon-link.js';
import type { ElectronLike } from './electron-api.js';
import { runDesktop } from './shell.js';

// a variable specifier: the electron package is only present where Electron is installed
const ELECTRON = 'electron';
const loaded = (await import(ELECTRON)) as { default?: ElectronLike } & ElectronLike;
const electron = loaded.default ?? loaded;
const home = defaultHome();
const asset = (name: string) => fileURLToPath(new URL(`../assets/${name}`, import.meta.url));

await runDesktop(electron, {
  // the daemon runs on the system's Node, not on Electron (see daemon-link.ts)
  connect: daemonConnector(home, process.env.SVC_NODE || 'node'),
  trayIcon: asset('tray.png'),
  windowIcon: asset('icon.png'),
  ...(process.env.SVC_DASHBOARD_URL ? { launchUrl: process.env.SVC_DASHBOARD_URL } : {}),
  log: (m) => console.error(`svc desktop: ${m}`),
}).catch((err: Error) => {
  console.error(`svc desktop: ${err.message}`);
  electron.app.quit();
});
