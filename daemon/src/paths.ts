/** Where everything lives under $SVC_HOME (ARCHITECTURE "Client side"). */
import { join } from 'node:path';
import { socketPathFor } from './client/home.js';

export interface HomePaths {
  home: string;
  runDir: string;
  socket: string;
  lockFile: string;
  /** the rendered status line (status-line-file.ts), read by cli/bin/svc-statusline */
  statusLine: string;
  logsDir: string;
  logFile: string;
  deploymentsDir: string;
  agentsDir: string;
  vaultFile: string;
}

export function homePaths(home: string): HomePaths {
  const runDir = join(home, 'run');
  const logsDir = join(home, 'logs');
  return {
    home,
    runDir,
    socket: socketPathFor(home),
    lockFile: join(runDir, 'daemon.pid'),
    statusLine: join(runDir, 'statusline'),
    logsDir,
    logFile: join(logsDir, 'daemon.log'),
    deploymentsDir: join(home, 'deployments'),
    agentsDir: join(home, 'agents'),
    vaultFile: join(home, 'vault.json'),
  };
}

/** Local names become file names: keep them to a safe alphabet. */
export const LOCAL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
export const isLocalName = (name: string): boolean => LOCAL_NAME_PATTERN.test(name) && !name.includes('..');
