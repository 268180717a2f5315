import { join } from 'node:path';

/**
 * Where the bus keeps its files. Everything lives under `<dataDir>/nats/`, which the
 * bus owns: seeds and creds (0600), the server config, the full resolver's JWT
 * directory, the JetStream store and the pid file.
 */
export interface NatsLayout {
  root: string;
  keysDir: string;
  operatorSeedFile: string;
  operatorSigningSeedFile: string;
  systemAccountSeedFile: string;
  systemUserSeedFile: string;
  systemCredsFile: string;
  operatorJwtFile: string;
  configFile: string;
  resolverDir: string;
  jetstreamDir: string;
  pidFile: string;
  tenantsDir: string;
}

export function natsLayout(root: string): NatsLayout {
  const keysDir = join(root, 'keys');
  return {
    root,
    keysDir,
    operatorSeedFile: join(keysDir, 'operator.nk'),
    operatorSigningSeedFile: join(keysDir, 'operator-signing.nk'),
    systemAccountSeedFile: join(keysDir, 'system-account.nk'),
    systemUserSeedFile: join(keysDir, 'system-user.nk'),
    systemCredsFile: join(keysDir, 'system-user.creds'),
    operatorJwtFile: join(root, 'operator.jwt'),
    configFile: join(root, 'nats-server.conf'),
    resolverDir: join(root, 'jwt'),
    jetstreamDir: join(root, 'jetstream'),
    pidFile: join(root, 'nats-server.pid'),
    tenantsDir: join(keysDir, 'tenants'),
  };
}

/** The bus directory inside the relay's data dir. */
export function busRoot(dataDir: string): string {
  return join(dataDir, 'nats');
}

export interface TenantFiles {
  dir: string;
  accountSeedFile: string;
  signingSeedFile: string;
  relayUserSeedFile: string;
  stateFile: string;
}

// Tenant ids become directory names and account names, so only a safe alphabet is accepted.
const TENANT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export function assertTenantId(tenantId: string): void {
  if (!TENANT_ID.test(tenantId) || tenantId.includes('..')) {
    throw new Error(`invalid tenant id "${tenantId}": use 1-64 characters from A-Z a-z 0-9 _ . - (no leading symbol)`);
  }
}

export function tenantFiles(layout: NatsLayout, tenantId: string): TenantFiles {
  assertTenantId(tenantId);
  const dir = join(layout.tenantsDir, tenantId);
  return {
    dir,
    accountSeedFile: join(dir, 'account.nk'),
    signingSeedFile: join(dir, 'account-signing.nk'),
    relayUserSeedFile: join(dir, 'relay-user.nk'),
    stateFile: join(dir, 'state.json'),
  };
}

export interface UplinkFiles {
  /** revocations and expiries of the edge's uplink account (its keys are derived, never stored) */
  stateFile: string;
}

// Edge ids (agent row ids) become file names.
const EDGE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The files of an edge's uplink account, under its tenant's directory. */
export function uplinkFiles(layout: NatsLayout, tenantId: string, edgeId: string): UplinkFiles {
  if (!EDGE_ID.test(edgeId)) throw new Error(`invalid edge id "${edgeId}"`);
  return { stateFile: join(tenantFiles(layout, tenantId).dir, 'uplinks', `${edgeId}.json`) };
}
