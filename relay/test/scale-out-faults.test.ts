/**
 * The kill test: two relay processes on a three-node NATS cluster (JetStream replicas 3)
 * and one ledger, under a bounded load of sends on loopback. One relay instance and the
 * NATS node the other one uses are killed mid-load. Every send that got a 2xx is delivered
 * exactly once (pending and the event stream), and a client that retries with the same
 * message id gets the original outcome: the message is there once ("duplicate").
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { until } from '@svc/test-harness';
import { call, enrollAgent, openMessageStream, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type NatsCluster, startNatsCluster } from '@svc/test-harness/nats-cluster';
import { type RelayProcess, runRelayCli, spawnRelayFleet } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connectAsRelay } from '../src/bus/operator-access.js';

const TOTAL = 300;
const WORKERS = 6;
/** When this many sends have their 2xx, one relay and one NATS node die. */
const KILL_AT = TOTAL / 3;

let nats: NatsCluster;
let a: RelayProcess;
let b: RelayProcess;
let senders: TestAgent[];
let bob: TestAgent;

type Envelope = ReturnType<typeof sealFor>;
type Result = { message_id: string; recipient: string; status: string };

async function agent(id: string, on: RelayProcess): Promise<TestAgent> {
  const g = await runRelayCli(['grant', '--agent-id', id, '--tenant', 'acme', '--json'], on.env);
  if (g.code !== 0) throw new Error(g.stderr);
  return enrollAgent(on.url, JSON.parse(g.stdout).enrollment_code);
}

beforeAll(async () => {
  nats = await startNatsCluster({ size: 3 });
  [a, b] = (await spawnRelayFleet({
    natsEnv: nats.relayEnv(3),
    env: { SVC_RELAY_TENANTS: 'acme', SVC_RELAY_LOG_LEVEL: 'info' },
  })) as [RelayProcess, RelayProcess];
  senders = [await agent('s1', a), await agent('s2', b), await agent('s3', a)];
  bob = await agent('bob', b);
}, 120_000);

afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await nats?.stop();
});

/** Names of the connections a node holds, from its monitoring endpoint. */
async function connectionNames(monitorUrl: string): Promise<string[]> {
  try {
    const r = await fetch(`${monitorUrl}/connz?limit=1024`);
    const body = (await r.json()) as { connections?: Array<{ name?: string }> };
    return (body.connections ?? []).map((c) => c.name ?? '');
  } catch {
    return [];
  }
}

