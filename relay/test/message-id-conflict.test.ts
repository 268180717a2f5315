/**
 * The message id is the idempotency key of one sender's envelope to one recipient. Two
 * senders posting the same message id to one recipient at the same time: the first is
 * accepted, the other gets 409 message_id_conflict, and the stored envelope's
 * `header.sender` is the sender the relay reports. A retry by the same sender stays
 * idempotent, concurrent or not.
 */
import { newMessageId } from '@svc/shared';
import { call, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: BusRelay;
let alice: TestAgent;
let bob: TestAgent;
let carol: TestAgent;

beforeAll(async () => {
  relay = await inProcessBusRelay();
  [alice, bob, carol] = await Promise.all([relay.enroll('alice'), relay.enroll('bob'), relay.enroll('carol')]);
}, 60_000);

afterAll(async () => {
  await relay?.close();
});

interface Pending {
  envelopes: Array<{ message_id: string; sender: string; envelope: { header: { sender: string } } }>;
}

const send = (from: TestAgent, envelopes: unknown[]) =>
  call<{ results?: Array<{ status: string }>; error?: string; message?: string }>(
    relay.url,
    'POST',
    '/api/v1/messages',
    { envelopes },
    from.auth,
  );

async function pendingFor(who: TestAgent): Promise<Pending['envelopes']> {
  return (await call<Pending>(relay.url, 'GET', '/api/v1/messages/pending?limit=100', undefined, who.auth)).body
    .envelopes;
}

const ROUNDS = 12;

describe('the same message id from two senders at once', () => {
  it('one is accepted, the other gets 409 message_id_conflict; the stored sender is the reported one', async () => {
    const ids = Array.from({ length: ROUNDS }, () => newMessageId());
    const outcomes = await Promise.all(
      ids.map(async (id) => {
        const [a, c] = await Promise.all([
          send(alice, [sealFor(alice, bob, 'from alice', { message_id: id })]),
          send(carol, [sealFor(carol, bob, 'from carol', { message_id: id })]),
        ]);
        return { id, a, c };
      }),
    );
    const stored = await pendingFor(bob);
    for (const { id, a, c } of outcomes) {
      const statuses = [a.status, c.status].sort();
      expect(statuses, `round ${id}`).toEqual([202, 409]);
      const refused = a.status === 409 ? a : c;
      expect(refused.body).toEqual({ error: 'message_id_conflict', message: expect.any(String) });
      const rows = stored.filter((e) => e.message_id === id);
      expect(rows).toHaveLength(1);
      const row = rows[0] as Pending['envelopes'][number];
      expect(row.sender).toBe(a.status === 202 ? alice.number : carol.number);
      expect(row.envelope.header.sender).toBe(row.sender);
    }
  }, 60_000);

  it('a concurrent retry by the same sender stays idempotent: both 202, one envelope', async () => {
    const envelope = sealFor(alice, bob, 'retried', { message_id: newMessageId() });
    const [first, second] = await Promise.all([send(alice, [envelope]), send(alice, [envelope])]);
    expect([first.status, second.status]).toEqual([202, 202]);
    expect((await send(alice, [envelope])).body.results?.[0]?.status).toBe('duplicate');
    const rows = (await pendingFor(bob)).filter((e) => e.message_id === envelope.header.message_id);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.sender).toBe(alice.number);
  });

  it('the ledger refuses a row taken by another sender, and records nothing of that batch', async () => {
    const envelope = sealFor(alice, bob, 'first', { message_id: newMessageId() });
    expect((await send(alice, [envelope])).status).toBe(202);
    const ledger = relay.relay.context.ledger;
    const rows = new Map<string, string>();
    for (const id of ['alice', 'bob', 'carol']) rows.set(id, (await ledger.activeAgent('default', id))?.id as string);
    const rowOf = (agentId: string) => rows.get(agentId) as string;
    const store = relay.relay.context.stores.messages;
    const row = (messageId: string, senderAgent: TestAgent) => ({
      recipient_row: rowOf('bob'),
      message_id: messageId,
      tenant_id: 'default',
      recipient_number: bob.number,
      sender_row: rowOf(senderAgent.agentId),
      sender_number: senderAgent.number,
      stream_seq: 999_999,
      size: 1,
      accepted_at: Date.now(),
    });
    const other = newMessageId();
    expect(await store.insertMany([row(other, carol), row(envelope.header.message_id, carol)])).toEqual({
      conflict: envelope.header.message_id,
    });
    expect(await store.find(rowOf('bob'), other)).toBeUndefined();
    expect((await store.find(rowOf('bob'), envelope.header.message_id))?.sender_row).toBe(rowOf('alice'));
    // the same sender's row again is no conflict
    expect(await store.insertMany([row(envelope.header.message_id, alice)])).toMatchObject({
      ignored: [{ message_id: envelope.header.message_id }],
    });
  });
});
