/**
 * Groups and broadcasts with three agents on three daemon homes through a REAL relay,
 * behind a stand-in for a hostile relay (./fault-proxy.ts) that can drop, hold back
 * (reorder) or repeat one envelope. Rosters come from signed control messages on each
 * member; the relay sees sealed envelopes only; a receiver shows exactly the gap, late
 * arrival or duplicate it was given.
 */
import { join } from 'node:path';
import { createEnvelopeHeader, type Envelope, newMessageId, utf8 } from '@svc/shared';
import { deriveIdentityKeys, sealEnvelope } from '@svc/shared/node';
import { until } from '@svc/test-harness';
import { enrollAgent } from '@svc/test-harness/agent-client';
import { relayAs } from '@svc/test-harness/as-agent';
import type { TestDaemon } from '@svc/test-harness/daemon';
import type { DaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArchivedMessage, ConversationInfo, DaemonEvent } from '../src/client/index.js';
import { FileVault, loadSeed } from '../src/vault/index.js';
import { type FaultProxy, startBehindFaultProxy } from './fault-proxy.js';

type Name = 'alice' | 'bob' | 'carol';
let proxy: FaultProxy;
let stage: DaemonsOnRelay<Name>;
let agents: Record<Name, TestDaemon>;
let events: Record<Name, DaemonEvent[]>;

const client = (n: Name) => agents[n].client;
const roster = (c: ConversationInfo | undefined) => c?.members?.map((m) => `${m.number}:${m.role}:${m.active}`);

/** Waits until `n` holds a message whose content is `text` in the conversation; returns it. */
const received = (n: Name, conversation: string, text: string) =>
  until(
    async () => {
      const msgs = await client(n)
        .read(n, conversation)
        .catch(() => [] as ArchivedMessage[]);
      return msgs.find((m) => m.content === text);
    },
    15_000,
    `${n} receives ${text}`,
  );

/** Every member's view of the roster, once they all agree (alice's included); returns it. */
async function converged(id: string, members: Name[]): Promise<string[] | undefined> {
  return until(
    async () => {
      const want = roster(await client('alice').getConversation('alice', id));
      for (const n of members) {
        const got = roster(
          await client(n)
            .getConversation(n, id)
            .catch(() => undefined),
        );
        if (JSON.stringify(got) !== JSON.stringify(want)) return undefined;
      }
      return want;
    },
    15_000,
    `rosters of ${id} converge`,
  );
}

const to = (recipient: string, messageId?: string) => (e: Envelope) =>
  e.header.recipient === recipient && (messageId === undefined || e.header.message_id === messageId);

interface Forged {
  conversation_id: string;
  conversation_type: 'group' | 'broadcast' | 'direct';
  content_type?: 'text' | 'control';
  plaintext: string;
  /** a message id of the forger's choosing (any UUIDv7: its time too) */
  message_id?: string;
}

/** An envelope `from` seals by hand (its own seed), as a misbehaving member's client could. */
async function forged(from: Name, recipient: Name, fields: Forged): Promise<Envelope> {
  const seed = loadSeed(FileVault.open(join(agents[from].home, 'vault.json'), 'test passphrase'), from);
  const me = await client(from).getAgent(from);
  const keys = await relayAs<{ current: { encryption_public_key: string } }>(
    agents[from],
    from,
    'GET',
    `agents/${recipient}/keys`,
  );
  const { fromBase64url } = await import('@svc/shared');
  return sealEnvelope({
    header: createEnvelopeHeader({
      ...(fields.message_id !== undefined ? { message_id: fields.message_id } : {}),
      sender: from,
      recipient,
      conversation_id: fields.conversation_id,
      conversation_type: fields.conversation_type,
      content_type: fields.content_type ?? 'text',
      deployment_id: me.deployment_id,
      tenant_id: me.tenant_id,
    }),
    plaintext: utf8(fields.plaintext),
    recipientX25519Public: fromBase64url(keys.body.current.encryption_public_key),
    senderEd25519Private: deriveIdentityKeys(seed, 0).signPrivate,
  });
}

