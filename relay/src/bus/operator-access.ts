/**
 * For operator commands on the relay host (not the running relay): a connection as the
 * relay's own user of a tenant account, from the keys the bus keeps in the data dir.
 * Nothing is created: missing keys are an error.
 */
import { readFile } from 'node:fs/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { credsFile, userJwt } from './jwts.js';
import { readSeedFile } from './keys.js';
import { busRoot, natsLayout, tenantFiles } from './layout.js';
import { clientUrl } from './server-config.js';
import { connectWithCreds } from './system-client.js';

/** The client URL of the managed nats-server of this data dir (from the config it wrote). */
export async function managedNatsUrl(dataDir: string): Promise<string> {
  const text = await readFile(natsLayout(busRoot(dataDir)).configFile, 'utf8');
  const host = /^host: "([^"]*)"$/m.exec(text)?.[1];
  const port = Number(/^port: (\d+)$/m.exec(text)?.[1]);
  if (host === undefined || !Number.isInteger(port)) throw new Error('the nats-server config names no host and port');
  return clientUrl(host, port);
}

export async function connectAsRelay(
  dataDir: string,
  url: string,
  tenantId: string,
  timeoutMs = 2000,
): Promise<NatsConnection> {
  const files = tenantFiles(natsLayout(busRoot(dataDir)), tenantId);
  const account = await readSeedFile(files.accountSeedFile, 'account');
  const signing = await readSeedFile(files.signingSeedFile, 'account');
  const user = await readSeedFile(files.relayUserSeedFile, 'user');
  const jwt = await userJwt(user, account.getPublicKey(), signing, { name: `svc-relay-operator@${tenantId}` });
  return connectWithCreds(url, credsFile(jwt, user), `svc-relay-operator:${tenantId}`, { timeoutMs });
}
