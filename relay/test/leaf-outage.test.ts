/**
 * Two machines' edges (real nats-servers) as leaf nodes of the relay's hub: messages
 * between their agents cross the leaf links; when the hub dies, each edge keeps
 * delivering between its own local clients; when it is back, the edge drains what
 * waited for it from its named source, in order and exactly once.
 */
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { freePort } from '@svc/test-harness';
import { call, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bus } from '../src/bus/index.js';
import { type EdgeServer, startEdgeFor } from './helpers/edge-nats.js';

let relay: BusRelay;
let bob: TestAgent;
let carol: TestAgent;
const edges: EdgeServer[] = [];
const clients: NatsConnection[] = [];
let edgeA: NatsConnection;
let edgeB: NatsConnection;

async function edgeFor(agent: TestAgent, name: string): Promise<NatsConnection> {
  const edge = await startEdgeFor(relay, name, [agent]);
  edges.push(edge.server);
  clients.push(edge.client);
  return edge.client;
}

/** Sends through the relay, retrying while the relay's bus comes back. */
async function send(from: TestAgent, to: TestAgent, text: string): Promise<string> {
  const env = sealFor(from, to, text);
  for (let attempt = 0; attempt < 100; attempt++) {
    const res = await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [env] }, from.auth);
    if (res.status === 202) return env.header.message_id;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the relay never took the message');
}

/** Pulls until `n` messages came (retrying while the leaf link is down), then checks nothing more is there. */
async function drain(nc: NatsConnection, durable: string, n: number): Promise<string[]> {
  const js = jetstream(nc, { domain: 'hub', timeout: 1000 });
  const got: string[] = [];
  for (let attempt = 0; attempt < 100 && got.length < n; attempt++) {
    try {
      const consumer = await js.consumers.get('SVC_MSGS', durable);
      const batch = await consumer.fetch({ max_messages: n - got.length, expires: 1000 });
      for await (const m of batch) {
        got.push((m.headers?.get('Nats-Msg-Id') ?? '').split(':')[0] as string);
        await m.ackAck();
      }
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const consumer = await js.consumers.get('SVC_MSGS', durable);
  const extra = await consumer.fetch({ max_messages: 5, expires: 1000 });
  for await (const m of extra) got.push(`unexpected:${m.seq}`);
  return got;
}

beforeAll(async () => {
  relay = await inProcessBusRelay(
    { SVC_RELAY_LEAF_LISTEN: `127.0.0.1:${await freePort()}` },
    // a send while the hub is down is refused after 1 s instead of 5 s (the test retries it)
    { busPublishTimeoutMs: 1000 },
  );
  bob = await relay.enroll('bob');
  carol = await relay.enroll('carol');
  edgeA = await edgeFor(bob, 'edge-a');
  edgeB = await edgeFor(carol, 'edge-b');
}, 30_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  for (const e of edges) await e.stop();
  await relay?.close();
});

describe('two edges on leaf links', () => {
  it("exchange messages: each edge pulls its agent's messages across its own link, and sees no other edge's", async () => {
    // edge B listens for every reply it could draw across its link: edge A's pulls must not reach it
    const snoop = await edges[1]?.connect();
    if (!snoop) throw new Error('edge B is running');
    clients.push(snoop);
    const seen: string[] = [];
    for (const subject of ['_INBOX.>', '_INBOX_edge-a.>', '$JS.ACK.>', 'msg.>'])
      snoop.subscribe(subject, {
        callback: (_err, m) => {
          seen.push(m.subject);
        },
      });
    await snoop.flush();
    const toCarol = await send(bob, carol, 'hello from machine A');
    const toBob = await send(carol, bob, 'hello from machine B');
    expect(await drain(edgeB, 'src_carol', 1)).toEqual([toCarol]);
    expect(await drain(edgeA, 'src_bob', 1)).toEqual([toBob]);
    await snoop.flush();
    // only edge B's own traffic (its replies and its acks, both local to its server)
    expect(seen.filter((s) => !s.startsWith('_INBOX_edge-b.') && !s.startsWith('$JS.ACK.SVC_MSGS.src_carol.'))).toEqual(
      [],
    );
  }, 60_000);

  it('the hub dies: local delivery on the edge goes on; back up, the backlog drains in order, exactly once', async () => {
    const bus = relay.relay.context.bus as Bus;
    const hubPid = bus.managedPid as number;
    process.kill(hubPid, 'SIGKILL');
    for (let i = 0; i < 100 && bus.managedPid === hubPid; i++) await new Promise((r) => setTimeout(r, 10));

    // agents of machine A talk to each other through their own server, hub or not
    const other = await edges[0]?.connect();
    if (!other) throw new Error('edge A is running');
    clients.push(other);
    const sub = other.subscribe('local.bob', { max: 3 });
    await other.flush();
    for (const text of ['one', 'two', 'three']) edgeA.publish('local.bob', text);
    const local: string[] = [];
    for await (const m of sub) local.push(m.string());
    expect(local).toEqual(['one', 'two', 'three']);

    // what carol sends meanwhile waits on the hub (her sends are retried until it is back)
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await send(carol, bob, `backlog ${i}`));
    expect(await drain(edgeA, 'src_bob', 5)).toEqual(ids);
  }, 90_000);
});
