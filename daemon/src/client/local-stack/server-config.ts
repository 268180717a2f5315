/**
 * The configuration of the machine's local nats-server (`svc start`): client port and
 * monitoring on the listen address, and, unless local-only, a leaf remote to the
 * deployment's hub with relay-uplink/v1 creds from a file (rewritten on rotation; the
 * server reads it again at each reconnect).
 */
import { join } from 'node:path';

export const DEFAULT_LEAF_PORT = 4222;
export const DEFAULT_MONITOR_PORT = 8222;

/** Subjects of this machine alone (local delivery): they never cross the leaf link. */
export const LOCAL_SUBJECT_PREFIX = 'svc.local';

export interface LocalStackOptions {
  listen: string;
  port: number;
  monitorPort: number;
  /** Absent: local-only (no uplink, no cross-machine delivery). */
  uplink?: { leafUrl: string; credsFile: string };
  /**
   * The token every client of the server must present. The leaf link gives local clients
   * the hub's named sources, and local delivery answers on it: no other process may use it.
   */
  clientToken?: string;
}

export interface LocalStackFiles {
  dir: string;
  configFile: string;
  pidFile: string;
  credsFile: string;
}

export function localStackFiles(runDir: string): LocalStackFiles {
  const dir = join(runDir, 'local-stack');
  return {
    dir,
    configFile: join(dir, 'nats-server.conf'),
    pidFile: join(dir, 'nats-server.pid.json'),
    credsFile: join(dir, 'uplink.creds'),
  };
}

/** The ports `svc start` uses: flags, else SVC_LEAF_PORT / SVC_MONITOR_PORT, else 4222 / 8222. */
export function resolvePorts(
  flags: { port?: number; monitorPort?: number },
  env: Record<string, string | undefined>,
): { port: number; monitorPort: number } {
  const fromEnv = (name: string, fallback: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < 1 || n > 65535) throw new Error(`${name} must be a port number (got "${raw}")`);
    return n;
  };
  return {
    port: flags.port ?? fromEnv('SVC_LEAF_PORT', DEFAULT_LEAF_PORT),
    monitorPort: flags.monitorPort ?? fromEnv('SVC_MONITOR_PORT', DEFAULT_MONITOR_PORT),
  };
}

export function localServerConfig(opts: LocalStackOptions): string {
  const q = (s: string) => JSON.stringify(s);
  const lines = [
    '# Written by the svc daemon at each `svc start`; edits are overwritten.',
    `host: ${q(opts.listen)}`,
    `port: ${opts.port}`,
    `http: ${q(`${opts.listen.includes(':') ? `[${opts.listen}]` : opts.listen}:${opts.monitorPort}`)}`,
  ];
  if (opts.clientToken) lines.push(`authorization: { token: ${q(opts.clientToken)} }`);
  if (opts.uplink) {
    // Local delivery stays on this machine: without the deny lists, the hub (the relay's
    // nats-server, not trusted) would see each request's interest cross the leaf, could read
    // and answer local deliveries first, and could send requests of its own into them.
    const local = q(`${LOCAL_SUBJECT_PREFIX}.>`);
    lines.push(
      'leafnodes: {',
      '  reconnect: 2',
      `  remotes: [ { url: ${q(opts.uplink.leafUrl)}, credentials: ${q(opts.uplink.credsFile)}, deny_imports: [${local}], deny_exports: [${local}] } ]`,
      '}',
    );
  }
  return `${lines.join('\n')}\n`;
}
