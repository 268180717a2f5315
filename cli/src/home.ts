import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** `$SVC_HOME`, default `~/.svc`. */
export function svcHome(env: NodeJS.ProcessEnv): string {
  const home = env.SVC_HOME?.trim();
  return home ? resolve(home) : join(homedir(), '.svc');
}

export function socketPath(home: string): string {
  return join(home, 'run', 'daemon.sock');
}
