/**
 * The kill test: two relay processes on a three-node NATS cluster (JetStream replicas 3)
 * sharing one PostgreSQL ledger (the scale-out topology), under a bounded load of sends on
 * loopback. One relay instance and the NATS node the other one uses are killed mid-load.
 * Every send that got a 2xx is delivered exactly once (pending and the event stream), and
 * a client that retries with the same message id gets the original outcome: the message
 * is there once ("duplicate").
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { until } from '@svc/test-harness';
import { call, enrollAgent, openMessageStream, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type NatsCluster, startNatsCluster } from '@svc/test-harness/nats-cluster';
import { postgresUnavailable, type TestPostgres, testPostgres } from '@svc/test-harness/postgres';
import { type RelayProcess, runRelayCli, spawnRelayFleet } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAsRelay } from '../src/bus/operator-access.js';

const TOTAL = 150;
const WORKERS = 6;
/** When this many sends have their 2xx, one relay and one NATS node die. */
const KILL_AT = TOTAL / 3;

type Envelope = ReturnType<typeof sealFor>;
type Result = { message_id: string; recipient: string; status: string };

const missing = postgresUnavailable();

describe.skipIf(missing !== undefined)(missing ? `skipped: ${missing}` : 'two relays on PostgreSQL', () => {
  let pg: TestPostgres;
  let nats: NatsCluster;
  let a: RelayProcess;
  let b: RelayProcess;
  let senders: TestAgent[];
  let bob: TestAgent;

  async function agent(id: string, on: RelayProcess): Promise<TestAgent> {
    const g = await runRelayCli(['grant', '--agent-id', id, '--tenant', 'acme', '--json'], on.env);
    if (g.code !== 0) throw new Error(g.stderr);
    return enrollAgent(on.url, JSON.parse(g.stdout).enrollment_code);
  }

  beforeAll(async () => {
    let ledger: { dsnFile: string };
    [nats, ledger] = await Promise.all([
      startNatsCluster({ size: 3 }),
      testPostgres().then((server) => {
        pg = server;
        return server.createDatabase();
      }),
    ]);
    [a, b] = (await spawnRelayFleet({
      natsEnv: nats.relayEnv(3),
      ledgerEnv: { SVC_RELAY_LEDGER_DSN_FILE: ledger.dsnFile },
      env: { SVC_RELAY_TENANTS: 'acme', SVC_RELAY_LOG_LEVEL: 'info' },
    })) as [RelayProcess, RelayProcess];
    senders = await Promise.all([agent('s1', a), agent('s2', b), agent('s3', a)]);
    bob = await agent('bob', b);
  }, 120_000);

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await nats?.stop();
    await pg?.stop();
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

  /** The node whose connections include B's connection for the tenant. */
  const nodeOfB = () =>
    until(
      async () => {
        for (const node of nats.nodes) {
          if ((await connectionNames(node.monitorUrl)).includes('svc-relay:acme')) return node;
        }
        return undefined;
      },
      15_000,
      "the node of B's connection",
    );

  /**
   * Hands the leadership of the tenant's streams over to another node (a graceful step
   * down). The node killed below is one the streams do not lead: after a stream leader
   * dies, nats-server takes seconds (its raft election timeouts, not a setting) to elect
   * another, and the test would wait them out. Losing the leader's copy is JetStream's own
   * guarantee (a publish is acknowledged once a quorum holds it); what the relay must
   * survive, its bus connection's node and another instance dying mid-load, is killed.
   */
  async function leadElsewhere(nodeName: string): Promise<void> {
    const nc = await connectAsRelay(b.dataDir, nats.url, 'acme');
    try {
      const jsm = await jetstreamManager(nc);
      for (const name of ['SVC_MSGS', 'SVC_ACKS']) {
        await until(
          async () => {
            const leader = await jsm.streams.info(name).then(
              (i) => i.cluster?.leader,
              () => undefined,
            );
            if (leader === nodeName) await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${name}`).catch(() => undefined);
            return leader !== undefined && leader !== nodeName;
          },
          10_000,
          `${name} led by another node than ${nodeName}`,
          50,
        );
      }
    } finally {
      await nc.close();
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

    /** how many sends had their 2xx when each fault struck */
    const answeredAt: Record<'relay' | 'node', number> = { relay: 0, node: 0 };
    const faults = (async () => {
      await until(() => answered.size >= KILL_AT, 60_000, `${KILL_AT} answered sends`, 5);
      answeredAt.relay = answered.size;
      await a.stop('SIGKILL');
      // the node of B's connection (A's connections are gone with A)
      const victim = await nodeOfB();
      await leadElsewhere(victim.name);
      answeredAt.node = answered.size;
      await victim.stop('SIGKILL');
      return victim.name;
    })();

    faultsDone = faults.catch(() => undefined);
    await Promise.all([...Array.from({ length: WORKERS }, worker), faults]);
    expect(refused).toBeUndefined();
    expect(answered.size).toBe(TOTAL);
    expect(await faults).toMatch(/^n\d$/);
    expect(a.child.signalCode).toBe('SIGKILL');
    // both faults struck mid-load: some sends answered before each, the last third after both
    expect(answeredAt.relay).toBeGreaterThanOrEqual(KILL_AT);
    expect(answeredAt.node).toBeGreaterThanOrEqual(answeredAt.relay);
    expect(answeredAt.node).toBeLessThanOrEqual(2 * KILL_AT);

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

    // a retry of any of them, now, is the same message: recorded once, not delivered again
    // (sent while the event stream catches up: it must still deliver each envelope once)
    let retry = 0;
    const again = new Map<string, Result>();
    const retried = Promise.all(
      Array.from({ length: WORKERS }, async () => {
        while (retry < envelopes.length) {
          const { from, envelope } = envelopes[retry++] as (typeof envelopes)[number];
          again.set(envelope.header.message_id, await sendUntilAnswered(from, envelope));
        }
      }),
    );
    retried.catch(() => undefined); // awaited below; handled should the stream check fail first

    // the event stream delivers each of them, once
    await until(() => new Set(stream.messageIds()).size >= TOTAL, 30_000, 'every envelope on the stream').catch(
      (err: Error) => {
        const got = new Set(stream.messageIds());
        const missingCursors = ids.filter((id) => !got.has(id)).map((id) => cursors.get(id));
        const notable = stream.events.filter((e) => e.kind === 'error' || e.kind === 'reconnect');
        throw new Error(
          `${err.message}: missing cursors ${JSON.stringify(missingCursors)}; stream ${JSON.stringify(notable)}; last ${JSON.stringify(
            stream.events
              .filter((e) => e.kind === 'envelope')
              .slice(-3)
              .map((e) => e.kind === 'envelope' && e.cursor),
          )}`,
        );
      },
    );
    await retried;
    stream.close();
    const streamed = stream.messageIds();
    expect(new Set(streamed)).toEqual(new Set(ids));
    expect(streamed.length).toBe(TOTAL);

    for (const { envelope } of envelopes) {
      expect(again.get(envelope.header.message_id)).toEqual({
        message_id: envelope.header.message_id,
        recipient: bob.number,
        status: 'duplicate',
      });
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
});
