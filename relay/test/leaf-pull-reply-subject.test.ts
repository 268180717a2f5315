/**
 * A pull's reply subject cannot make the hub publish anywhere but back to the edge that
 * pulled (real relay, real hub and edge nats-servers, leaf creds from the relay).
 *
 * The reply subject of `$JS.hub.API.CONSUMER.MSG.NEXT.SVC_MSGS.<durable>` is where the
 * consumer delivers the messages, and nats-server checks it against no permission: a leaf
 * user allowed to publish only MSG.NEXT could still name `msg.<agent>` (SVC_MSGS captures
 * it and stores each delivered message again: a message older than the dedupe window is
 * stored twice, the copy delivered again, and the tenant's storage fills), another edge's
 * `_INBOX_<edge>.…` (that edge receives this edge's messages), or any other subject of the
 * tenant account. It did, while the edge's leaf user was a user of the tenant account.
 *
 * Why it is refused now: the edge's leaf user lives in the edge's own uplink account, which
 * reaches its sources only through service imports from the tenant account. Across a service
 * import nats-server replaces the reply with one of its own (`_R_.…`) that leads back into
 * the importing account, so whatever reply the edge names, the consumer delivers into the
 * edge's account, never into the tenant's.
 */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type NatsConnection, nanos, type Subscription } from '@nats-io/transport-node';
import { freePort } from '@svc/test-harness';
import { call, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StartedEdge, startEdgeFor } from './helpers/edge-nats.js';

let relay: BusRelay;
let alice: TestAgent;
let bob: TestAgent; // streamed by edge 1 (the hostile one)
let carol: TestAgent; // streamed by edge 2
let edge1: StartedEdge;
let edge2: StartedEdge;
let hub: NatsConnection; // the relay's own connection to the tenant account

const NEXT_BOB = '$JS.hub.API.CONSUMER.MSG.NEXT.SVC_MSGS.src_bob';
/** message ids sent to bob */
const toBob: string[] = [];

async function send(from: TestAgent, to: TestAgent, text: string): Promise<string> {
  const env = sealFor(from, to, text);
  const res = await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [env] }, from.auth);
  expect(res.status).toBe(202);
  if (to === bob) toBob.push(env.header.message_id);
  return env.header.message_id;
}

async function streamCounts(): Promise<{ msgs: number; acks: number; subjects: Record<string, number> }> {
  const jsm = await jetstreamManager(hub);
  const msgs = await jsm.streams.info('SVC_MSGS', { subjects_filter: '>' });
  const acks = await jsm.streams.info('SVC_ACKS');
  return { msgs: msgs.state.messages, acks: acks.state.messages, subjects: msgs.state.subjects ?? {} };
}

/** Waits until the edge's link serves its source (a consumer info across it). */
async function linked(edge: StartedEdge, durable: string): Promise<void> {
  const js = jetstream(edge.client, { domain: 'hub', timeout: 1000 });
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      await js.consumers.get('SVC_MSGS', durable);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`the link of ${edge.identity.agentId} never served ${durable}`);
}

/** Collects what arrives on `subject` (on the connection given) until stopped. */
function watch(nc: NatsConnection, subject: string): { got: string[]; sub: Subscription } {
  const got: string[] = [];
  const sub = nc.subscribe(subject, {
    callback: (_err, m) => void got.push(`${m.subject} ${m.headers?.get('Nats-Msg-Id') ?? ''}`),
  });
  return { got, sub };
}

beforeAll(async () => {
  relay = await inProcessBusRelay({ SVC_RELAY_LEAF_LISTEN: `127.0.0.1:${await freePort()}` });
  alice = await relay.enroll('alice');
  bob = await relay.enroll('bob');
  carol = await relay.enroll('carol');
  edge1 = await startEdgeFor(relay, 'edge-1', [bob]);
  edge2 = await startEdgeFor(relay, 'edge-2', [carol]);
  hub = await relay.relay.context.bus.tenantConnection(alice.tenantId);
  await linked(edge1, 'src_bob');
  await linked(edge2, 'src_carol');
  // A copy is stored only once the original's Nats-Msg-Id left the dedupe window (2 minutes):
  // as for most pending mail. Here the window is shortened so that the test need not wait.
  const jsm = await jetstreamManager(hub);
  const { config } = await jsm.streams.info('SVC_MSGS');
  await jsm.streams.update('SVC_MSGS', { ...config, duplicate_window: nanos(100) });
}, 60_000);

afterAll(async () => {
  for (const e of [edge1, edge2]) {
    await e?.client.close().catch(() => undefined);
    await e?.server.stop();
  }
  await relay?.close();
});

