/**
 * Leaf uplinks: relay-uplink/v1 credentials only for a nats-relay identity; a real edge
 * nats-server joins the hub as a leaf node with them and pulls its named source across
 * the link (JetStream domain hub); nothing else of the hub's JetStream API is reachable;
 * rotation revokes the old user and the edge comes back with the new file; a released source
 * is out of its reach at once; revoking the uplink identity cuts its link.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import type { UplinkCreds as Creds } from '@svc/shared';
import { freePort } from '@svc/test-harness';
import { call, sealFor, sourceClaimBody, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bus } from '../src/bus/index.js';
import { cleanupIncarnation } from '../src/services/revocation.js';
import { type EdgeServer, startEdgeServer } from './helpers/edge-nats.js';

let relay: BusRelay;
let leafPort: number;
let alice: TestAgent;
let bob: TestAgent;
let edge: TestAgent;
let edgeServer: EdgeServer | undefined;
let edgeClient: NatsConnection | undefined;
/** the edge identity's row id: its uplink account is derived from it */
let edgeRow: string;

const issue = (who: TestAgent) => call<Creds>(relay.url, 'POST', '/api/v1/nats/issue-leaf-creds', {}, who.auth);

/** Pulls one message from the source across the leaf link, retrying while the link comes up. */
async function pullOne(nc: NatsConnection, durable: string): Promise<string> {
  const js = jetstream(nc, { domain: 'hub', timeout: 1000 });
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      const consumer = await js.consumers.get('SVC_MSGS', durable);
      const m = await consumer.next({ expires: 1000 });
      if (m) {
        m.ack();
        return m.headers?.get('Nats-Msg-Id') ?? '';
      }
    } catch {
      // the leaf link is still connecting (or reconnecting after a rotation)
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('no message crossed the leaf link');
}

/**
 * Leaf node connections of the edge's uplink account as the hub counts them, once they are
 * `expected` (a reconnect or a cut takes a moment), or as they are after 5 s.
 */
async function leafConnections(who: TestAgent, expected: number): Promise<number> {
  const bus = relay.relay.context.bus as Bus;
  const account = await bus.uplinkAccount(who.tenantId, edgeRow);
  const sys = await connect({
    servers: bus.clientUrl,
    authenticator: credsAuthenticator(readFileSync(join(relay.dataDir, 'nats', 'keys', 'system-user.creds'))),
  });
  try {
    let n = -1;
    for (let attempt = 0; attempt < 50 && n !== expected; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 100));
      const info = (await sys.request(`$SYS.REQ.ACCOUNT.${account}.INFO`, '')).json<{
        data?: { leafnode_connections?: number };
      }>();
      n = info.data?.leafnode_connections ?? 0;
    }
    return n;
  } finally {
    await sys.close();
  }
}

beforeAll(async () => {
  leafPort = await freePort();
  relay = await inProcessBusRelay({ SVC_RELAY_LEAF_LISTEN: `127.0.0.1:${leafPort}` });
  alice = await relay.enroll('alice');
  bob = await relay.enroll('bob');
  edge = await relay.enroll('edge-1', undefined, ['nats-relay']);
  edgeRow = (await relay.relay.context.ledger.activeAgent(edge.tenantId, edge.agentId))?.id ?? '';
}, 30_000);

afterAll(async () => {
  await edgeClient?.close();
  await edgeServer?.stop();
  await relay?.close();
});

