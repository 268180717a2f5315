/**
 * Edges' uplink accounts against a real nats-server: the tenant account exports its
 * sources' services only with an activation; an edge's account imports exactly its own
 * durables and holds nothing else (no JetStream, no client connections); its keys are
 * derived from the tenant's, never stored; revoking an edge's users revokes them in its
 * account, and an uplink user an older relay minted in the tenant account there too.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Account, decode } from '@nats-io/jwt';
import { fromSeed } from '@nats-io/nkeys';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOURCES_PER_EDGE_MAX } from '../config/config.js';
import { Bus } from './index.js';
import { deriveAccountKey } from './keys.js';
import { busRoot, natsLayout, tenantFiles } from './layout.js';
import { sourceDurable } from './sources.js';
import { connectWithCreds, lookupAccountJwt } from './system-client.js';

let dataDir: string;
let bus: Bus;
let sys: NatsConnection;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-bus-uplink-'));
  bus = await Bus.start({ dataDir, tenants: ['A', 'B'], logger: pino({ level: 'silent' }) });
  const layout = natsLayout(busRoot(dataDir));
  sys = await connectWithCreds(bus.clientUrl, await readFile(layout.systemCredsFile, 'utf8'), 'test-sys');
}, 30_000);

afterAll(async () => {
  await sys?.close();
  await bus?.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function tenantAccount(): Promise<string> {
  const files = tenantFiles(natsLayout(busRoot(dataDir)), 'A');
  return fromSeed(new TextEncoder().encode((await readFile(files.accountSeedFile, 'utf8')).trim())).getPublicKey();
}

async function accountClaims(pub: string): Promise<Account> {
  const jwt = await lookupAccountJwt(sys, pub, 2000);
  if (!jwt) throw new Error(`the server holds no JWT for ${pub}`);
  return decode<Account>(jwt).nats as Account;
}

describe('uplink accounts', () => {
  it("the tenant account exports its sources' services, each only with an activation", async () => {
    const tenant = await accountClaims(await tenantAccount());
    expect(tenant.exports?.map((e) => [e.subject, e.token_req, e.response_type]).sort()).toEqual([
      ['$JS.ACK.SVC_MSGS.*.>', true, 'Singleton'],
      ['$JS.API.CONSUMER.INFO.SVC_MSGS.*', true, 'Singleton'],
      ['$JS.API.CONSUMER.MSG.NEXT.SVC_MSGS.*', true, 'Stream'],
    ]);
    expect(tenant.imports).toEqual([]);
  });

  it("an edge's account imports exactly its durables, from its own tenant, and holds nothing else", async () => {
    await bus.publishUplink('A', 'edge-row-1', ['src_bob', 'src_carol']);
    const pub = await bus.uplinkAccount('A', 'edge-row-1');
    const claims = await accountClaims(pub);
    const tenantPub = await tenantAccount();
    expect(claims.imports?.map((i) => [i.local_subject, i.subject]).sort()).toEqual(
      [
        ['$JS.hub.API.CONSUMER.MSG.NEXT.SVC_MSGS.src_bob', '$JS.API.CONSUMER.MSG.NEXT.SVC_MSGS.src_bob'],
        ['$JS.hub.API.CONSUMER.INFO.SVC_MSGS.src_bob', '$JS.API.CONSUMER.INFO.SVC_MSGS.src_bob'],
        ['$JS.ACK.SVC_MSGS.src_bob.>', '$JS.ACK.SVC_MSGS.src_bob.>'],
        ['$JS.hub.API.CONSUMER.MSG.NEXT.SVC_MSGS.src_carol', '$JS.API.CONSUMER.MSG.NEXT.SVC_MSGS.src_carol'],
        ['$JS.hub.API.CONSUMER.INFO.SVC_MSGS.src_carol', '$JS.API.CONSUMER.INFO.SVC_MSGS.src_carol'],
        ['$JS.ACK.SVC_MSGS.src_carol.>', '$JS.ACK.SVC_MSGS.src_carol.>'],
      ].sort(),
    );
    for (const im of claims.imports ?? []) {
      expect(im.account).toBe(tenantPub);
      // the activation names this account and this subject, signed by the tenant account
      const act = decode<{ subject: string }>(im.token ?? '');
      expect([act.sub, act.iss, act.nats.subject]).toEqual([pub, tenantPub, im.subject]);
    }
    expect(claims.exports).toEqual([]);
    expect(claims.limits).toMatchObject({ conn: 0, exports: 0, mem_storage: 0, disk_storage: 0, streams: 0 });

    // a release: the durable is no longer imported
    await bus.publishUplink('A', 'edge-row-1', ['src_carol']);
    expect((await accountClaims(pub)).imports?.map((i) => i.subject).filter((s) => s.includes('src_bob'))).toEqual([]);
  });

  it('an edge at the most sources a relay allows, with the longest agent numbers, fits one NATS message', async () => {
    // agent numbers are at most 128 characters; the server takes a JWT push up to max_payload (1 MB)
    const durables = Array.from({ length: SOURCES_PER_EDGE_MAX }, (_, i) =>
      sourceDurable(`${String(i).padStart(3, '0')}${'n'.repeat(125)}`),
    );
    await bus.publishUplink('A', 'edge-row-max', durables);
    const jwt = await lookupAccountJwt(sys, await bus.uplinkAccount('A', 'edge-row-max'), 2000);
    expect(decode<Account>(jwt ?? '').nats.imports).toHaveLength(3 * SOURCES_PER_EDGE_MAX);
    expect(jwt?.length).toBeLessThan(1024 * 1024);
  });

  it("derives each edge's account from the tenant's key (the same on every instance), storing no seed", async () => {
    const seed = (await readFile(tenantFiles(natsLayout(busRoot(dataDir)), 'A').accountSeedFile, 'utf8')).trim();
    const tenantKey = fromSeed(new TextEncoder().encode(seed));
    expect(await bus.uplinkAccount('A', 'edge-row-1')).toBe(
      deriveAccountKey(tenantKey, 'uplink-account:edge-row-1').getPublicKey(),
    );
    expect(await bus.uplinkAccount('A', 'edge-row-2')).not.toBe(await bus.uplinkAccount('A', 'edge-row-1'));
    const dir = tenantFiles(natsLayout(busRoot(dataDir)), 'A').dir;
    expect((await readdir(dir)).filter((f) => f.endsWith('.nk')).sort()).toEqual([
      'account-signing.nk',
      'account.nk',
      'relay-user.nk',
    ]);
  });

  it("revokes an edge's users in its account, and an older relay's uplink user in the tenant account", async () => {
    await bus.publishUplink('A', 'edge-row-3', []);
    const current = await bus.mintUplinkCreds('A', 'edge-row-3', { name: 'uplink', expiresInSeconds: 600 });
    // minted in the tenant account, as relays before the uplink accounts did
    const legacy = await bus.mintUserCreds('A', { name: 'uplink', expiresInSeconds: 600 });
    const nc = await connect({
      servers: bus.clientUrl,
      authenticator: credsAuthenticator(new TextEncoder().encode(legacy.creds)),
      reconnect: false,
    });
    await bus.publishUplink('A', 'edge-row-3', [], [current.publicKey, legacy.publicKey]);
    await nc.closed();
    expect(nc.isClosed()).toBe(true);
    const uplink = await accountClaims(await bus.uplinkAccount('A', 'edge-row-3'));
    expect(Object.keys(uplink.revocations ?? {})).toEqual([current.publicKey]);
    const tenant = await accountClaims(await tenantAccount());
    expect(Object.keys(tenant.revocations ?? {})).toEqual([legacy.publicKey]);
    // a user neither account minted (or whose record expired) adds no revocation anywhere
    const stranger = (await bus.mintUserCreds('B', { name: 'elsewhere' })).publicKey;
    await bus.publishUplink('A', 'edge-row-3', [], [stranger]);
    expect(Object.keys((await accountClaims(await bus.uplinkAccount('A', 'edge-row-3'))).revocations ?? {})).toEqual([
      current.publicKey,
    ]);
  });
});
