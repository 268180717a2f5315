/** The shell's daemon: a client of the home's daemon (ensureDaemon), trimmed to what the shell uses. */
import { ensureDaemon } from '@svc/daemon/client';
import type { DesktopOptions } from './shell.js';

/** `nodePath` runs a daemon the shell starts: inside Electron, process.execPath is Electron itself. */
export function daemonConnector(home: string, nodePath: string): DesktopOptions['connect'] {
  return async ({ autostart = true } = {}) => {
    const client = await ensureDaemon({ home, autostart, nodePath });
    return {
      openDashboard: (address) => client.openDashboard(address ?? {}),
      listAgents: () => client.listAgents(),
      inbox: (agent) => client.inbox(agent, { source: 'local' }),
      events: () => client.events(),
    };
  };
}
