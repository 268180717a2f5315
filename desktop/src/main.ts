/**
 * The Electron main process: `electron desktop/dist/main.js` (or the packaged app). All
 * logic lives in shell.ts; this file only loads Electron and the daemon client.
 */
import { fileURLToPath } from 'node:url';
import { defaultHome, ensureDaemon } from '@svc/daemon/client';
import type { ElectronLike } from './electron-api.js';
import { runDesktop } from './shell.js';

// a variable specifier: the electron package is only present where Electron is installed
const ELECTRON = 'electron';
const loaded = (await import(ELECTRON)) as { default?: ElectronLike } & ElectronLike;
const electron = loaded.default ?? loaded;
const home = defaultHome();
const asset = (name: string) => fileURLToPath(new URL(`../assets/${name}`, import.meta.url));

await runDesktop(electron, {
  connect: async () => {
    // inside Electron, process.execPath is Electron itself: the daemon runs on the system's Node
    const client = await ensureDaemon({ home, nodePath: process.env.SVC_NODE || 'node' });
    return {
      openDashboard: (address) => client.openDashboard(address ?? {}),
      listAgents: () => client.listAgents(),
      inbox: (agent) => client.inbox(agent, { source: 'local' }),
      events: () => client.events(),
    };
  },
  trayIcon: asset('tray.png'),
  windowIcon: asset('icon.png'),
  ...(process.env.SVC_DASHBOARD_URL ? { launchUrl: process.env.SVC_DASHBOARD_URL } : {}),
  log: (m) => console.error(`svc desktop: ${m}`),
}).catch((err: Error) => {
  console.error(`svc desktop: ${err.message}`);
  electron.app.quit();
});
