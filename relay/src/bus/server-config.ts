import { chmod, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { encodeUser } from '@nats-io/jwt';
import { credsFile, operatorJwt, systemAccountJwt } from './jwts.js';
import { ensurePrivateDir, loadOrCreateSeed, writeSecretFile } from './keys.js';
import { natsLayout } from './layout.js';

/** The JetStream domain of the hub; edges name it for JetStream calls across the leaf link. */
export const JETSTREAM_DOMAIN = 'hub';

export interface NatsServerConfigOptions {
  /** Client listen host, default 127.0.0.1. */
  host?: string;
  /** Client port; see `findFreePort`. */
  port: number;
  /** Leaf node listener for edge machines; absent = none. */
  leafnodes?: { host?: string; port: number; advertise?: string };
  /** The full resolver refuses new accounts past this count (nats-server default 1000). */
  maxAccounts?: number;
}

export interface WrittenNatsConfig {
  configFile: string;
  /** Operator signing key seed: signs tenant account JWTs. */
  operatorSeedFile: string;
  /** Creds of a user of the system account: pushes account JWTs via $SYS. */
  systemCredsFile: string;
  /** The URL clients connect to. */
  url: string;
}

/**
 * Writes a complete operator-mode nats-server configuration into `dir`: operator,
 * operator signing key, system account and system user (created once, reused after),
 * a full resolver with the system account preloaded, and JetStream with domain `hub`.
 * The managed server uses exactly this; so can an operator running nats-server
 * themselves (external mode), or a test.
 */
export async function writeNatsServerConfig(dir: string, opts: NatsServerConfigOptions): Promise<WrittenNatsConfig> {
  const layout = natsLayout(dir);
  await ensurePrivateDir(layout.root);
  await ensurePrivateDir(layout.keysDir);
  const operator = await loadOrCreateSeed(layout.operatorSeedFile, 'operator');
  const operatorSigning = await loadOrCreateSeed(layout.operatorSigningSeedFile, 'operator');
  const systemAccount = await loadOrCreateSeed(layout.systemAccountSeedFile, 'account');
  const systemUser = await loadOrCreateSeed(layout.systemUserSeedFile, 'user');

  const sysPub = systemAccount.getPublicKey();
  await writeFile(layout.operatorJwtFile, `${await operatorJwt(operator, operatorSigning, sysPub)}\n`, { mode: 0o644 });
  const sysJwt = await systemAccountJwt(systemAccount, operatorSigning);
  // The system user is issued by the account identity key: the system account has no signing key.
  const sysUserJwt = await encodeUser('svc-relay-system', systemUser, systemAccount, {});
  await writeSecretFile(layout.systemCredsFile, credsFile(sysUserJwt, systemUser));
  await ensurePrivateDir(layout.resolverDir);
  await ensurePrivateDir(layout.jetstreamDir);

  const host = opts.host ?? '127.0.0.1';
  const q = (s: string) => JSON.stringify(s);
  const lines = [
    '# Written by svc-relay on every start of the bus; edits are overwritten.',
    `host: ${q(host)}`,
    `port: ${opts.port}`,
    `operator: ${q(layout.operatorJwtFile)}`,
    `system_account: ${q(sysPub)}`,
    // The full resolver stores pushed account JWTs on disk, so tenants created at run
    // time via $SYS.REQ.CLAIMS.UPDATE survive a restart (the memory resolver cannot add any).
    'resolver: {',
    '  type: full',
    `  dir: ${q(layout.resolverDir)}`,
    '  allow_delete: false',
    '  interval: "2m"',
    `  limit: ${opts.maxAccounts ?? 10_000}`,
    '}',
    'resolver_preload: {',
    `  ${sysPub}: ${q(sysJwt)}`,
    '}',
    'jetstream: {',
    `  store_dir: ${q(layout.jetstreamDir)}`,
    `  domain: ${q(JETSTREAM_DOMAIN)}`,
    '}',
  ];
  if (opts.leafnodes) {
    lines.push('leafnodes: {', `  host: ${q(opts.leafnodes.host ?? host)}`, `  port: ${opts.leafnodes.port}`);
    // Without advertise the hub gossips addresses an edge may not reach.
    lines.push(opts.leafnodes.advertise ? `  advertise: ${q(opts.leafnodes.advertise)}` : '  no_advertise: true', '}');
  }
  await writeFile(layout.configFile, `${lines.join('\n')}\n`, { mode: 0o600 });
  // `mode` applies only when the file is created: a file left by an older relay is tightened.
  await chmod(layout.configFile, 0o600);

  return {
    configFile: layout.configFile,
    operatorSeedFile: layout.operatorSigningSeedFile,
    systemCredsFile: layout.systemCredsFile,
    url: clientUrl(host, opts.port),
  };
}

/** A URL clients on this machine can use for a server listening on `host`. */
export function clientUrl(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '') return `nats://127.0.0.1:${port}`;
  if (host === '::') return `nats://[::1]:${port}`;
  return host.includes(':') ? `nats://[${host}]:${port}` : `nats://${host}:${port}`;
}

/**
 * Asks the OS for a free port. nats-server's own random port (-1) would need the port
 * to be read back from a ports file; picking it first keeps the URL known up front.
 */
export async function findFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('could not pick a free port'))));
    });
  });
}
