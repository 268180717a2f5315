/**
 * Two relay processes as one relay: one data dir, one ledger, one external nats-server.
 * A send accepted by either instance reaches a reader on the other at once; pending,
 * acknowledgements, receipts, idempotency and quotas agree whichever instance answers, and a
 * revocation taken by one ends the agent's streams on both.
 */
import { freePort, until } from '@svc/test-harness';
import {
  call,
  enrollAgent,
  openMessageStream,
  sealFor,
  signInSignature,
  type TestAgent,
} from '@svc/test-harness/agent-client';
import { type NatsCluster, startNatsCluster } from '@svc/test-harness/nats-cluster';
import { type RelayProcess, runRelayCli, spawnRelayFleet } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let nats: NatsCluster;
let a: RelayProcess;
let b: RelayProcess;
let alice: TestAgent;
let bob: TestAgent;
let mallory: TestAgent;

type Results = { results: Array<{ message_id: string; recipient: string; status: string }> };
const send = (relay: RelayProcess, from: TestAgent, envelopes: unknown[]) =>
  call<Results>(relay.url, 'POST', '/api/v1/messages', { envelopes }, from.auth);
const pendingIds = async (relay: RelayProcess, who: TestAgent) =>
  (
    await call<{ envelopes: Array<{ message_id: string }> }>(
      relay.url,
      'GET',
      '/api/v1/messages/pending?limit=100',
      undefined,
      who.auth,
    )
  ).body.envelopes.map((e) => e.message_id);
const ack = (relay: RelayProcess, who: TestAgent, id: string) =>
  call(relay.url, 'POST', `/api/v1/messages/${id}/ack`, undefined, who.auth);
const receipts = async (relay: RelayProcess, who: TestAgent) =>
  (await call<{ receipts: Array<{ message_id: string }> }>(relay.url, 'GET', '/api/v1/receipts', undefined, who.auth))
    .body.receipts;

const cursorOf = async (relay: RelayProcess, who: TestAgent) =>
  (
    await call<{ envelopes: Array<{ cursor: number }> }>(
      relay.url,
      'GET',
      '/api/v1/messages/pending?limit=100',
      undefined,
      who.auth,
    )
  ).body.envelopes.at(-1)?.cursor;

async function agent(id: string, on: RelayProcess): Promise<TestAgent> {
  const g = await runRelayCli(['grant', '--agent-id', id, '--tenant', 'acme', '--json'], on.env);
  if (g.code !== 0) throw new Error(g.stderr);
  return enrollAgent(on.url, JSON.parse(g.stdout).enrollment_code);
}

beforeAll(async () => {
  nats = await startNatsCluster({ size: 1 });
  [a, b] = (await spawnRelayFleet({
    natsEnv: nats.relayEnv(1),
    env: { SVC_RELAY_TENANTS: 'acme', SVC_RELAY_RECIPIENT_MAX_PENDING: '2' },
  })) as [RelayProcess, RelayProcess];
  alice = await agent('alice', a);
  bob = await agent('bob', b);
  mallory = await agent('mallory', b);
}, 90_000);

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await nats?.stop();
});