/** Posts what `from` forged past its daemon; the reason `recipient`'s daemon refused it with. */
async function refusal(from: Name, recipient: Name, fields: Forged): Promise<{ reason: string; envelope: Envelope }> {
  const envelope = await forged(from, recipient, fields);
  const res = await relayAs(agents[from], from, 'POST', 'messages', { envelopes: [envelope] });
  expect(res.status).toBeLessThan(300);
  const refused = await until(
    () => events[recipient].find((e) => e.type === 'rejected' && e.message_id === envelope.header.message_id),
    15_000,
    `${recipient} rejects ${envelope.header.message_id}`,
  );
  return { reason: (refused as Extract<DaemonEvent, { type: 'rejected' }>).reason, envelope };
}

beforeAll(async () => {
  ({ stage, proxy } = await startBehindFaultProxy({
    agents: ['alice', 'bob', 'carol'],
    // alice's outbox retries soon: the test of a relay that seems down waits on it
    daemon: (n) => (n === 'alice' ? { outboxRetryMinMs: 50, outboxRetryMaxMs: 200 } : {}),
  }));
  ({ daemons: agents, events } = stage);
}, 120_000);

afterAll(() => stage?.close());

describe('a group of three with an observer', () => {
  let group = '';

  it('create and invite converge on every member; the relay sees one sealed envelope per member', async () => {
    const created = await client('alice').createConversation('alice', {
      kind: 'group',
      name: 'team',
      description: 'the three of us',
      members: ['bob'],
    });
    group = created.conversation_id;
    expect(group).toMatch(/^grp:alice:/);
    expect(roster(created)).toEqual(['alice:creator:true', 'bob:member:true']);
    const invited = await client('alice').invite('alice', group, { number: 'carol', role: 'observer' });
    expect(roster(invited)).toEqual(['alice:creator:true', 'bob:member:true', 'carol:observer:true']);
    expect(await converged(group, ['bob', 'carol'])).toEqual(roster(invited));
    expect((await client('carol').getConversation('carol', group)).name).toBe('team');
    // roster changes are bookkeeping: they never wait in the inbox or raise a message event
    expect(
      (await client('carol').inbox('carol', { source: 'local' })).filter((m) => m.conversation_id === group),
    ).toEqual([]);
    expect(events.carol?.some((e) => e.type === 'message' && e.message.content_type === 'control')).toBe(false);
    expect(events.carol?.some((e) => e.type === 'roster' && e.conversation_id === group)).toBe(true);
    // the relay saw control envelopes only as sealed bytes: nothing in a header names the roster
    const controls = proxy.posted.filter((e) => e.header.conversation_id === group);
    expect(controls.every((e) => e.header.content_type === 'control')).toBe(true);
    expect(JSON.stringify(controls)).not.toContain('observer');
  });

  it('a message reaches every member, sealed once per member under one message id', async () => {
    const before = proxy.posted.length;
    const sent = await client('alice').send('alice', { to: '', conversation_id: group, content: 'hello team' });
    expect(sent.recipients?.sort()).toEqual(['bob', 'carol']);
    const envs = proxy.posted.slice(before);
    expect(envs.map((e) => e.header.recipient).sort()).toEqual(['bob', 'carol']);
    expect(new Set(envs.map((e) => e.header.message_id)).size).toBe(1);
    const atBob = await received('bob', group, 'hello team');
    expect(atBob).toMatchObject({ conversation_type: 'group', from: 'alice', seq: 3 });
    expect(atBob.sequence).toBeUndefined();
    await received('carol', group, 'hello team');
    // the sender's copy: one message for the group, delivered once a member's receipt came
    const mine = await until(
      async () =>
        (await client('alice').read('alice', group)).find(
          (m) => m.message_id === sent.message_id && m.state === 'delivered',
        ),
      15_000,
      "alice's group post delivered",
    );
    expect(mine).toMatchObject({ to: group, direction: 'outbound', content: 'hello team' });
    expect(mine.delivered_at).toEqual(expect.any(String));
  });

  it('reply inside the group goes to the group', async () => {
    const msg = await received('bob', group, 'hello team');
    await client('bob').reply('bob', { message_id: msg.message_id, content: 'hi all' });
    await received('alice', group, 'hi all');
    await received('carol', group, 'hi all');
  });

  it('an observer reads but cannot post: refused by its own daemon and by every receiver', async () => {
    await expect(
      client('carol').send('carol', { to: '', conversation_id: group, content: 'may I?' }),
    ).rejects.toMatchObject({ code: 'not_allowed_to_post', status: 403 });
    const { reason } = await refusal('carol', 'bob', {
      conversation_id: group,
      conversation_type: 'group',
      plaintext: JSON.stringify({ svc: 'group/v1', seq: 1, body: 'posting anyway' }),
    });
    expect(reason).toBe('not_allowed_to_post');
    expect((await client('bob').read('bob', group)).map((m) => m.content)).not.toContain('posting anyway');
  });

  it('a message for a group the receiver is not in is refused and never archived', async () => {
    const stranger = `grp:carol:${'Z'.repeat(22)}`;
    const { reason } = await refusal('carol', 'bob', {
      conversation_id: stranger,
      conversation_type: 'group',
      plaintext: JSON.stringify({ svc: 'group/v1', seq: 1, body: 'join my group' }),
    });
    expect(reason).toBe('not_a_member');
    await expect(client('bob').read('bob', stranger)).rejects.toMatchObject({ code: 'unknown_conversation' });
  });

  it("a group id can neither be a direct one nor claim someone else's creation", async () => {
    // a group message filed under the direct id of bob and alice
    const asDirect = await refusal('carol', 'bob', {
      conversation_id: 'dm:alice:bob',
      conversation_type: 'group',
      plaintext: JSON.stringify({ svc: 'group/v1', seq: 1, body: 'pretending' }),
    });
    expect(asDirect.reason).toBe('conversation_mismatch');
    // a create of a group whose id names alice as its creator, sent by carol (sealed as control:
    // text with a control payload is refused as malformed first)
    const claimed = `grp:alice:${'Y'.repeat(22)}`;
    const create = await refusal('carol', 'bob', {
      conversation_id: claimed,
      conversation_type: 'group',
      content_type: 'control',
      plaintext: JSON.stringify({
        svc: 'group/v1',
        seq: 1,
        control: { op: 'create', kind: 'group', name: 'fake', members: [{ number: 'bob', role: 'member' }] },
      }),
    });
    expect(create.reason).toBe('not_conversation_creator');
    await expect(client('bob').getConversation('bob', claimed)).rejects.toMatchObject({ code: 'unknown_conversation' });
  });

  it('only the creator invites', async () => {
    await expect(client('bob').invite('bob', group, { number: 'carol', role: 'member' })).rejects.toMatchObject({
      code: 'not_conversation_creator',
      status: 403,
    });
  });

  it('leave changes the roster on every member; who left gets nothing new and cannot post', async () => {
    const left = await client('bob').leave('bob', group);
    expect(left.me).toEqual({ role: 'member', active: false });
    expect(await converged(group, ['bob', 'carol'])).toEqual([
      'alice:creator:true',
      'bob:member:false',
      'carol:observer:true',
    ]);
    const before = proxy.posted.length;
    await client('alice').send('alice', { to: '', conversation_id: group, content: 'after bob left' });
    expect(proxy.posted.slice(before).map((e) => e.header.recipient)).toEqual(['carol']);
    await received('carol', group, 'after bob left');
    await expect(
      client('bob').send('bob', { to: '', conversation_id: group, content: 'still here?' }),
    ).rejects.toMatchObject({ code: 'not_a_member' });
  });
});

