/**
 * Uplink creds an older relay minted in the tenant account (before edges had uplink
 * accounts) are revoked when a relay starts: with them an edge could have the hub deliver
 * its sources' messages to any subject of the tenant account. Creds of the edge's own
 * uplink account are left alone. A real relay with its nats-server, started twice on one
 * data dir; the older relay's user is minted the way it minted them.
 */
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import { freePort, tempDir, until } from '@svc/test-harness';
import { call, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, expect, it } from 'vitest';

let relay: BusRelay | undefined;
afterAll(async () => {
  await relay?.close();
});

const liveUsers = async (r: BusRelay, edgeRow: string) =>
  (await r.relay.context.stores.sources.liveUplinkUsersOfAll())
    .filter((u) => u.agent_row === edgeRow)
    .map((u) => u.public_key)
    .sort();

it('a start revokes the tenant-account uplink users of an older relay, and only those', async () => {
  const dataDir = tempDir('svc-relay-legacy-uplink-');
  const settings = { SVC_RELAY_DATA_DIR: dataDir, SVC_RELAY_LEAF_LISTEN: `127.0.0.1:${await freePort()}` };
  relay = await inProcessBusRelay(settings);
  const ctx = relay.relay.context;
  const edge: TestAgent = await relay.enroll('edge-1', undefined, ['nats-relay']);
  const edgeRow = (await ctx.ledger.activeAgent(edge.tenantId, edge.agentId))?.id as string;
  // this relay's creds: a user of the edge's uplink account
  const issued = await call<{ user_public_key: string }>(
    relay.url,
    'POST',
    '/api/v1/nats/issue-leaf-creds',
    {},
    edge.auth,
  );
  expect(issued.status).toBe(200);
  // an older relay's: a user of the tenant account, recorded as the edge's
  const legacy = await ctx.bus.mintUserCreds(edge.tenantId, { name: `uplink:${edge.agentId}`, expiresInSeconds: 3600 });
  await ctx.stores.sources.addUplinkUser({
    public_key: legacy.publicKey,
    tenant_id: edge.tenantId,
    agent_row: edgeRow,
    created_at: Date.now(),
  });
  expect(await liveUsers(relay, edgeRow)).toEqual([issued.body.user_public_key, legacy.publicKey].sort());
  await relay.close();

  relay = await inProcessBusRelay(settings);
  const restarted = relay;
  await until(async () => (await liveUsers(restarted, edgeRow)).length === 1, 15_000, 'the legacy user revoked');
  expect(await liveUsers(restarted, edgeRow)).toEqual([issued.body.user_public_key]);
  // the server refuses it now
  const bus = restarted.relay.context.bus;
  const clientUrl = (bus as unknown as { clientUrl: string }).clientUrl;
  await expect(
    connect({
      servers: clientUrl,
      authenticator: credsAuthenticator(new TextEncoder().encode(legacy.creds)),
      reconnect: false,
    }),
  ).rejects.toThrow(/authorization/i);
  expect(restarted.logLines.some((l) => l.includes('uplink creds of an older relay revoked'))).toBe(true);
}, 90_000);