it('kill one relay and one NATS node under load: every 2xx delivered exactly once; retries get the original outcome', async () => {
  // the tenant's streams hold three replicas
  const admin = await connectAsRelay(b.dataDir, nats.url, 'acme');
  try {
    const jsm = await jetstreamManager(admin);
    expect((await jsm.streams.info('SVC_MSGS')).config.num_replicas).toBe(3);
    expect((await jsm.streams.info('SVC_ACKS')).config.num_replicas).toBe(3);
  } finally {
    await admin.close();
  }

  const stream = openMessageStream([b.url], bob.auth, undefined, { reconnect: true });
  await stream.opened;

  const envelopes: Array<{ from: TestAgent; envelope: Envelope }> = [];
  for (let i = 0; i < TOTAL; i++) {
    const from = senders[i % senders.length] as TestAgent;
    envelopes.push({ from, envelope: sealFor(from, bob, `load ${i}`) });
  }
  const relays = [a, b];
  const alive = () => relays.filter((r) => r.child.exitCode === null && r.child.signalCode === null);
  /** The first 2xx answer for each message id. */
  const answered = new Map<string, Result>();
  let refused: string | undefined;
  let retries = 0;
  let turn = 0;

  const sendUntilAnswered = async (from: TestAgent, envelope: Envelope): Promise<Result> => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (Date.now() > deadline) throw new Error(`no 2xx for ${envelope.header.message_id} within 60 s`);
      const live = alive();
      const relay = live[turn++ % live.length] as RelayProcess;
      try {
        const res = await call<{ results: Result[] }>(
          relay.url,
          'POST',
          '/api/v1/messages',
          { envelopes: [envelope] },
          from.auth,
        );
        if (res.status === 202) return res.body.results[0] as Result;
        // 503 (bus or ledger unavailable while a node or an instance dies) and 429 are retried
        if (res.status !== 503 && res.status !== 429 && res.status < 500) {
          refused = `${res.status} ${JSON.stringify(res.body)}`;
          throw new Error(refused);
        }
      } catch (err) {
        if (refused) throw err;
        // the instance died mid-request: the same envelope goes to another one
      }
      retries++;
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  let next = 0;
  let faultsDone: Promise<unknown> = Promise.resolve();
  const worker = async () => {
    while (next < envelopes.length) {
      const index = next++;
      // the last third goes out once both faults happened: the load runs through them
      if (index >= 2 * KILL_AT) await faultsDone;
      const { from, envelope } = envelopes[index] as (typeof envelopes)[number];
      answered.set(envelope.header.message_id, await sendUntilAnswered(from, envelope));
    }
  };

  const faults = (async () => {
    await until(() => answered.size >= KILL_AT, 60_000, `${KILL_AT} answered sends`, 5);
    await a.stop('SIGKILL');
    // the node B's tenant connection uses (A's connections are gone with A)
    const victim = await until(
      async () => {
        for (const node of nats.nodes) {
          if ((await connectionNames(node.monitorUrl)).includes('svc-relay:acme')) return node;
        }
        return undefined;
      },
      15_000,
      "the node of B's connection",
    );
    await victim.stop('SIGKILL');
    return victim.name;
  })();

  faultsDone = faults.catch(() => undefined);
  await Promise.all([...Array.from({ length: WORKERS }, worker), faults]);
  expect(refused).toBeUndefined();
  expect(answered.size).toBe(TOTAL);
  expect(await faults).toMatch(/^n\d$/);
  expect(a.child.signalCode).toBe('SIGKILL');

  // every accepted id, pulled from the survivor: each exactly once
  const pulled: string[] = [];
  const cursors = new Map<string, number>();
  let after = 0;
  for (;;) {
    const page = await until(
      async () => {
        const r = await call<{ envelopes: Array<{ cursor: number; message_id: string }>; more: boolean }>(
          b.url,
          'GET',
          `/api/v1/messages/pending?limit=100&after=${after}`,
          undefined,
          bob.auth,
        );
        return r.status === 200 ? r.body : undefined;
      },
      30_000,
      'a page of pending',
    );
    pulled.push(...page.envelopes.map((e) => e.message_id));
    for (const e of page.envelopes) cursors.set(e.message_id, e.cursor);
    after = page.envelopes.at(-1)?.cursor ?? after;
    if (!page.more) break;
  }
  const ids = [...answered.keys()];
  expect(new Set(pulled).size).toBe(pulled.length);
  expect(new Set(pulled)).toEqual(new Set(ids));

  // the event stream delivers each of them, once
  await until(() => new Set(stream.messageIds()).size >= TOTAL, 30_000, 'every envelope on the stream').catch(
    (err: Error) => {
      const got = new Set(stream.messageIds());
      const missing = ids.filter((id) => !got.has(id)).map((id) => cursors.get(id));
      const notable = stream.events.filter((e) => e.kind === 'error' || e.kind === 'reconnect');
      throw new Error(
        `${err.message}: missing cursors ${JSON.stringify(missing)}; stream ${JSON.stringify(notable)}; last ${JSON.stringify(
          stream.events
            .filter((e) => e.kind === 'envelope')
            .slice(-3)
            .map((e) => e.kind === 'envelope' && e.cursor),
        )}`,
      );
    },
  );
  stream.close();
  const streamed = stream.messageIds();
  expect(new Set(streamed)).toEqual(new Set(ids));
  expect(streamed.length).toBe(TOTAL);

  // a retry of any of them, now, is the same message: recorded once, not delivered again
  for (const { from, envelope } of envelopes) {
    const again = await sendUntilAnswered(from, envelope);
    expect(again).toEqual({ message_id: envelope.header.message_id, recipient: bob.number, status: 'duplicate' });
  }
  const { body } = await call<{ envelopes: unknown[] }>(
    b.url,
    'GET',
    `/api/v1/messages/pending?limit=100&after=${after}`,
    undefined,
    bob.auth,
  );
  expect(body.envelopes).toEqual([]);
  console.info(`kill test: ${TOTAL} sends, ${retries} retried attempts, NATS node killed: ${await faults}`);
}, 180_000);
