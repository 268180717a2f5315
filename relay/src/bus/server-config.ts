import { chmod, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
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
  const op = await writeOperatorFiles(dir);
  await ensurePrivateDir(layout.resolverDir);
  await ensurePrivateDir(layout.jetstreamDir);

  const host = opts.host ?? '127.0.0.1';
  const q = (s: string) => JSON.stringify(s);
  const lines = [
    '# Written by svc-relay on every start of the bus; edits are overwritten.',
    `host: ${q(host)}`,
    `port: ${opts.port}`,
    `operator: ${q(layout.operatorJwtFile)}`,
    `system_account: ${q(op.systemAccountPub)}`,
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
    `  ${op.systemAccountPub}: ${q(op.systemAccountJwt)}`,
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
    operatorSeedFile: op.operatorSeedFile,
    systemCredsFile: op.systemCredsFile,
    url: clientUrl(host, opts.port),
  };
}

export interface OperatorFiles {
  /** Operator signing key seed: the relay's SVC_RELAY_NATS_OPERATOR_SEED_FILE. */
  operatorSeedFile: string;
  /** Creds of a system-account user: the relay's SVC_RELAY_NATS_SYSTEM_CREDS_FILE. */
  systemCredsFile: string;
  operatorJwtFile: string;
  systemAccountPub: string;
  systemAccountJwt: string;
  /**
   * `operator.conf`, for nats-server configs to include: the operator JWT (inline, so the
   * file can move), the system account and its preloaded JWT. Every node of a cluster
   * includes the same one.
   */
  includeFile: string;
}

/**
 * The operator-mode trust chain under `dir` (created once, reused after): operator and its
 * signing key, system account and system user, and `operator.conf` that nats-server
 * configurations include.
 */
export async function writeOperatorFiles(dir: string): Promise<OperatorFiles> {
  const layout = natsLayout(dir);
  await ensurePrivateDir(layout.root);
  await ensurePrivateDir(layout.keysDir);
  const operator = await loadOrCreateSeed(layout.operatorSeedFile, 'operator');
  const operatorSigning = await loadOrCreateSeed(layout.operatorSigningSeedFile, 'operator');
  const systemAccount = await loadOrCreateSeed(layout.systemAccountSeedFile, 'account');
  const systemUser = await loadOrCreateSeed(layout.systemUserSeedFile, 'user');

  const sysPub = systemAccount.getPublicKey();
  const opJwt = await operatorJwt(operator, operatorSigning, sysPub);
  await writeFile(layout.operatorJwtFile, `${opJwt}\n`, { mode: 0o644 });
  const sysJwt = await systemAccountJwt(systemAccount, operatorSigning);
  // The system user is issued by the account identity key: the system account has no signing key.
  const sysUserJwt = await encodeUser('svc-relay-system', systemUser, systemAccount, {});
  await writeSecretFile(layout.systemCredsFile, credsFile(sysUserJwt, systemUser));
  const q = (s: string) => JSON.stringify(s);
  const includeFile = join(layout.root, 'operator.conf');
  const include = [
    '# Written by svc-relay: the operator, the system account and its JWT (no secrets).',
    `operator: ${q(opJwt)}`,
    `system_account: ${q(sysPub)}`,
    'resolver_preload: {',
    `  ${sysPub}: ${q(sysJwt)}`,
    '}',
  ];
  await writeFile(includeFile, `${include.join('\n')}\n`, { mode: 0o644 });
  return {
    operatorSeedFile: layout.operatorSigningSeedFile,
    systemCredsFile: layout.systemCredsFile,
    operatorJwtFile: layout.operatorJwtFile,
    systemAccountPub: sysPub,
    systemAccountJwt: sysJwt,
    includeFile,
  };
}

export interface ClusterNode {
  /** server_name, unique in the cluster */
  name: string;
  host?: string;
  /** client port */
  port: number;
  /** cluster (route) port */
  clusterPort: number;
  /** HTTP monitoring port (/healthz, /jsz); absent = none */
  monitorPort?: number;
}

/**
 * One nats-server configuration per node of a cluster in `dir` (`<name>.conf`): the shared
 * operator include, the full resolver and JetStream (domain `hub`) on every node, each with
 * its own directories, and routes to every node. Returns the files and the client URL list
 * (the relay's SVC_RELAY_NATS_URL).
 */
export async function writeNatsClusterConfig(
  dir: string,
  nodes: ClusterNode[],
  clusterName = 'svc',
): Promise<{ configFiles: string[]; url: string } & OperatorFiles> {
  const op = await writeOperatorFiles(dir);
  const q = (s: string) => JSON.stringify(s);
  const configFiles: string[] = [];
  for (const node of nodes) {
    const host = node.host ?? '127.0.0.1';
    const nodeDir = join(dir, node.name);
    await ensurePrivateDir(join(nodeDir, 'jwt'));
    await ensurePrivateDir(join(nodeDir, 'jetstream'));
    const lines = [
      `server_name: ${q(node.name)}`,
      `host: ${q(host)}`,
      `port: ${node.port}`,
      ...(node.monitorPort ? [`http: ${q(`${host}:${node.monitorPort}`)}`] : []),
      `include ${q(basename(op.includeFile))}`,
      'resolver: {',
      '  type: full',
      `  dir: ${q(join(nodeDir, 'jwt'))}`,
      '  allow_delete: false',
      '  interval: "2m"',
      '  limit: 10000',
      '}',
      'jetstream: {',
      `  store_dir: ${q(join(nodeDir, 'jetstream'))}`,
      `  domain: ${q(JETSTREAM_DOMAIN)}`,
      '}',
    ];
    // a single node runs without routes (JetStream in clustered mode wants peers)
    if (nodes.length > 1) {
      lines.push(
        'cluster: {',
        `  name: ${q(clusterName)}`,
        `  host: ${q(host)}`,
        `  port: ${node.clusterPort}`,
        '  routes: [',
        ...nodes.map((n) => `    ${q(`nats-route://${n.host ?? '127.0.0.1'}:${n.clusterPort}`)}`),
        '  ]',
        '}',
      );
    }
    const file = join(dirname(op.includeFile), `${node.name}.conf`);
    await writeFile(file, `${lines.join('\n')}\n`, { mode: 0o600 });
    configFiles.push(file);
  }
  return { ...op, configFiles, url: nodes.map((n) => clientUrl(n.host ?? '127.0.0.1', n.port)).join(',') };
}

/** A URL clients on this machine can use for a server listening on `host`. */
export function clientUrl(host: string, port: number): string {
  if (host === '0.0.0.0' || host === '') return `nats://127.0.0.1:${port}`;
  if (host === '::') return `nats://[::1]:${port}`;
  return host.includes(':') ? `nats://[${host}]:${port}` : `nats://${host}:${port}`;
}

/** The client port when none is configured: picked first, so the URL is known up front. */
export { findFreePort } from '@svc/shared/node';