describe('an all-local roster', () => {
  it('stays on the device: nothing of it reaches the relay, and both agents read and post', async () => {
    await client('alice').register({ enrollment_code: await stage.grant('dora'), name: 'dora' });
    const g = await client('alice').createConversation('alice', { kind: 'group', name: 'home', members: ['dora'] });
    const id = g.conversation_id;
    const dora = await until(
      () =>
        client('alice')
          .getConversation('dora', id)
          .catch(() => undefined),
      15_000,
      'dora has the roster',
    );
    expect(roster(dora)).toEqual(roster(g));
    await client('alice').send('alice', { to: '', conversation_id: id, content: 'just us' });
    const got = await until(
      async () => (await client('alice').read('dora', id)).find((m) => m.content === 'just us'),
      15_000,
      'dora reads it',
    );
    expect(got).toMatchObject({ from: 'alice', seq: 2 });
    // dora archived it: delivered on alice's side, as a direct message between them would be
    const mine = (await client('alice').read('alice', id)).find((m) => m.content === 'just us');
    expect(mine).toMatchObject({ state: 'delivered', delivered_at: expect.any(String) });
    await client('alice').reply('dora', { message_id: got.message_id, content: 'indeed' });
    await until(
      async () => (await client('alice').read('alice', id)).find((m) => m.content === 'indeed'),
      15_000,
      'alice reads the reply',
    );
    expect(proxy.posted.filter((e) => e.header.conversation_id === id)).toEqual([]);
  });
});

