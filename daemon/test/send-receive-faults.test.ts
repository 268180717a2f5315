/**
 * The sending and receiving state machine when the relay's answers go wrong, against a
 * REAL relay process behind the fault proxy (./fault-proxy.ts) and the daemons' real
 * archives: an answer lost after the relay took the envelope, a 202 that does not account
 * for what was sent, a "send it again" refusal (408), an archive write that fails once,
 * and a pending page that never moves on. Nothing accepted may be lost, doubled under
 * another id, or left stuck.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '@svc/test-harness';
import type { TestDaemon } from '@svc/test-harness/daemon';
import type { DaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DaemonEvent } from '../src/client/index.js';
import { type FaultProxy, startBehindFaultProxy } from './fault-proxy.js';

let proxy: FaultProxy;
let stage: DaemonsOnRelay<'alice' | 'bob'>;
let a: TestDaemon;
let b: TestDaemon;
let aliceEvents: DaemonEvent[];
let bobEvents: DaemonEvent[];

beforeAll(async () => {
  ({ stage, proxy } = await startBehindFaultProxy({
    agents: ['alice', 'bob'],
    // short, injected delays: outbox retries every 50-200 ms, reconnects after 50-200 ms
    daemon: { outboxRetryMinMs: 50, outboxRetryMaxMs: 200, reconnectMinMs: 50, reconnectMaxMs: 200 },
  }));
  ({ alice: a, bob: b } = stage.daemons);
  aliceEvents = stage.events.alice;
  bobEvents = stage.events.bob;
  // bob's key pinned by a first message
  await a.client.send('alice', { to: 'bob', content: 'hello bob' });
}, 90_000);

afterAll(() => stage?.close());

const aliceState = async (messageId: string) =>
  (await a.client.read('alice', 'bob')).find((m) => m.message_id === messageId)?.state;

/** Sent, or already delivered (bob's receipt may come first). */
const settled = async (messageId: string) => ['sent', 'delivered'].includes((await aliceState(messageId)) ?? '');

/** bob's copies of `text` (inbound, from alice), once at least one arrived. */
const bobGets = (text: string) =>
  until(
    async () => {
      const got = (await b.client.read('bob', 'alice')).filter((m) => m.content === text);
      return got.length > 0 ? got : undefined;
    },
    20_000,
    `bob receives "${text}"`,
  );

/** Posts of alice's envelopes whose plaintext cannot be seen: counted by message id. */
const postsOf = (messageId: string) => proxy.posted.filter((e) => e.header.message_id === messageId).length;

describe('an outbound message whose answer goes wrong', () => {
  it('an answer cut off after the relay took the envelope: queued, not an error, and delivered once under its id', async () => {
    let cut = false;
    proxy.afterSend = () => {
      if (cut) return undefined;
      cut = true;
      return 'cut';
    };
    try {
      const sent = await a.client.send('alice', { to: 'bob', content: 'answer lost on the way' });
      expect(sent.state).toBe('queued');
      await until(() => settled(sent.message_id), 20_000, 'the outbox settles it');
      const got = await bobGets('answer lost on the way');
      expect(got.map((m) => m.message_id)).toEqual([sent.message_id]);
    } finally {
      proxy.afterSend = undefined;
    }
  }, 60_000);

  it('a group message whose answer is cut off: queued, not an error, and delivered once to the member', async () => {
    const created = await a.client.createConversation('alice', { kind: 'group', name: 'cut', members: ['bob'] });
    const group = created.conversation_id;
    await until(
      async () => (await b.client.getConversation('bob', group).catch(() => undefined)) !== undefined,
      20_000,
      'bob has the group',
    );
    let cut = false;
    proxy.afterSend = (envelopes) => {
      if (cut || !envelopes.some((e) => e.header.conversation_id === group)) return undefined;
      cut = true;
      return 'cut';
    };
    try {
      const sent = await a.client.send('alice', { to: '', conversation_id: group, content: 'group answer lost' });
      expect(sent.state).toBe('queued');
      const got = await until(
        async () => {
          const all = await b.client.conversationMessages('bob', group);
          const mine = all.filter((m) => m.content === 'group answer lost');
          return mine.length > 0 ? mine : undefined;
        },
        20_000,
        'bob receives the group message',
      );
      expect(got.map((m) => m.message_id)).toEqual([sent.message_id]);
      await until(
        async () =>
          ['sent', 'delivered'].includes(
            (await a.client.conversationMessages('alice', group)).find((m) => m.message_id === sent.message_id)
              ?.state ?? '',
          ),
        20_000,
        'the outbox settles it',
      );
    } finally {
      proxy.afterSend = undefined;
    }
  }, 60_000);

  it('a 202 that does not account for the envelope (no result, another id) is not taken as sent', async () => {
    for (const results of [[], [{ message_id: randomUUID(), recipient: 'bob', status: 'accepted' }]]) {
      const text = `unconfirmed ${results.length}`;
      let lied = false;
      // the envelope never reaches the relay, and the answer says nothing of it
      proxy.drop((e) => e.header.recipient === 'bob');
      proxy.afterSend = () => {
        if (lied) return undefined;
        lied = true;
        return { status: 202, body: { results } };
      };
      try {
        const sent = await a.client.send('alice', { to: 'bob', content: text });
        expect(sent.state).toBe('queued');
        // the outbox posts it again, under the same id, and the relay confirms it
        const got = await bobGets(text);
        expect(got.map((m) => m.message_id)).toEqual([sent.message_id]);
        await until(() => settled(sent.message_id), 20_000, 'sent once confirmed');
      } finally {
        proxy.afterSend = undefined;
      }
    }
  }, 60_000);

  it("a relay that answers 'duplicate' for a new message (and drops it): sent as far as it says, and the daemon warns", async () => {
    const text = 'said to be a duplicate';
    proxy.drop((e) => e.header.recipient === 'bob');
    proxy.afterSend = (envelopes) => ({
      status: 202,
      body: {
        results: envelopes.map((e) => ({ message_id: e.header.message_id, recipient: 'bob', status: 'duplicate' })),
      },
    });
    try {
      const sent = await a.client.send('alice', { to: 'bob', content: text });
      expect(sent).toMatchObject({ status: 'duplicate', state: 'sent' });
      // (the log is written in the background)
      const warning = await until(
        () =>
          readFileSync(join(a.home, 'logs', 'daemon.log'), 'utf8')
            .split('\n')
            .find(
              (l) =>
                l.includes(sent.message_id) && l.includes('answered duplicate for a message it had never been sent'),
            ),
        10_000,
        'the warning in the log',
      );
      expect(JSON.parse(warning)).toMatchObject({ level: 40, agent: 'alice', message_id: sent.message_id });
    } finally {
      proxy.afterSend = undefined;
    }
  });

  it('a queued message the relay answers 408 (send it again) stays queued and goes out', async () => {
    proxy.down = true;
    const queued = await a.client.send('alice', { to: 'bob', content: 'after a request timeout' });
    expect(queued.state).toBe('queued');
    let timedOut = 0;
    proxy.beforeSend = () => (timedOut++ === 0 ? { status: 408, error: 'request_timeout' } : undefined);
    proxy.down = false;
    try {
      const got = await bobGets('after a request timeout');
      expect(got.map((m) => m.message_id)).toEqual([queued.message_id]);
      expect(timedOut).toBeGreaterThan(1);
      expect(aliceEvents.filter((e) => e.type === 'outbox' && e.message_id === queued.message_id)).toEqual([
        expect.objectContaining({ state: 'sent' }),
      ]);
      expect(postsOf(queued.message_id)).toBe(1);
    } finally {
      proxy.beforeSend = undefined;
    }
  }, 60_000);
});

