/**
 * Named sources against a real nats-server: one durable consumer each; the tenant's
 * 401st is refused with 409 source_capacity_exhausted before anything is created on the
 * bus (the bus's consumer count is the same before and after); an edge's 65th is refused;
 * the account's consumer ceiling is enforced from the bus's own count; a released or
 * revoked source frees its slot.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { call, sourceClaimBody, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** enrolled agents by id: a claim carries the agent's own signed consent */
const byId = new Map<string, TestAgent>();
const enrolled = (a: TestAgent): TestAgent => {
  byId.set(a.agentId, a);
  return a;
};
const claim = (relay: BusRelay, edge: TestAgent, agent: string) =>
  call<Record<string, unknown>>(
    relay.url,
    'POST',
    '/api/v1/sources',
    sourceClaimBody(byId.get(agent) as TestAgent, edge.number),
    edge.auth,
  );
const release = (relay: BusRelay, edge: TestAgent, agent: string) =>
  call(relay.url, 'DELETE', `/api/v1/sources/${agent}`, undefined, edge.auth);

async function busConsumers(relay: BusRelay, tenant = 'default'): Promise<number> {
  const jsm = await jetstreamManager(await relay.relay.context.bus.tenantConnection(tenant));
  return (await jsm.getAccountInfo()).consumers;
}

/** Runs `fn` over `items`, `width` at a time (claims of one tenant race each other). */
async function inParallel<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map(fn))));
  return out;
}

describe('named sources at the real limits (400 per tenant, 64 per edge)', () => {
  let relay: BusRelay;
  const edges: TestAgent[] = [];
  const agents: TestAgent[] = [];

  beforeAll(async () => {
    relay = await inProcessBusRelay({ SVC_RELAY_AUTH_RATE_PER_ADDRESS: '0', SVC_RELAY_AUTH_RATE_PER_AGENT: '0' });
    for (let e = 0; e < 7; e++) edges.push(await relay.enroll(`edge-${e}`, undefined, ['nats-relay']));
    const ids = Array.from({ length: 402 }, (_, i) => `agent-${i}`);
    agents.push(...(await inParallel(ids, 8, async (id) => enrolled(await relay.enroll(id)))));
  }, 120_000);

  afterAll(async () => relay?.close());

  it("refuses an edge's 65th source", async () => {
    const first = agents.slice(0, 64);
    const answers = await inParallel(first, 8, (a) => claim(relay, edges[0] as TestAgent, a.agentId));
    expect(answers.map((r) => r.status)).toEqual(first.map(() => 200));
    expect(answers[0]?.body).toMatchObject({ durable: 'src_agent-0', filter_subject: 'msg.agent-0' });
    const before = await busConsumers(relay);
    const res = await claim(relay, edges[0] as TestAgent, 'agent-64');
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'edge_source_capacity_exhausted' });
    expect(await busConsumers(relay)).toBe(before);
  }, 60_000);

  it('refuses the 401st of the tenant before anything is created on the bus', async () => {
    // agents 64..399 spread over edges 1..6 (at most 64 each), in parallel batches
    const rest = agents.slice(64, 400);
    const answers = await inParallel(rest, 8, (a) => {
      const i = Number(a.agentId.slice('agent-'.length)) - 64;
      return claim(relay, edges[1 + Math.floor(i / 64)] as TestAgent, a.agentId);
    });
    expect(answers.filter((r) => r.status !== 200)).toEqual([]);
    expect(await relay.relay.context.stores.sources.countForTenant('default')).toBe(400);
    const before = await busConsumers(relay);
    expect(before).toBe(400);

    const res = await claim(relay, edges[6] as TestAgent, 'agent-400');
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'source_capacity_exhausted' });
    expect(await busConsumers(relay)).toBe(before);
    expect(await relay.relay.context.stores.sources.countForTenant('default')).toBe(400);
  }, 120_000);

  it('a released source frees its slot: the next request is admitted', async () => {
    const edge6 = edges[6] as TestAgent;
    expect((await release(relay, edge6, 'agent-399')).status).toBe(204);
    expect(await busConsumers(relay)).toBe(399);
    // only the edge that holds a source can release it
    expect((await release(relay, edge6, 'agent-0')).status).toBe(404);
    expect((await claim(relay, edge6, 'agent-400')).status).toBe(200);
    expect(await busConsumers(relay)).toBe(400);
    // another edge cannot take an agent already streamed
    expect((await claim(relay, edges[5] as TestAgent, 'agent-400')).body).toMatchObject({ error: 'source_claimed' });
  }, 30_000);

  it("a revoked agent's source is released with it, and its slot is free", async () => {
    const target = agents[1] as TestAgent;
    const res = await call(relay.url, 'POST', '/api/v1/agents/me/revoke', undefined, target.auth);
    expect(res.body).toMatchObject({ cleanup_pending: false });
    expect(await busConsumers(relay)).toBe(399);
    const jsm = await jetstreamManager(await relay.relay.context.bus.tenantConnection('default'));
    await expect(jsm.consumers.info('SVC_MSGS', 'src_agent-1')).rejects.toThrow(/consumer not found/);
    expect((await claim(relay, edges[6] as TestAgent, 'agent-401')).status).toBe(200);
  }, 30_000);
});

describe('the account consumer ceiling', () => {
  let relay: BusRelay;
  let edge: TestAgent;

  beforeAll(async () => {
    relay = await inProcessBusRelay({ SVC_RELAY_TENANT_MAX_CONSUMERS: '3', SVC_RELAY_SOURCES_PER_TENANT: '10' });
    edge = await relay.enroll('edge', undefined, ['nats-relay']);
    for (const id of ['a', 'b', 'c']) enrolled(await relay.enroll(id));
  }, 30_000);

  afterAll(async () => relay?.close());

  it('is enforced by the relay from the bus count, counting consumers that are not sources', async () => {
    const jsm = await jetstreamManager(await relay.relay.context.bus.tenantConnection('default'));
    // a consumer of the account that is not a named source takes a slot too
    await jsm.consumers.add('SVC_ACKS', { durable_name: 'other', ack_policy: 'explicit' as never });
    expect((await claim(relay, edge, 'a')).status).toBe(200);
    expect((await claim(relay, edge, 'b')).status).toBe(200);
    expect(await busConsumers(relay)).toBe(3);
    const res = await claim(relay, edge, 'c');
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: 'consumer_ceiling_reached' });
    expect(await busConsumers(relay)).toBe(3);
  });

  it("each stream's max_consumers is the server-side backstop", async () => {
    const jsm = await jetstreamManager(await relay.relay.context.bus.tenantConnection('default'));
    expect((await jsm.streams.info('SVC_MSGS')).config.max_consumers).toBe(3);
  });
});