describe('mutes hold in groups', () => {
  it("a muted member's group messages are archived, marked muted, and announced to no one", async () => {
    const g = await client('alice').createConversation('alice', {
      kind: 'group',
      name: 'quiet',
      members: ['bob', 'carol'],
    });
    await converged(g.conversation_id, ['bob', 'carol']);
    await client('carol').relate('carol', 'mute', 'bob');
    try {
      const sent = await client('bob').send('bob', { to: '', conversation_id: g.conversation_id, content: 'psst' });
      const atCarol = await received('carol', g.conversation_id, 'psst');
      expect(atCarol.muted).toBe(true);
      await received('alice', g.conversation_id, 'psst');
      expect(events.carol?.some((e) => e.type === 'message' && e.message.message_id === sent.message_id)).toBe(false);
      expect(events.alice?.some((e) => e.type === 'message' && e.message.message_id === sent.message_id)).toBe(true);
    } finally {
      await client('carol').unrelate('carol', 'mute', 'bob');
    }
  });
});

describe('a broadcast', () => {
  it('subscribers receive; a reply goes to the broadcaster only', async () => {
    const b = await client('alice').createConversation('alice', {
      kind: 'broadcast',
      name: 'news',
      members: ['bob', 'carol'],
    });
    expect(b.conversation_id).toMatch(/^bc:alice:/);
    await converged(b.conversation_id, ['bob', 'carol']);
    await client('alice').send('alice', { to: '', conversation_id: b.conversation_id, content: 'issue 1' });
    const atCarol = await received('carol', b.conversation_id, 'issue 1');
    await received('bob', b.conversation_id, 'issue 1');
    const before = proxy.posted.length;
    const reply = await client('carol').reply('carol', { message_id: atCarol.message_id, content: 'thanks' });
    expect(reply.recipients).toEqual(['alice']);
    expect(proxy.posted.slice(before).map((e) => e.header.recipient)).toEqual(['alice']);
    await received('alice', b.conversation_id, 'thanks');
    expect((await client('bob').read('bob', b.conversation_id)).map((m) => m.content)).not.toContain('thanks');
  });
});

