/**
 * svc recover reset-db on an agent of a real relay: the session goes on with an empty
 * archive (what the old one held stays in the file set aside: the relay keeps nothing once
 * the daemon archived it), and the peer's pinned key is carried over, so the peer's next
 * message is checked against it, not pinned anew.
 */
import { until } from '@svc/test-harness';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, expect, it } from 'vitest';

let stage: DaemonsOnRelay<'alice' | 'bob'>;

beforeAll(async () => {
  stage = await startDaemonsOnRelay({ agents: ['alice', 'bob'] });
}, 90_000);

afterAll(() => stage?.close());

it('the session goes on with an empty archive and the pinned key; the old messages are in the file set aside', async () => {
  const { alice: a, bob: b } = stage.daemons;
  const inbox = async () => (await b.client.inbox('bob', { source: 'local' })).map((m) => m.content);
  await a.client.send('alice', { to: 'bob', content: 'before the reset' });
  await until(async () => (await inbox()).includes('before the reset'), 20_000, 'bob has the first');
  const pinned = (await b.client.keys('bob')).peers.find((p) => p.agent_number === 'alice');
  expect(pinned).toBeDefined();

  const r = await b.client.resetArchive('bob');
  expect(r).toMatchObject({ agent: 'bob', set_aside: expect.stringMatching(/archive\.db\.reset-/), pins_kept: 1 });
  expect(await inbox()).toEqual([]);
  expect((await b.client.keys('bob')).peers.find((p) => p.agent_number === 'alice')).toEqual(pinned);
  const old = new Database(r.set_aside, { readonly: true });
  expect(old.prepare('SELECT content FROM messages').all()).toEqual([{ content: 'before the reset' }]);
  old.close();
  // the session goes on: the next message arrives, from the peer whose key is still pinned
  await a.client.send('alice', { to: 'bob', content: 'after the reset' });
  await until(async () => (await inbox()).includes('after the reset'), 20_000, 'a new one after');
  expect((await b.client.keys('bob')).peers.find((p) => p.agent_number === 'alice')?.pinned_at).toBe(pinned?.pinned_at);
}, 90_000);