describe('POST /api/v1/nats/issue-leaf-creds', () => {
  it('refuses an identity without the nats-relay capability (an ordinary agent)', async () => {
    const res = await issue(alice);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'capability_required' });
    const claim = await call(relay.url, 'POST', '/api/v1/sources', sourceClaimBody(bob, alice.number), alice.auth);
    expect(claim.status).toBe(403);
    expect(claim.body).toMatchObject({ error: 'capability_required' });
  });

  it('a nats-relay identity gets no ordinary agent route', async () => {
    const res = await call(relay.url, 'GET', '/api/v1/messages/pending', undefined, edge.auth);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'capability_required' });
  });

  it('issues leaf-only creds scoped to the sources of the edge, and a message crosses the leaf link', async () => {
    const claim = await call(relay.url, 'POST', '/api/v1/sources', sourceClaimBody(bob, edge.number), edge.auth);
    expect(claim.status).toBe(200);
    expect(claim.body).toMatchObject({ agent_id: 'bob', durable: 'src_bob', filter_subject: 'msg.bob' });

    const res = await issue(edge);
    expect(res.status).toBe(200);
    const c = res.body;
    expect(c).toMatchObject({
      kind: 'relay-uplink/v1',
      leaf_url: `nats-leaf://127.0.0.1:${leafPort}`,
      jetstream_domain: 'hub',
      inbox_prefix: '_INBOX_edge-1',
      sources: ['src_bob'],
      revoked_users: 0,
    });
    expect(Date.parse(c.expires_at)).toBeGreaterThan(Date.now());
    expect(c.subjects).not.toContain('$JS.hub.API.>');
    expect(c.subjects).not.toContain('_INBOX.>');
    expect(c.subjects.every((s) => !s.startsWith('$JS.hub.API.') || s.endsWith('.src_bob'))).toBe(true);

    // leaf-only: the same creds cannot open an ordinary client connection to the hub
    await expect(
      connect({
        servers: relay.relay.context.bus.leafUrl?.replace('nats-leaf', 'nats') ?? '',
        authenticator: credsAuthenticator(new TextEncoder().encode(c.creds)),
        reconnect: false,
        timeout: 2000,
      }).then((nc) => nc.close()),
    ).rejects.toThrow();

    edgeServer = await startEdgeServer(c.leaf_url, c.creds);
    edgeClient = await edgeServer.connect(c.inbox_prefix);
    const env = sealFor(alice, bob, 'across the leaf');
    const sent = await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [env] }, alice.auth);
    expect(sent.status).toBe(202);
    expect(await pullOne(edgeClient, 'src_bob')).toMatch(new RegExp(`^${env.header.message_id}:bob:`));
  }, 30_000);

  it("keeps the rest of the hub's JetStream API out of reach of the edge", async () => {
    if (!edgeClient) throw new Error('needs the edge of the previous test');
    // checkAPI off: the account info call it would make is itself out of reach
    const jsm = await jetstreamManager(edgeClient, { domain: 'hub', timeout: 1000, checkAPI: false });
    await expect(jsm.getAccountInfo()).rejects.toThrow();
    await expect(jsm.streams.info('SVC_MSGS')).rejects.toThrow();
    await expect(jsm.streams.delete('SVC_MSGS')).rejects.toThrow();
    await expect(
      jsm.consumers.add('SVC_MSGS', { durable_name: 'src_alice', filter_subject: 'msg.alice' }),
    ).rejects.toThrow();
    const hub = await jetstreamManager(await relay.relay.context.bus.tenantConnection(alice.tenantId));
    expect((await hub.streams.info('SVC_MSGS')).config.name).toBe('SVC_MSGS');
    await expect(hub.consumers.info('SVC_MSGS', 'src_alice')).rejects.toThrow(/consumer not found/);
  }, 30_000);

  it('rotates without a restart: the old user is revoked, the edge comes back with the new creds', async () => {
    if (!edgeServer || !edgeClient) throw new Error('needs the edge of the previous test');
    const first = await issue(edge);
    expect(first.status).toBe(200);
    // the test's first issue above, plus this one: the earlier one is revoked now
    expect(first.body.revoked_users).toBe(1);
    edgeServer.writeCreds(first.body.creds);
    const env = sealFor(alice, bob, 'after the rotation');
    expect((await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [env] }, alice.auth)).status).toBe(202);
    expect(await pullOne(edgeClient, 'src_bob')).toMatch(new RegExp(`^${env.header.message_id}:bob:`));
    const again = await issue(edge);
    expect(again.body.revoked_users).toBe(1);
    edgeServer.writeCreds(again.body.creds);
    expect(await leafConnections(edge, 1)).toBe(1);
  }, 30_000);

  it('a released source is out of reach of the edge at once, with the creds it holds', async () => {
    if (!edgeClient) throw new Error('needs the edge of the previous test');
    expect((await call(relay.url, 'DELETE', `/api/v1/sources/${bob.number}`, undefined, edge.auth)).status).toBe(204);
    // another machine claims bob: his consumer has the same name again
    const other = await relay.enroll('edge-2', undefined, ['nats-relay']);
    const claim = await call(relay.url, 'POST', '/api/v1/sources', sourceClaimBody(bob, other.number), other.auth);
    expect(claim.status).toBe(200);
    const sent = sealFor(alice, bob, 'for the machine that streams bob now');
    expect((await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [sent] }, alice.auth)).status).toBe(202);
    // the edge's creds still name src_bob, but its uplink account no longer imports it
    const jsm = await jetstreamManager(edgeClient, { domain: 'hub', timeout: 1000, checkAPI: false });
    await expect(jsm.consumers.info('SVC_MSGS', 'src_bob')).rejects.toThrow();
    // nothing of the new consumer went to it
    const hub = await jetstreamManager(await relay.relay.context.bus.tenantConnection(alice.tenantId));
    expect((await hub.consumers.info('SVC_MSGS', 'src_bob')).delivered.consumer_seq).toBe(0);
  }, 30_000);

  it("revoking the uplink identity cuts the edge's leaf link", async () => {
    expect(await leafConnections(edge, 1)).toBe(1);
    const ctx = relay.relay.context;
    const revoked = await ctx.ledger.revokeAgent(edge.tenantId, edge.agentId, ctx.now());
    if (!revoked) throw new Error('the edge identity is active');
    await cleanupIncarnation(ctx, revoked);
    expect(await leafConnections(edge, 0)).toBe(0);
  }, 30_000);
});
