/**
 * A named source needs the streamed agent's own consent (against a real nats-server): any
 * uplink identity of the tenant may call `POST /api/v1/sources`, so without the agent's
 * signature one edge machine could take another machine's agent, pull its mail across its
 * leaf link and keep the agent's own machine from claiming it. Nothing is created on the
 * bus for a refused claim.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { call, sourceClaimBody, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: BusRelay;
let alice: TestAgent; // lives on machine A
let bob: TestAgent; // lives on machine B
let edgeA: TestAgent;
let edgeB: TestAgent;

const claim = (edge: TestAgent, body: unknown) => call(relay.url, 'POST', '/api/v1/sources', body, edge.auth);

async function sourceConsumers(): Promise<string[]> {
  const jsm = await jetstreamManager(await relay.relay.context.bus.tenantConnection('default'));
  const names: string[] = [];
  for await (const c of jsm.consumers.list('SVC_MSGS')) names.push(c.name);
  return names.sort();
}

beforeAll(async () => {
  relay = await inProcessBusRelay();
  alice = await relay.enroll('alice');
  bob = await relay.enroll('bob');
  edgeA = await relay.enroll('uplink-a', undefined, ['nats-relay']);
  edgeB = await relay.enroll('uplink-b', undefined, ['nats-relay']);
}, 30_000);

afterAll(async () => relay?.close());

describe("another edge cannot claim an agent that is not its machine's", () => {
  it('a claim naming the agent alone is refused', async () => {
    const res = await claim(edgeB, { agent: alice.number });
    expect(res.status).toBe(400);
    expect(await sourceConsumers()).toEqual([]);
  });

  it("a consent signed by another key (the claiming machine's own agent) is refused", async () => {
    const res = await claim(edgeB, sourceClaimBody(alice, edgeB.number, { signer: bob }));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'invalid_source_claim_proof' });
    expect(await sourceConsumers()).toEqual([]);
  });

  it("the agent's consent for its own edge does not serve another edge", async () => {
    const res = await claim(edgeB, sourceClaimBody(alice, edgeA.number));
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'invalid_source_claim_proof' });
  });

  it('a consent older than 5 minutes is refused', async () => {
    const res = await claim(
      edgeA,
      sourceClaimBody(alice, edgeA.number, { issuedAt: new Date(Date.now() - 6 * 60_000) }),
    );
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'invalid_source_claim_proof' });
    expect(await sourceConsumers()).toEqual([]);
  });

  it("the agent's machine claims it with its consent; the other edge still cannot", async () => {
    const ok = await claim(edgeA, sourceClaimBody(alice, edgeA.number));
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ durable: 'src_alice' });
    // the same consent again is the same claim (idempotent)
    expect((await claim(edgeA, sourceClaimBody(alice, edgeA.number))).status).toBe(200);
    const res = await claim(edgeB, sourceClaimBody(alice, edgeB.number, { signer: bob }));
    expect(res.status).toBe(403);
    expect(await sourceConsumers()).toEqual(['src_alice']);
    // and B's own agent, with its consent, is B's to claim
    expect((await claim(edgeB, sourceClaimBody(bob, edgeB.number))).status).toBe(200);
    expect(await sourceConsumers()).toEqual(['src_alice', 'src_bob']);
  });
});