describe('a relay that drops, repeats or reorders one envelope', () => {
  let g = '';
  const seqEvents = (n: Name) =>
    (events[n] ?? []).filter(
      (e): e is Extract<DaemonEvent, { type: 'sequence' }> => e.type === 'sequence' && e.conversation_id === g,
    );

  beforeAll(async () => {
    g = (
      await client('alice').createConversation('alice', { kind: 'group', name: 'faults', members: ['bob', 'carol'] })
    ).conversation_id;
    await converged(g, ['bob', 'carol']);
  });
  const say = (text: string) => client('alice').send('alice', { to: '', conversation_id: g, content: text });

  it('a dropped envelope: the receiver shows exactly that gap, the others nothing', async () => {
    await say('one'); // seq 2 (create was 1)
    proxy.drop(to('bob'));
    await say('two'); // seq 3: never reaches bob
    await say('three'); // seq 4
    const three = await received('bob', g, 'three');
    expect(three.seq).toBe(4);
    expect(three.sequence).toEqual({ gap: { from: 3, to: 3 }, missing: [3] });
    await received('carol', g, 'three');
    expect(seqEvents('bob').map((e) => [e.kind, e.seq, e.missing])).toEqual([['gap', 4, { from: 3, to: 3 }]]);
    expect(seqEvents('carol')).toEqual([]);
  });

  it('a reordered envelope: the gap shows, then the late one fills it', async () => {
    const four = say('four'); // seq 5, held back for carol
    proxy.hold(to('carol'));
    await four;
    await say('five'); // seq 6, then the held seq 5 follows it
    const late = await received('carol', g, 'four');
    expect(late).toMatchObject({ seq: 5, sequence: { late: true } });
    const five = (await client('carol').read('carol', g)).find((m) => m.content === 'five');
    expect(five?.sequence).toEqual({ gap: { from: 5, to: 5 }, missing: [] });
    expect(seqEvents('carol').map((e) => [e.kind, e.seq])).toEqual([
      ['gap', 6],
      ['reordered', 5],
    ]);
  });

  it('a repeated envelope: archived once, reported as a duplicate', async () => {
    proxy.duplicate(to('bob'));
    await say('six'); // seq 7
    const six = await received('bob', g, 'six');
    await until(() => seqEvents('bob').find((e) => e.kind === 'duplicate'), 15_000, 'duplicate reported');
    expect(
      seqEvents('bob')
        .filter((e) => e.kind === 'duplicate')
        .map((e) => [e.seq, e.message_id]),
    ).toEqual([[7, six.message_id]]);
    const msgs = (await client('bob').read('bob', g)).filter((m) => m.content === 'six');
    expect(msgs).toHaveLength(1);
    expect(msgs[0]?.sequence).toEqual({ duplicates: 1 });
  });

  it('a send the relay refuses takes no number: receivers see no gap after it', async () => {
    proxy.refuseNext = true;
    await expect(say('refused')).rejects.toMatchObject({ code: 'validation_failed' });
    const after = await say('after the refusal');
    expect(after.status).toBe('accepted');
    const atBob = await received('bob', g, 'after the refusal');
    expect(atBob.sequence).toBeUndefined();
    expect(seqEvents('bob').filter((e) => e.kind === 'gap')).toHaveLength(1);
  });

  it('a number the sender already used, under a new message id, is refused and reported as a duplicate', async () => {
    const { reason, envelope: env } = await refusal('alice', 'bob', {
      conversation_id: g,
      conversation_type: 'group',
      plaintext: JSON.stringify({ svc: 'group/v1', seq: 2, body: 'one, again' }),
    });
    expect(reason).toBe('sequence_duplicate');
    expect(seqEvents('bob').find((e) => e.message_id === env.header.message_id)).toMatchObject({
      kind: 'duplicate',
      seq: 2,
    });
    expect((await client('bob').read('bob', g)).map((m) => m.content)).not.toContain('one, again');
  });

  it('a group send while the relay is down waits in the outbox and then reaches every member', async () => {
    proxy.down = true;
    const queued = await say('while down');
    expect(queued).toMatchObject({ status: 'queued', state: 'queued' });
    proxy.down = false;
    const atBob = await received('bob', g, 'while down');
    await received('carol', g, 'while down');
    expect(atBob.sequence).toBeUndefined();
    await until(
      async () =>
        (await client('alice').read('alice', g)).find((m) => m.content === 'while down' && m.state !== 'queued'),
      15_000,
      'outbox flushed',
    );
  });
});