describe('two relays, one NATS, one ledger', () => {
  it('alice sends on A; bob’s long-poll on B returns it at once, not at the end of its wait', async () => {
    const e = sealFor(alice, bob, 'across instances');
    const started = Date.now();
    // the long-poll waits up to 30 s; B learns of the envelope from A over the bus
    const poll = call<{ envelopes: Array<{ message_id: string; sender: string }> }>(
      b.url,
      'GET',
      '/api/v1/messages/pending?wait=30',
      undefined,
      bob.auth,
    );
    // a round trip to B first, so that the poll has most likely reached its wait (if not,
    // it finds the envelope on its first look and proves nothing, but passes)
    await until(async () => (await fetch(`${b.url}/readyz`)).ok, 5_000, 'B');
    expect((await send(a, alice, [e])).body.results[0]?.status).toBe('accepted');
    const outcome = await Promise.race([
      poll,
      until(() => Date.now() - started > 20_000, 25_000, 'the bound').then(() => 'still waiting' as const),
    ]);
    expect(outcome).not.toBe('still waiting');
    expect(outcome).toMatchObject({ status: 200 });
    expect(typeof outcome === 'object' && outcome.body.envelopes.map((x) => x.message_id)).toEqual([
      e.header.message_id,
    ]);

    // and on bob's event stream on B
    const stream = openMessageStream(b.url, bob.auth, (await cursorOf(b, bob)) ?? 0);
    try {
      await stream.opened;
      const live = sealFor(alice, bob, 'live across instances');
      expect((await send(a, alice, [live])).status).toBe(202);
      // well within the stream's own 15 s wait, after which it would look again anyway
      await until(() => stream.messageIds().includes(live.header.message_id), 10_000, 'the stream on B');
    } finally {
      stream.close();
    }
    for (const id of await pendingIds(b, bob)) await ack(b, bob, id);
  });

  it('pending, ack, receipts and retries agree whichever instance answers', async () => {
    const e = sealFor(alice, bob, 'ack on B, receipt on A');
    expect((await send(b, alice, [e])).body.results[0]?.status).toBe('accepted');
    // a retry on the other instance is the same message
    expect((await send(a, alice, [e])).body.results[0]).toEqual({
      message_id: e.header.message_id,
      recipient: bob.number,
      status: 'duplicate',
    });
    // the same id from another sender is refused on either instance
    const forged = sealFor(mallory, bob, 'same id', { message_id: e.header.message_id });
    expect(await send(a, mallory, [forged])).toMatchObject({ status: 409, body: { error: 'message_id_conflict' } });
    expect(await pendingIds(a, bob)).toContain(e.header.message_id);
    expect(await pendingIds(b, bob)).toContain(e.header.message_id);

    for (const id of await pendingIds(b, bob)) expect((await ack(b, bob, id)).status).toBe(200);
    expect(await pendingIds(a, bob)).toEqual([]);
    expect((await ack(a, bob, e.header.message_id)).body).toMatchObject({ already: true });
    expect((await receipts(a, alice)).map((r) => r.message_id)).toContain(e.header.message_id);
    expect((await receipts(b, alice)).map((r) => r.message_id)).toContain(e.header.message_id);
  });

  it('the same send on both instances at once: one accepted, one duplicate, stored once', async () => {
    for (let i = 0; i < 4; i++) {
      const e = sealFor(alice, bob, `both at once ${i}`);
      const [x, y] = await Promise.all([send(a, alice, [e]), send(b, alice, [e])]);
      expect([x.status, y.status]).toEqual([202, 202]);
      expect([x.body.results[0]?.status, y.body.results[0]?.status].sort()).toEqual(['accepted', 'duplicate']);
      expect((await pendingIds(b, bob)).filter((id) => id === e.header.message_id)).toHaveLength(1);
      expect((await ack(a, bob, e.header.message_id)).status).toBe(200);
    }
  });

  it('the pending quota follows acknowledgements made on the other instance', async () => {
    // the quota is 2: A counts both, B takes them away
    const first = [sealFor(alice, bob, 'one'), sealFor(alice, bob, 'two')];
    expect((await send(a, alice, first)).status).toBe(202);
    expect(await send(a, alice, [sealFor(alice, bob, 'over')])).toMatchObject({
      status: 507,
      body: { error: 'recipient_inbox_full' },
    });
    for (const e of first) expect((await ack(b, bob, e.header.message_id)).status).toBe(200);
    // A hears of the acknowledgements over the bus and reads its totals again (a refused
    // send stores nothing, so trying until it is accepted delivers it once)
    const third = sealFor(alice, bob, 'room again');
    await until(async () => (await send(a, alice, [third])).status === 202, 20_000, 'A to accept again');
    expect(await pendingIds(b, bob)).toEqual([third.header.message_id]);
    await ack(b, bob, third.header.message_id);
  });

  it("a revocation on A ends the agent's event streams on both instances at once", async () => {
    const carol = await agent('carol', a);
    const streams = [openMessageStream(a.url, carol.auth), openMessageStream(b.url, carol.auth)];
    try {
      await Promise.all(streams.map((s) => s.opened));
      // just opened: each stream's own periodic check of the ledger is 15 s away
      const revoked = await call(a.url, 'POST', '/api/v1/agents/me/revoke', undefined, carol.auth);
      expect(revoked.status).toBe(200);
      for (const [i, stream] of streams.entries()) {
        // B hears of it from A over the bus and asks the ledger
        const error = await until(
          () => stream.events.find((e) => e.kind === 'error'),
          10_000,
          `the end of carol's stream on ${i === 0 ? 'A' : 'B'}`,
        );
        expect(JSON.parse(error.kind === 'error' ? error.data : '{}')).toMatchObject({ error: 'invalid_token' });
      }
    } finally {
      for (const s of streams) s.close();
    }
  });

  it('a challenge issued by A signs in on B, once: both derive its nonce, the ledger spends it', async () => {
    const scope = { deployment_id: alice.deploymentId, tenant_id: alice.tenantId, agent_id: alice.agentId };
    const c = await call<{ challenge_id: string; nonce: string }>(
      a.url,
      'POST',
      '/api/v1/auth/sign-in/challenge',
      scope,
    );
    expect(c.status).toBe(201);
    const body = {
      challenge_id: c.body.challenge_id,
      agent_id: alice.agentId,
      signature: signInSignature(alice.identity, { ...scope, challenge_id: c.body.challenge_id, nonce: c.body.nonce }),
    };
    const [onB, onA] = await Promise.all([
      call(b.url, 'POST', '/api/v1/auth/sign-in', body),
      call(a.url, 'POST', '/api/v1/auth/sign-in', body),
    ]);
    expect([onA.status, onB.status].sort()).toEqual([200, 401]);
  });

  it('refuses to start with more stream replicas than the NATS servers can hold', async () => {
    const port = await freePort();
    const r = await runRelayCli(
      ['serve'],
      {
        ...a.env,
        SVC_RELAY_LISTEN: `127.0.0.1:${port}`,
        SVC_RELAY_STREAM_REPLICAS: '3',
      },
      { timeoutMs: 20_000 }, // a relay that starts anyway is stopped (and fails below)
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /the NATS cluster cannot hold 3 replicas of each stream \(SVC_RELAY_STREAM_REPLICAS\).*\(config_invalid\)\n$/,
    );
    // the running instances are untouched
    expect((await fetch(`${a.url}/readyz`)).status).toBe(200);
  });
});