describe("an edge's pull with a reply subject of its choosing", () => {
  // every subject of the tenant account an edge might want the hub to publish on
  const hostile = [
    'msg.alice', // another agent's inbox subject: captured by SVC_MSGS
    'msg.bob', // the pulled agent's own: stored again, delivered again
    'ack.alice', // SVC_ACKS's subjects
    '_INBOX_edge-2.trap', // another edge's reply inbox
    '_INBOX.trap', // the tenant's default inbox prefix (the relay's own clients)
    'svc.relay.inbox', // the relay instances' wake-up subject
    '$JS.API.STREAM.PURGE.SVC_MSGS', // the JetStream API of the tenant account
    '$JS.API.STREAM.DELETE.SVC_MSGS',
  ];

  it('never makes the hub publish it: nothing is stored, nothing arrives anywhere', async () => {
    // one message per hostile pull (each pull takes the next one off bob's consumer)
    for (const [i] of hostile.entries()) await send(alice, bob, `for bob ${i}`);
    await new Promise((r) => setTimeout(r, 300)); // past the shortened dedupe window
    const before = await streamCounts();
    expect(before.subjects).toEqual({ 'msg.bob': hostile.length });

    // watched where a delivery would land: in the tenant account, and on edge 2
    const onHub = hostile.map((s) => watch(hub, s));
    const onEdge2 = watch(edge2.client, '_INBOX_edge-2.trap');
    await hub.flush();
    await edge2.client.flush();

    for (const reply of hostile) {
      edge1.client.publish(NEXT_BOB, JSON.stringify({ batch: 1, expires: nanos(500) }), { reply });
    }
    await edge1.client.flush();
    await new Promise((r) => setTimeout(r, 1500)); // the pulls ran out

    await hub.flush();
    await edge2.client.flush();
    expect(Object.fromEntries(hostile.map((s, i) => [s, onHub[i]?.got ?? []]))).toEqual(
      Object.fromEntries(hostile.map((s) => [s, []])),
    );
    expect(onEdge2.got).toEqual([]);
    const after = await streamCounts();
    expect(after).toEqual(before);
    for (const w of [...onHub, onEdge2]) w.sub.unsubscribe();
  }, 30_000);

  it("another edge's ack subject ($JS.ACK…, which nats-server lets through a service import) receives nothing", async () => {
    // edge 2 holds carol's message unacknowledged; its ack subject is the pulled message's reply
    await send(alice, carol, 'for carol');
    const js2 = jetstream(edge2.client, { domain: 'hub', timeout: 1000 });
    const carols = await js2.consumers.get('SVC_MSGS', 'src_carol');
    const held = await carols.next({ expires: 2000 });
    // the ack subject is the delivered message's reply (JsMsg's type does not show it)
    const ackSubject = (held as { reply?: string } | null)?.reply;
    if (!held || !ackSubject?.startsWith('$JS.ACK.SVC_MSGS.src_carol.')) throw new Error('carol has a message');
    await send(alice, bob, 'for bob, to be sent to an ack subject');
    const before = await streamCounts();
    const onHub = watch(hub, ackSubject);
    await hub.flush();

    edge1.client.publish(NEXT_BOB, JSON.stringify({ batch: 1, expires: nanos(500) }), { reply: ackSubject });
    await edge1.client.flush();
    await new Promise((r) => setTimeout(r, 1000));

    await hub.flush();
    expect(onHub.got).toEqual([]);
    onHub.sub.unsubscribe();
    // carol's message is still pending, nothing was stored
    const jsm = await jetstreamManager(hub);
    expect((await jsm.consumers.info('SVC_MSGS', 'src_carol')).num_ack_pending).toBe(1);
    expect(await streamCounts()).toEqual(before);
    expect(await held.ackAck()).toBe(true);
  }, 30_000);

  it("still serves the edge's own pulls: its source's messages, each once", async () => {
    const id = await send(alice, bob, 'a legitimate pull');
    const before = await streamCounts();
    const js = jetstream(edge1.client, { domain: 'hub', timeout: 1000 });
    const consumer = await js.consumers.get('SVC_MSGS', 'src_bob');
    const got: string[] = [];
    for await (const m of await consumer.fetch({ max_messages: 50, expires: 2000 })) {
      got.push(m.headers?.get('Nats-Msg-Id')?.split(':')[0] ?? '');
      expect(await m.ackAck()).toBe(true);
    }
    // what a hostile pull had delivered waits for its ack wait; the rest comes now, once
    expect(got).toContain(id);
    expect(new Set(got).size).toBe(got.length);
    expect(got.filter((g) => !toBob.includes(g))).toEqual([]);
    expect(await streamCounts()).toEqual(before);
  }, 30_000);
});