describe('conv list, messages and search over the archive', () => {
  it('list: groups and broadcasts with their names, direct conversations with their peer, most recent first', async () => {
    await client('alice').send('alice', { to: 'bob', content: '{"kind":"direct note"}', content_type: 'structured' });
    const list = await client('alice').conversations('alice');
    expect(list[0]).toMatchObject({ conversation_type: 'direct', peer: 'bob', conversation_id: 'dm:alice:bob' });
    expect(list.find((c) => c.name === 'team')).toMatchObject({ conversation_type: 'group', creator: 'alice' });
    expect(list.find((c) => c.name === 'news')).toMatchObject({ conversation_type: 'broadcast' });
    expect(await client('alice').conversations('alice', { limit: 2 })).toHaveLength(2);
    await expect(client('alice').conversations('alice', { limit: 0 })).rejects.toMatchObject({ status: 400 });
  });

  it('a direct conversation cannot be left: said so, not "no group or broadcast"', async () => {
    await expect(client('alice').leave('alice', 'dm:alice:bob')).rejects.toMatchObject({
      code: 'validation_failed',
      message: '"dm:alice:bob" is a direct conversation: only a group or broadcast has members to invite or leave.',
    });
    await expect(client('alice').leave('alice', 'dm:alice:nobody')).rejects.toMatchObject({
      code: 'unknown_conversation',
    });
  });

  it('messages: the latest page, then the pages after a sort key', async () => {
    const all = await client('alice').read('alice', 'dm:alice:bob');
    expect(all.length).toBeGreaterThan(0);
    const id = (await client('alice').conversations('alice')).find((c) => c.name === 'faults')
      ?.conversation_id as string;
    const everything = await client('alice').conversationMessages('alice', id, { limit: 1000 });
    const latest = await client('alice').conversationMessages('alice', id, { limit: 3 });
    // a receipt may land between the two reads (the last send's state, delivered_at): what
    // the pages are made of is compared, not what a receipt changes
    const settled = ({ state, delivered_at, acked_at, ...rest }: (typeof everything)[number]) => rest;
    expect(latest.map(settled)).toEqual(everything.slice(-3).map(settled));
    const first = everything[0]?.sort_key as string;
    const next = await client('alice').conversationMessages('alice', id, { limit: 2, since: first });
    expect(next.map((m) => m.message_id)).toEqual(everything.slice(1, 3).map((m) => m.message_id));
    expect(await client('alice').conversationMessages('alice', id)).toHaveLength(Math.min(50, everything.length));
  });

  it('search: participant, window, type, order, limit and offset; control messages never match', async () => {
    const c = client('alice');
    const all = await c.searchConversations('alice', { limit: 100 });
    expect(all.some((m) => m.content_type === 'control')).toBe(false);
    expect(all.map((m) => m.sent_at)).toEqual([...all.map((m) => m.sent_at)].sort().reverse());
    const oldest = await c.searchConversations('alice', { sort: 'oldest', limit: 100 });
    expect(oldest.map((m) => m.message_id)).toEqual([...all].reverse().map((m) => m.message_id));
    expect((await c.searchConversations('alice', { participant: 'carol' })).map((m) => m.content)).toEqual(['thanks']);
    expect((await c.searchConversations('alice', { type: 'structured' })).map((m) => m.content)).toEqual([
      '{"kind":"direct note"}',
    ]);
    expect(await c.searchConversations('alice', { type: 'media' })).toEqual([]);
    const mid = oldest[Math.floor(oldest.length / 2)] as ArchivedMessage;
    const after = await c.searchConversations('alice', { after: mid.sent_at, limit: 100 });
    expect(after.every((m) => m.sent_at > mid.sent_at)).toBe(true);
    const before = await c.searchConversations('alice', { before: mid.sent_at, limit: 100 });
    expect(before.every((m) => m.sent_at < mid.sent_at)).toBe(true);
    expect(after.length + before.length).toBeLessThan(all.length + 1);
    const page = await c.searchConversations('alice', { limit: 2, offset: 1 });
    expect(page.map((m) => m.message_id)).toEqual(all.slice(1, 3).map((m) => m.message_id));
    for (const bad of [{ limit: 101 }, { offset: 10_001 }, { after: 'yesterday' }, { participant: '../x' }]) {
      await expect(c.searchConversations('alice', bad)).rejects.toMatchObject({
        code: 'validation_failed',
        status: 400,
      });
    }
    await expect(c.searchConversations('alice', { sort: 'newest' as 'recent' })).rejects.toMatchObject({
      code: 'validation_failed',
    });
  });
});

