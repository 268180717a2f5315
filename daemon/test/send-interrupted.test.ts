/**
 * A message is in the sender's archive (queued) before it is posted: a daemon killed while
 * the relay has it and its answer has not come back finds it in its outbox at the next
 * start, posts it again under its id (the relay answers duplicate), and its recipient gets
 * it once. Before, a send was archived only after the relay answered, so a daemon killed
 * then lacked a message its recipient got. A REAL relay process behind the fault proxy
 * (./fault-proxy.ts), which takes the post to the relay and never answers it.
 */
import { until } from '@svc/test-harness';
import { startDaemon, type TestDaemon } from '@svc/test-harness/daemon';
import type { DaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type FaultProxy, startBehindFaultProxy } from './fault-proxy.js';

let proxy: FaultProxy;
let stage: DaemonsOnRelay<'alice' | 'bob'>;
let restarted: TestDaemon | undefined;
const timing = { outboxRetryMinMs: 50, outboxRetryMaxMs: 200, reconnectMinMs: 50, reconnectMaxMs: 200 };

beforeAll(async () => {
  ({ stage, proxy } = await startBehindFaultProxy({
    agents: ['alice', 'bob'],
    daemon: timing,
  }));
  // bob's key pinned by a first message
  await stage.daemons.alice.client.send('alice', { to: 'bob', content: 'hello bob' });
}, 90_000);

afterAll(async () => {
  await restarted?.daemon.close();
  await stage?.close();
});

it('a send whose answer never came before the daemon stopped is in the archive and goes out once at the next start', async () => {
  const a = stage.daemons.alice;
  const b = stage.daemons.bob;
  const text = 'the daemon stopped while the relay answered';
  proxy.afterSend = (envelopes) => (envelopes.some((e) => e.header.recipient === 'bob') ? 'hang' : undefined);
  // bob's acknowledgement waits, so no receipt can mark it delivered before the stop (the
  // restarted daemon would then have nothing to post again)
  proxy.acksDown = true;
  const sending = a.client.send('alice', { to: 'bob', content: text }).catch((err: Error) => err);
  const id = await until(
    async () => (await b.client.read('bob', 'alice').catch(() => [])).find((m) => m.content === text)?.message_id,
    20_000,
    'bob receives it from the relay',
  );
  // what makes a stop at this moment safe: the sender's archive holds it already, queued
  const held = (await a.client.read('alice', 'bob')).find((m) => m.message_id === id);
  expect(held).toMatchObject({ content: text, state: 'queued' });
  const stopping = Date.now();
  await a.daemon.close();
  // The stop cut the post short instead of waiting out the relay's silence (the post's own
  // timeout is 15 s, and bob had the message within a second or two of the post)
  expect(Date.now() - stopping).toBeLessThan(10_000);
  expect(await sending).toMatchObject({ state: 'queued' });
  proxy.afterSend = undefined;
  proxy.acksDown = false;

  restarted = await startDaemon(a.home, timing);
  await until(
    async () =>
      ['sent', 'delivered'].includes(
        (await restarted?.client.read('alice', 'bob'))?.find((m) => m.message_id === id)?.state ?? '',
      ),
    30_000,
    'the restarted daemon has it, sent',
  );
  // posted twice (the post without an answer, and the outbox's), received once
  expect(proxy.posted.filter((e) => e.header.message_id === id)).toHaveLength(2);
  expect((await b.client.read('bob', 'alice')).filter((m) => m.content === text)).toHaveLength(1);
}, 120_000);

it('a group message is in the archive, queued, while its first post waits for the relay, and goes out once', async () => {
  const a = restarted ?? stage.daemons.alice;
  const b = stage.daemons.bob;
  const created = await a.client.createConversation('alice', { kind: 'group', name: 'held', members: ['bob'] });
  const group = created.conversation_id;
  await until(async () => (await b.client.getConversation('bob', group).catch(() => undefined)) !== undefined);
  const text = 'a group message whose answer never comes';
  proxy.afterSend = (envelopes) => (envelopes.some((e) => e.header.conversation_id === group) ? 'hang' : undefined);
  proxy.acksDown = true;
  try {
    const sending = a.client.send('alice', { to: '', conversation_id: group, content: text });
    const id = await until(
      async () => (await b.client.conversationMessages('bob', group)).find((m) => m.content === text)?.message_id,
      20_000,
      'bob receives it from the relay',
    );
    const held = (await a.client.conversationMessages('alice', group)).find((m) => m.message_id === id);
    expect(held).toMatchObject({ content: text, state: 'queued' });
    proxy.afterSend = undefined;
    proxy.acksDown = false;
    // no answer within the daemon's wait: queued, then the outbox posts it again (duplicate)
    expect((await sending).state).toBe('queued');
    await until(
      async () =>
        ['sent', 'delivered'].includes(
          (await a.client.conversationMessages('alice', group)).find((m) => m.message_id === id)?.state ?? '',
        ),
      30_000,
      'the outbox settles it',
    );
    expect((await b.client.conversationMessages('bob', group)).filter((m) => m.content === text)).toHaveLength(1);
  } finally {
    proxy.afterSend = undefined;
    proxy.acksDown = false;
  }
}, 120_000);
