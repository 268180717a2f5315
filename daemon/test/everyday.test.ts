/**
 * Everyday behaviour against a REAL relay process: presence (heartbeat), the outbox
 * (send while the relay is down: queued, survives a daemon restart, sent once when the
 * relay answers), mute (archived, marked, never announced), deregistration (revokes on
 * the relay, so sends to the agent fail), and the read/check/send refusals.
 */
import { until } from '@svc/test-harness';
import { startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonClient, DaemonEvent, DaemonEventStream } from '../src/client/index.js';

let stage: DaemonsOnRelay<'alice' | 'bob'>;
// the tests restart the relay and alice's daemon: these follow the current ones
let relay: RelayProcess;
let a: TestDaemon;
let b: TestDaemon;
let events: Record<'a' | 'b', DaemonEvent[]>;
const streams: DaemonEventStream[] = [];

/** short, injected delays: the outbox retries every 50-200 ms, the heartbeat every 200 ms */
const timing = { outboxRetryMinMs: 50, outboxRetryMaxMs: 200, heartbeatMs: 200 };

async function collect(client: DaemonClient, into: DaemonEvent[]): Promise<void> {
  const stream = await client.events();
  streams.push(stream);
  void (async () => {
    for await (const e of stream) into.push(e);
  })();
}

const grant = (agentId: string) => stage.grant(agentId);

const connected = (d: TestDaemon, name: string) =>
  until(
    async () => (await d.client.status()).agents.find((x) => x.name === name)?.session === 'connected',
    20_000,
    `${name} connected`,
  );

beforeAll(async () => {
  stage = await startDaemonsOnRelay({ agents: ['alice', 'bob'], daemon: timing });
  ({ relay } = stage);
  ({ alice: a, bob: b } = stage.daemons);
  events = { a: stage.events.alice, b: stage.events.bob };
}, 90_000);

afterAll(async () => {
  for (const s of streams) s.close();
  // the restarted daemon and relay, then the stage (closing what it started is idempotent)
  await a?.daemon.close();
  await relay?.stop();
  await stage?.close();
});