describe('a member or peer that signs whatever it likes', () => {
  let g = '';
  beforeAll(async () => {
    g = (
      await client('alice').createConversation('alice', { kind: 'group', name: 'hostile', members: ['bob', 'carol'] })
    ).conversation_id;
    await converged(g, ['bob', 'carol']);
  });
  const controlsAt = async (n: Name) =>
    (await client(n).read(n, g)).filter((m) => m.content_type === 'control').map((m) => m.message_id);

  it('a leave stamped before the member was put in changes nothing and is not kept (no pile of them)', async () => {
    const before = await controlsAt('bob');
    // a valid UUIDv7 from 1970: older than the create that made carol a member, so it
    // could never win her presence register, however many of them she sends
    const { reason, envelope } = await refusal('carol', 'bob', {
      conversation_id: g,
      conversation_type: 'group',
      content_type: 'control',
      message_id: newMessageId(1_000),
      plaintext: JSON.stringify({ svc: 'group/v1', seq: 1, control: { op: 'leave' } }),
    });
    expect(reason).toBe('leave_superseded');
    expect(await controlsAt('bob')).toEqual(before);
    expect(await controlsAt('bob')).not.toContain(envelope.header.message_id);
    expect(roster(await client('bob').getConversation('bob', g))).toContain('carol:member:true');
  });

  it("an id copied from another sender's message is refused, never counted as a repeat of it", async () => {
    // bob's own group message: the relay holds its id for alice and carol, not for bob
    const mine = await client('bob').send('bob', { to: '', conversation_id: g, content: 'bob speaks' });
    await received('carol', g, 'bob speaks');
    const { reason } = await refusal('carol', 'bob', {
      conversation_id: g,
      conversation_type: 'group',
      message_id: mine.message_id,
      plaintext: JSON.stringify({ svc: 'group/v1', seq: 1, body: 'not bob' }),
    });
    expect(reason).toBe('message_id_conflict');
    const atBob = (await client('bob').read('bob', g)).filter((m) => m.message_id === mine.message_id);
    expect(atBob).toHaveLength(1);
    expect(atBob[0]).toMatchObject({ from: 'bob', content: 'bob speaks' });
    expect(atBob[0]?.sequence).toBeUndefined();
    expect(
      events.bob?.some((e) => e.type === 'sequence' && e.message_id === mine.message_id && e.kind === 'duplicate'),
    ).toBe(false);
  });

  it('a direct message that calls itself a roster change is refused (it would hide from search)', async () => {
    const { reason } = await refusal('carol', 'bob', {
      conversation_id: 'dm:bob:carol',
      conversation_type: 'direct',
      content_type: 'control',
      plaintext: 'not in any search',
    });
    expect(reason).toBe('content_type_mismatch');
    expect(
      (
        await client('bob')
          .read('bob', 'dm:bob:carol')
          .catch(() => [] as ArchivedMessage[])
      ).map((m) => m.content),
    ).not.toContain('not in any search');
  });

  it('a group name or description with terminal escapes or text-direction overrides is refused, sent or received', async () => {
    const id = `grp:carol:${'E'.repeat(22)}`;
    const { reason } = await refusal('carol', 'bob', {
      conversation_id: id,
      conversation_type: 'group',
      content_type: 'control',
      plaintext: JSON.stringify({
        svc: 'group/v1',
        seq: 1,
        control: {
          op: 'create',
          kind: 'group',
          name: '\u001b]0;svc: vault unlocked\u0007\u001b[2Jteam',
          members: [{ number: 'bob', role: 'member' }],
        },
      }),
    });
    expect(reason).toBe('group_payload_invalid');
    await expect(client('bob').getConversation('bob', id)).rejects.toMatchObject({ code: 'unknown_conversation' });
    for (const input of [{ name: 'evil\u202egnp.exe' }, { name: 'ok', description: 'line\r\u001b[1Aover' }]) {
      await expect(
        client('alice').createConversation('alice', { kind: 'group', members: ['bob'], ...input }),
      ).rejects.toMatchObject({ code: 'validation_failed', status: 400 });
    }
    // line breaks stay allowed in a description
    const fine = await client('alice').createConversation('alice', {
      kind: 'group',
      name: 'plain',
      description: 'two\nlines',
      members: ['bob'],
    });
    expect(fine.description).toBe('two\nlines');
  });
});

