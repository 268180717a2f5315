/**
 * An agent revoked while its relay was down, with a message in its outbox: when the relay is
 * back and refuses the agent, the message stays queued (a refused sign-in is the agent's, not
 * the message's), and the session stays refused through whatever fails next (the relay gone
 * again) instead of going back to connecting at the reconnect pace. A real relay process,
 * stopped and started again on its port.
 */
import { until } from '@svc/test-harness';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, expect, it } from 'vitest';

let stage: DaemonsOnRelay<'alice' | 'bob'>;
let relay: RelayProcess;

beforeAll(async () => {
  stage = await startDaemonsOnRelay({
    agents: ['alice', 'bob'],
    // short waits, so that several outbox tries and refused retries fall in the test
    daemon: { outboxRetryMinMs: 100, outboxRetryMaxMs: 300, refusedRetryMinMs: 300 },
  });
  relay = stage.relay;
}, 90_000);

afterAll(async () => {
  await relay?.stop();
  await stage?.close();
});

const restart = async () => {
  relay = await spawnRelay({ dataDir: relay.dataDir, env: relay.env, port: relay.port, init: false });
};

it('a queued message of an agent revoked meanwhile stays queued; the session stays refused', async () => {
  const alice = stage.daemons.alice.client;
  const events = stage.events.alice;
  // bob's key pinned first: a message can be sealed for him while the relay is down
  await alice.send('alice', { to: 'bob', content: 'hello' });

  await relay.stop('SIGKILL');
  const queued = await alice.send('alice', { to: 'bob', content: 'written while the relay was down' });
  expect(queued).toMatchObject({ status: 'queued' });
  const revoked = await runRelayCli(['agent', 'revoke', '--agent-id', 'alice', '--tenant', 'acme'], relay.env);
  expect(revoked.code, revoked.stderr).toBe(0);
  await restart();

  await until(
    () => events.some((e) => e.type === 'session' && e.agent === 'alice' && e.state === 'refused'),
    30_000,
    'alice refused',
  );
  const refusedAt = events.length;
  // several outbox tries (every 100–300 ms) later, the message is still waiting
  await new Promise((r) => setTimeout(r, 2_000));
  const state = async () => (await alice.read('alice', 'bob')).find((m) => m.message_id === queued.message_id)?.state;
  expect(await state()).toBe('queued');

  // the relay goes again: the refused retries (0.3, 0.6, 1.2 s …) fail on the network now
  await relay.stop('SIGKILL');
  await new Promise((r) => setTimeout(r, 2_500));
  expect(events.slice(refusedAt).filter((e) => e.type === 'session' && e.agent === 'alice')).toEqual([]);
  expect(await state()).toBe('queued');
}, 90_000);