describe('an inbound message whose archiving fails', () => {
  it('an archive write that fails once: the message comes again and is archived, never refused as a replay', async () => {
    // a real SQLite failure in bob's archive for this one message (as a full disk would give)
    const db = new Database(join(b.home, 'agents', 'bob', 'archive.db'));
    try {
      db.exec(`CREATE TRIGGER fail_once BEFORE INSERT ON messages WHEN NEW.sender = 'alice'
               BEGIN SELECT RAISE(ABORT, 'archive write failed (test)'); END`);
      const sent = await a.client.send('alice', { to: 'bob', content: 'archived at the second try' });
      await until(
        () => bobEvents.some((e) => e.type === 'session' && e.error?.includes('write failed (test)')),
        20_000,
        'bob fails to archive it',
      );
      db.exec('DROP TRIGGER fail_once');
      const got = await bobGets('archived at the second try');
      expect(got.map((m) => m.message_id)).toEqual([sent.message_id]);
      expect(bobEvents.filter((e) => e.type === 'rejected')).toEqual([]);
    } finally {
      db.exec('DROP TRIGGER IF EXISTS fail_once');
      db.close();
    }
  }, 60_000);
});

describe('a pending page that does not move on', () => {
  it('a sync ends when the relay repeats a page (or goes back) with more: true', async () => {
    const sent = await a.client.send('alice', { to: 'bob', content: 'seen by sync' });
    await bobGets('seen by sync');
    const envelope = proxy.posted.find((e) => e.header.message_id === sent.message_id);
    const item = (cursor: number) => ({
      cursor,
      message_id: sent.message_id,
      sender: 'alice',
      accepted_at: new Date().toISOString(),
      envelope,
    });
    // the same envelope at cursor 7, then a step back to 3, and "more" every time
    proxy.pending = (after) => ({ envelopes: [item(after >= 7 ? 3 : 7)], more: true });
    try {
      const result = await b.client.sync('bob');
      expect(proxy.pendingReads).toBeLessThanOrEqual(3);
      expect(result.archived).toBe(0);
      expect((await b.client.read('bob', 'alice')).filter((m) => m.content === 'seen by sync')).toHaveLength(1);
    } finally {
      proxy.pending = undefined;
    }
  }, 60_000);
  it('the inbox answers from the archive while a relay that hangs holds its pending read (the stream down)', async () => {
    await a.client.send('alice', { to: 'bob', content: 'in the archive already' });
    await bobGets('in the archive already');
    proxy.readsHang = true;
    try {
      proxy.endStreams();
      await until(
        async () => (await b.client.status()).agents.find((x) => x.name === 'bob')?.session !== 'connected',
        20_000,
        "bob's stream is down",
      );
      // the relay never answers the pending read; auto answers from the archive all the same,
      // twice (the second does not start another read)
      for (let i = 0; i < 2; i++) {
        const inbox = await b.client.inbox('bob');
        expect(inbox.map((m) => m.content)).toContain('in the archive already');
      }
      // an ack of an id not archived asks the relay first, and gives it as long
      await expect(b.client.ack('bob', randomUUID())).rejects.toMatchObject({
        code: 'unknown_message',
        message: expect.stringContaining('(the relay did not answer in time: it may still come; try again)'),
      });
    } finally {
      proxy.unhang();
    }
    await until(
      async () => (await b.client.status()).agents.find((x) => x.name === 'bob')?.session === 'connected',
      30_000,
      'bob connected again',
    );
  }, 60_000);
});