describe('a group larger than one send request (100 envelopes)', () => {
  it('a send refused after its first request went through keeps its number: the next message is new to those who got it', async () => {
    // 100 members that are relay clients only (keys from their enrollment), then bob
    // after bob in roster order: bob is in the first request
    const others = Array.from({ length: 100 }, (_, i) => `zz-${String(i).padStart(3, '0')}`);
    await Promise.all(others.map(async (n) => enrollAgent(stage.relay.url, await stage.grant(n))));
    const g = await client('alice').createConversation('alice', {
      kind: 'group',
      name: 'large',
      members: ['bob', ...others],
    });
    const id = g.conversation_id;
    await until(
      () =>
        client('bob')
          .getConversation('bob', id)
          .catch(() => undefined),
      15_000,
      'bob in the group',
    );
    // the second request of the next send (the one envelope past 100) is refused for good
    proxy.refuseWhen = (envs) => envs.length === 1 && envs[0]?.header.conversation_id === id;
    try {
      await expect(
        client('alice').send('alice', { to: '', conversation_id: id, content: 'half sent' }),
      ).rejects.toMatchObject({ code: 'validation_failed' });
    } finally {
      proxy.refuseWhen = undefined;
    }
    const first = await received('bob', id, 'half sent');
    // some members have it: the sender's archive keeps it, failed (it is not posted again)
    expect(
      (await client('alice').conversationMessages('alice', id)).find((m) => m.content === 'half sent'),
    ).toMatchObject({ state: 'failed' });
    await client('alice').send('alice', { to: '', conversation_id: id, content: 'the next one' });
    const next = await received('bob', id, 'the next one');
    expect(next.seq).toBe((first.seq as number) + 1);
  }, 90_000);
});

// last: carol deregisters here, and no test after this one may need her
describe('a member the relay no longer lists', () => {
  let departures = '';

  it('a message leaves out a member who deregistered without leaving, and says so; the others get it', async () => {
    const g = await client('alice').createConversation('alice', {
      kind: 'group',
      name: 'departures',
      members: ['bob', 'carol'],
    });
    departures = g.conversation_id;
    await converged(g.conversation_id, ['bob', 'carol']);
    await client('carol').deregister('carol');
    const sent = await client('alice').send('alice', {
      to: '',
      conversation_id: g.conversation_id,
      content: 'carol has gone',
    });
    expect(sent).toMatchObject({ status: 'accepted', recipients: ['bob'], skipped: ['carol'] });
    await received('bob', g.conversation_id, 'carol has gone');
    // a roster change adds no gone member: nothing is created with one or invites one
    await expect(
      client('alice').createConversation('alice', { kind: 'group', name: 'with carol', members: ['carol'] }),
    ).rejects.toMatchObject({ code: 'unknown_recipient' });
    const id = g.conversation_id;
    const posted = proxy.posted.length;
    await expect(client('alice').invite('alice', id, { number: 'nobody' })).rejects.toMatchObject({
      code: 'unknown_recipient',
      message: expect.stringContaining('nobody'),
    });
    expect(proxy.posted.length).toBe(posted);
  });

  it('roster changes go on past a gone member: a member leaves, and so does the creator when nobody is left', async () => {
    const id = departures;
    const posted = proxy.posted.length;
    const left = await client('bob').leave('bob', id);
    expect(left.me).toEqual({ role: 'member', active: false });
    // told to alice alone: carol is left out
    expect(proxy.posted.slice(posted).map((e) => e.header.recipient)).toEqual(['alice']);
    await until(
      async () => roster(await client('alice').getConversation('alice', id))?.includes('bob:member:false'),
      15_000,
      'alice sees bob leave',
    );
    const last = await client('alice').leave('alice', id);
    expect(last.me).toMatchObject({ active: false });
    await expect(
      client('alice').send('alice', { to: '', conversation_id: id, content: 'anyone?' }),
    ).rejects.toMatchObject({ code: 'not_a_member' });
  });
});