describe('everyday behaviour', () => {
  it('a connected agent heartbeats: others see it online with a last-seen time', async () => {
    const profile = await until(
      async () => {
        const r = await b.client.peerProfile('bob', 'alice');
        return r.presence === 'online' ? r : undefined;
      },
      10_000,
      'alice online',
    );
    expect(profile.last_seen_at).toEqual(expect.any(String));
  });

  it('a deployment fetched without a name is named for the relay host, not its id', async () => {
    const c = await startDaemon(undefined, timing);
    try {
      const { bundle } = stage;
      const first = await c.client.fetchDeployment({ url: relay.url, trust_bundle: bundle });
      expect(first.name).toBe(`127.0.0.1-${relay.port}`);
      // fetched again: the same deployment, that entry renewed (not a second one, -2)
      const second = await c.client.fetchDeployment({ url: relay.url, trust_bundle: bundle });
      expect(second).toMatchObject({ name: first.name, already_trusted: true });
      expect((await c.client.listDeployments()).map((d) => d.name)).toEqual([first.name]);
    } finally {
      await c.daemon.close();
    }
  });

  it('a deployment local agents are registered on is not removed', async () => {
    const { deployment } = await a.client.getAgent('alice');
    await expect(a.client.removeDeployment(deployment)).rejects.toMatchObject({
      code: 'deployment_in_use',
      status: 409,
      message: expect.stringMatching(/used by local agent alice; deregister it first/),
    });
    expect((await a.client.getDeployment(deployment)).name).toBe(deployment);
  });

  it('refuses empty content, media without an attachment, and reading an unknown peer', async () => {
    await expect(a.client.send('alice', { to: 'bob', content: '' })).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringMatching(/empty/),
    });
    await expect(a.client.send('alice', { to: 'bob', content: '  \n' })).rejects.toMatchObject({
      code: 'validation_failed',
    });
    await expect(
      a.client.send('alice', { to: 'bob', content: 'just text', content_type: 'media' }),
    ).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringMatching(/media/) });
    await expect(a.client.read('alice', 'nobody')).rejects.toMatchObject({ code: 'unknown_conversation', status: 404 });
  });

  it('msg check returns only unacknowledged messages since the last check', async () => {
    const m1 = await a.client.send('alice', { to: 'bob', content: 'one' });
    const m2 = await a.client.send('alice', { to: 'bob', content: 'two' });
    await until(async () => (await b.client.inbox('bob', { source: 'local' })).length >= 2, 15_000, 'bob has both');
    await b.client.ack('bob', m1.message_id);
    // an inbox shown elsewhere (the terminal UI, the dashboard, an MCP subscription) hears of it
    await until(
      () => events.b.find((e) => e.type === 'read' && e.agent === 'bob' && e.message_ids.includes(m1.message_id)),
      5_000,
      'the read event of m1',
    );
    expect((await b.client.check('bob')).map((m) => m.message_id)).toEqual([m2.message_id]);
    expect(await b.client.check('bob')).toEqual([]);
    // the inbound message is marked received/read, and read shows both sides' states
    const thread = await b.client.read('bob', 'alice');
    expect(thread.map((m) => [m.message_id, m.state])).toEqual([
      [m1.message_id, 'read'],
      [m2.message_id, 'received'],
    ]);
    await b.client.ack('bob', m2.message_id);
    await until(
      async () => (await a.client.read('alice', 'bob')).every((m) => m.state === 'delivered'),
      15_000,
      'alice sees both delivered',
    );
  });

  it('a muted sender: archived and marked muted, but no event, no check, and the inbox says so', async () => {
    await b.client.relate('bob', 'mute', 'alice');
    const before = events.b.length;
    const quiet = await a.client.send('alice', { to: 'bob', content: 'you will not hear this ring' });
    const inbox = await until(
      async () => {
        const list = await b.client.inbox('bob', { source: 'local' });
        return list.some((m) => m.message_id === quiet.message_id) ? list : undefined;
      },
      15_000,
      'bob archived the muted message',
    );
    expect(inbox.find((m) => m.message_id === quiet.message_id)).toMatchObject({ muted: true, state: 'received' });
    expect(await b.client.check('bob')).toEqual([]);
    // after unmuting, messages notify again; the event stream never carried the muted one
    await b.client.unrelate('bob', 'mute', 'alice');
    const loud = await a.client.send('alice', { to: 'bob', content: 'and this one rings' });
    await until(
      () => events.b.find((e) => e.type === 'message' && e.message.message_id === loud.message_id),
      15_000,
      'the unmuted message is announced',
    );
    expect(
      events.b.slice(before).filter((e) => e.type === 'message' && e.message.message_id === quiet.message_id),
    ).toEqual([]);
    expect((await b.client.check('bob')).map((m) => m.message_id)).toEqual([loud.message_id]);
  });

  it('queues a send while the relay is down, keeps it over a daemon restart, sends it once when the relay is back', async () => {
    await relay.stop('SIGKILL');
    const queued = await a.client.send('alice', { to: 'bob', content: 'written offline' });
    expect(queued).toMatchObject({ to: 'bob', status: 'queued', state: 'queued' });
    // a peer never contacted has no pinned key: nothing can be sealed for it
    await expect(a.client.send('alice', { to: 'carol', content: 'hi' })).rejects.toMatchObject({
      code: 'relay_unreachable',
      message: expect.stringMatching(/never contacted/),
    });
    expect((await a.client.read('alice', 'bob')).find((m) => m.message_id === queued.message_id)?.state).toBe('queued');
    // the status says why the session is not connected (svc doctor prints it)
    const down = await until(
      async () =>
        (await a.client.status()).agents.find((x) => x.name === 'alice' && x.session_error?.includes('ECONNREFUSED')),
      15_000,
      'the session error of a reconnect',
    );
    expect(down?.session_error).toMatch(/^the relay does not answer \(connect ECONNREFUSED/);
    expect(down?.session).toBe('connecting');
    // keys status does not take the relay's silence for "not uploaded"
    expect(await a.client.keys('alice')).toMatchObject({ relay_version: null, relay_error: 'relay_unreachable' });
    // what needs the relay now says so, and what to check
    await expect(a.client.sync('alice')).rejects.toMatchObject({
      code: 'relay_unreachable',
      message: expect.stringMatching(/^The relay at \S+ cannot be reached \(.+\): check that it runs/),
    });

    // the daemon restarts while the relay is still down: the message is still queued
    await a.daemon.close();
    a = await startDaemon(a.home, timing);
    await collect(a.client, events.a);
    expect((await a.client.read('alice', 'bob')).find((m) => m.message_id === queued.message_id)?.state).toBe('queued');

    relay = await spawnRelay({ dataDir: relay.dataDir, env: relay.env, port: relay.port, init: false });
    await until(
      () => events.a.find((e) => e.type === 'outbox' && e.message_id === queued.message_id && e.state === 'sent'),
      30_000,
      'the outbox sends it',
    );
    const got = await until(
      async () => (await b.client.read('bob', 'alice')).filter((m) => m.message_id === queued.message_id),
      30_000,
      'bob receives the queued message',
    ).then(async () => {
      // wait for a full round: bob acks, alice gets the receipt
      await b.client.ack('bob', queued.message_id);
      return (await b.client.read('bob', 'alice')).filter((m) => m.message_id === queued.message_id);
    });
    expect(got).toHaveLength(1);
    expect(got[0]?.content).toBe('written offline');
    await until(
      async () =>
        (await a.client.read('alice', 'bob')).find((m) => m.message_id === queued.message_id)?.state === 'delivered',
      30_000,
      'alice sees it delivered',
    );
    // sent exactly once: one outbox event, and the relay recorded one envelope
    expect(events.a.filter((e) => e.type === 'outbox' && e.message_id === queued.message_id)).toHaveLength(1);
  }, 120_000);

  it('a queued message the relay then refuses (recipient revoked meanwhile) is marked failed with the reason', async () => {
    await b.client.register({ enrollment_code: await grant('dave'), name: 'dave' });
    await connected(b, 'dave');
    await a.client.send('alice', { to: 'dave', content: 'hello dave' });
    await relay.stop('SIGKILL');
    const queued = await a.client.send('alice', { to: 'dave', content: 'dave, are you there?' });
    expect(queued.state).toBe('queued');
    // the operator revokes dave while the relay is down
    const revoked = await runRelayCli(
      ['agent', 'revoke', '--agent-id', 'dave', '--tenant', 'acme', '--json'],
      relay.env,
    );
    expect(revoked.code, revoked.stderr).toBe(0);
    relay = await spawnRelay({ dataDir: relay.dataDir, env: relay.env, port: relay.port, init: false });
    const failed = await until(
      () => events.a.find((e) => e.type === 'outbox' && e.message_id === queued.message_id),
      30_000,
      'the outbox gives up on it',
    );
    expect(failed).toMatchObject({ state: 'failed', error: expect.stringMatching(/^unknown_recipient: /) });
    const row = (await a.client.read('alice', 'dave')).find((m) => m.message_id === queued.message_id);
    expect(row).toMatchObject({ state: 'failed', send_error: expect.stringMatching(/^unknown_recipient/) });
    await connected(a, 'alice');
  }, 120_000);

  it('deregister revokes the agent on the relay: sends to it then fail with unknown_recipient', async () => {
    await b.client.register({ enrollment_code: await grant('carol'), name: 'carol' });
    await connected(b, 'carol');
    await a.client.send('alice', { to: 'carol', content: 'hello carol' });
    await b.client.deregister('carol');
    expect((await b.client.listAgents()).map((x) => x.name)).not.toContain('carol');
    await expect(a.client.send('alice', { to: 'carol', content: 'still there?' })).rejects.toMatchObject({
      code: 'unknown_recipient',
    });
  }, 60_000);
});
