/**
 * The tenant account's revocation list against a real nats-server: a revoked user whose
 * JWT has expired is dropped from the list (the server refuses it anyway), so rotating
 * uplink creds does not grow the account JWT for ever; a user minted without an expiry
 * stays revoked. The clock is injected.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Account, decode } from '@nats-io/jwt';
import { fromSeed } from '@nats-io/nkeys';
import type { NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Bus } from './index.js';
import { busRoot, natsLayout, tenantFiles } from './layout.js';
import { connectWithCreds, lookupAccountJwt } from './system-client.js';

let dataDir: string;
let bus: Bus;
let sys: NatsConnection;
let clock = Date.now();

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-bus-prune-'));
  bus = await Bus.start({ dataDir, tenants: ['A'], logger: pino({ level: 'silent' }), now: () => clock });
  const layout = natsLayout(busRoot(dataDir));
  sys = await connectWithCreds(bus.clientUrl, await readFile(layout.systemCredsFile, 'utf8'), 'test-sys');
});

afterAll(async () => {
  await sys?.close();
  await bus?.close();
  await rm(dataDir, { recursive: true, force: true });
});

/** The revocations in the account JWT the server holds, and in the relay's saved state. */
async function revocations(): Promise<{ server: string[]; state: string[] }> {
  const layout = natsLayout(busRoot(dataDir));
  const files = tenantFiles(layout, 'A');
  const pub = fromSeed(new TextEncoder().encode((await readFile(files.accountSeedFile, 'utf8')).trim())).getPublicKey();
  const jwt = (await lookupAccountJwt(sys, pub, 2000)) ?? '';
  const state = JSON.parse(await readFile(files.stateFile, 'utf8')) as { revocations: Record<string, number> };
  return {
    server: Object.keys(decode<Account>(jwt).nats.revocations ?? {}).sort(),
    state: Object.keys(state.revocations).sort(),
  };
}

describe('the revocation list', () => {
  it('drops revoked users once their JWT expired, and keeps users that never expire', async () => {
    const forever = await bus.mintUserCreds('A', { name: 'no-expiry' });
    const uplink1 = await bus.mintUserCreds('A', { name: 'uplink', expiresInSeconds: 60 });
    await bus.revokeUsers('A', [forever.publicKey, uplink1.publicKey]);
    const both = [forever.publicKey, uplink1.publicKey].sort();
    expect(await revocations()).toEqual({ server: both, state: both });

    // a rotation inside the first creds' life keeps them revoked
    const uplink2 = await bus.mintUserCreds('A', { name: 'uplink', expiresInSeconds: 60 });
    clock += 30_000;
    await bus.revokeUsers('A', [uplink2.publicKey]);
    const three = [...both, uplink2.publicKey].sort();
    expect(await revocations()).toEqual({ server: three, state: three });

    // past their expiry, the next change drops them; the user without expiry stays
    clock += 120_000;
    const uplink3 = await bus.mintUserCreds('A', { name: 'uplink', expiresInSeconds: 60 });
    await bus.revokeUsers('A', [uplink3.publicKey]);
    const left = [forever.publicKey, uplink3.publicKey].sort();
    expect(await revocations()).toEqual({ server: left, state: left });
  }, 30_000);
});
