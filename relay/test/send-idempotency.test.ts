/**
 * Idempotent sends without a ledger look-up before publishing: the relay publishes, then
 * records with one insert that tells it which envelopes it had already. A retry gets
 * `duplicate` and is stored once, in the ledger and in the stream, whether JetStream still
 * remembers the first publish or its deduplication window has passed; another sender's
 * id refuses the whole request, which records nothing.
 */
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { headers, nanos } from '@nats-io/transport-node';
import { newMessageId } from '@svc/shared';
import { until } from '@svc/test-harness';
import { call, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: BusRelay;
let alice: TestAgent;
let bob: TestAgent;
let carol: TestAgent;
let jsm: JetStreamManager;

beforeAll(async () => {
  relay = await inProcessBusRelay();
  [alice, bob, carol] = await Promise.all([relay.enroll('alice'), relay.enroll('bob'), relay.enroll('carol')]);
  jsm = await jetstreamManager(await relay.relay.context.bus.tenantConnection(alice.tenantId));
}, 60_000);

afterAll(async () => {
  await relay?.close();
});

type Results = { results?: Array<{ message_id: string; recipient: string; status: string }>; error?: string };
const send = (from: TestAgent, envelopes: unknown[]) =>
  call<Results>(relay.url, 'POST', '/api/v1/messages', { envelopes }, from.auth);

const pending = async (who: TestAgent) =>
  (
    await call<{ envelopes: Array<{ message_id: string; cursor: number; sender: string }> }>(
      relay.url,
      'GET',
      '/api/v1/messages/pending?limit=100',
      undefined,
      who.auth,
    )
  ).body.envelopes;

/** Envelopes in the tenant's stream addressed to this agent. */
async function inStream(who: TestAgent): Promise<number> {
  const subject = `msg.${who.number}`;
  const info = await jsm.streams.info('SVC_MSGS', { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

describe('a retried send', () => {
  it('gets duplicate for every envelope the relay has, stored once in the ledger and in the stream', async () => {
    const batch = [sealFor(alice, bob, 'one'), sealFor(alice, bob, 'two')];
    const before = await inStream(bob);
    const first = await send(alice, batch);
    expect(first.body.results?.map((r) => r.status)).toEqual(['accepted', 'accepted']);
    // the retry, with one new envelope in it
    const third = sealFor(alice, bob, 'three');
    const retry = await send(alice, [...batch, third]);
    expect(retry.status).toBe(202);
    expect(retry.body.results).toEqual([
      { message_id: batch[0]?.header.message_id, recipient: bob.number, status: 'duplicate' },
      { message_id: batch[1]?.header.message_id, recipient: bob.number, status: 'duplicate' },
      { message_id: third.header.message_id, recipient: bob.number, status: 'accepted' },
    ]);
    const ids = [...batch, third].map((e) => e.header.message_id);
    const rows = (await pending(bob)).filter((e) => ids.includes(e.message_id));
    expect(rows.map((r) => r.message_id)).toEqual(ids);
    expect(await inStream(bob)).toBe(before + 3);
  });

  it('after JetStream forgot the first publish: duplicate, and the copy the retry published is deleted', async () => {
    const original = (await jsm.streams.info('SVC_MSGS')).config;
    const e = sealFor(alice, bob, 'retried late');
    const before = await inStream(bob);
    expect((await send(alice, [e])).body.results?.[0]?.status).toBe('accepted');
    const [row] = (await pending(bob)).filter((p) => p.message_id === e.header.message_id);
    try {
      // a short deduplication window, and a probe published after the envelope tells when it has passed
      await jsm.streams.update('SVC_MSGS', { ...original, duplicate_window: nanos(100) });
      const probe = () => {
        const h = headers();
        h.set('Nats-Msg-Id', 'window-probe');
        return relay.relay.context.bus
          .tenantConnection(alice.tenantId)
          .then((nc) => nc.request('msg.window-probe', 'x', { headers: h, timeout: 2000 }));
      };
      await probe();
      await until(async () => (await probe()).json<{ duplicate?: boolean }>().duplicate !== true, 10_000, 'window');

      const retry = await send(alice, [e]);
      expect(retry.body.results?.[0]?.status).toBe('duplicate');
      // the ledger still points at the first copy; the second is deleted (best-effort, just after the answer)
      const rows = (await pending(bob)).filter((p) => p.message_id === e.header.message_id);
      expect(rows).toEqual([row]);
      await until(async () => (await inStream(bob)) === before + 1, 10_000, 'the retried copy to be deleted');
    } finally {
      await jsm.streams.update('SVC_MSGS', original);
      await jsm.streams.purge('SVC_MSGS', { filter: 'msg.window-probe' });
    }
  });

  it('the same id from another sender: 409 message_id_conflict, and nothing of that request is recorded', async () => {
    const e = sealFor(alice, bob, 'first', { message_id: newMessageId() });
    expect((await send(alice, [e])).status).toBe(202);
    const fresh = sealFor(carol, bob, 'fresh');
    const forged = sealFor(carol, bob, 'same id', { message_id: e.header.message_id });
    const before = await inStream(bob);
    expect(await send(carol, [fresh, forged])).toMatchObject({ status: 409, body: { error: 'message_id_conflict' } });
    const rows = await pending(bob);
    expect(rows.filter((r) => r.message_id === fresh.header.message_id)).toEqual([]);
    expect(rows.filter((r) => r.message_id === e.header.message_id).map((r) => r.sender)).toEqual([alice.number]);
    // what the refused request published is out of the stream too (a named source reads the stream)
    expect(await inStream(bob)).toBe(before);
    // and carol's retry of the fresh one alone, inside JetStream's deduplication window (which
    // answers with the deleted copy's sequence), is accepted and delivered
    expect((await send(carol, [fresh])).body.results?.[0]?.status).toBe('accepted');
    expect((await pending(bob)).filter((r) => r.message_id === fresh.header.message_id)).toHaveLength(1);
    expect(await inStream(bob)).toBe(before + 1);
  });

  it('a refused request never deletes the copy a concurrent retry by the same sender records', async () => {
    // carol holds an id; alice's batch carrying it is refused while alice retries the batch's other envelope
    const taken = sealFor(carol, bob, 'carol holds this id');
    expect((await send(carol, [taken])).status).toBe(202);
    const raced: string[] = [];
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        const x = sealFor(alice, bob, 'raced');
        const clash = sealFor(alice, bob, 'clash', { message_id: taken.header.message_id });
        raced.push(x.header.message_id);
        const [refused, retried] = await Promise.all([
          send(alice, [x, clash]),
          new Promise((r) => setTimeout(r, Math.random() * 4)).then(() => send(alice, [x])),
        ]);
        expect(refused.status).toBe(409);
        expect(retried.body.results?.[0]?.status).toBe('accepted');
      }),
    );
    const rows: Array<{ message_id: string; cursor: number }> = [];
    for (let after = 0; ; ) {
      const page = await call<{ envelopes: Array<{ message_id: string; cursor: number }>; more: boolean }>(
        relay.url,
        'GET',
        `/api/v1/messages/pending?limit=100&after=${after}`,
        undefined,
        bob.auth,
      );
      rows.push(...page.body.envelopes.filter((e) => raced.includes(e.message_id)));
      after = page.body.envelopes.at(-1)?.cursor ?? after;
      if (!page.body.more) break;
    }
    expect(rows.map((r) => r.message_id).sort()).toEqual([...raced].sort());
    // each recorded envelope's copy is in the stream (pending answers from the relay's
    // memory of recent envelopes, which would hide a deleted copy)
    const missing: number[] = [];
    for (const r of rows) {
      const there = await jsm.streams.getMessage('SVC_MSGS', { seq: r.cursor }).then(
        (m) => m !== null,
        () => false,
      );
      if (!there) missing.push(r.cursor);
    }
    expect(missing).toEqual([]);
  });

  it('the same id twice in one request: the second is a duplicate of the first', async () => {
    const e = sealFor(alice, bob, 'twice');
    expect((await send(alice, [e, e])).body.results?.map((r) => r.status)).toEqual(['accepted', 'duplicate']);
  });
});

/**
 * The relay keeps the envelopes it just accepted in memory only for recipients whose reader
 * reads or waits on this relay (or did within the grace period): those are read in a
 * moment. Seen from outside: an envelope whose stream copy is gone is still served from
 * memory when it was kept, and is missing (read from the stream, where it no longer is)
 * when not.
 */
describe('envelopes kept in memory', () => {
  const pendingIds = async (who: TestAgent, wait = 0) =>
    (
      await call<{ envelopes: Array<{ message_id: string }> }>(
        relay.url,
        'GET',
        `/api/v1/messages/pending?limit=100&wait=${wait}`,
        undefined,
        who.auth,
      )
    ).body.envelopes.map((e) => e.message_id);

  /** Sends one envelope, then deletes its copy from the stream behind the relay's back. */
  async function sendAndDropCopy(to: TestAgent): Promise<string> {
    const e = sealFor(alice, to, 'hello');
    expect((await send(alice, [e])).body.results?.[0]?.status).toBe('accepted');
    const copy = await jsm.streams.getMessage('SVC_MSGS', { last_by_subj: `msg.${to.number}` });
    expect(copy).not.toBeNull();
    await jsm.streams.deleteMessage('SVC_MSGS', copy?.seq as number);
    return e.header.message_id;
  }

  it('are not kept for a recipient nobody follows: its reader later gets them from the stream', async () => {
    const dave = await relay.enroll('dave');
    const id = await sendAndDropCopy(dave);
    expect(await pendingIds(dave)).not.toContain(id);
  });

  it('are kept for a recipient whose reader just read its inbox here', async () => {
    const erin = await relay.enroll('erin');
    expect(await pendingIds(erin)).toEqual([]); // a read that found nothing, without waiting
    const id = await sendAndDropCopy(erin);
    expect(await pendingIds(erin)).toContain(id);
  });

  it('are kept for a recipient whose reader just waited here', async () => {
    const frank = await relay.enroll('frank');
    expect(await pendingIds(frank, 1)).toEqual([]); // a long-poll that found nothing
    const id = await sendAndDropCopy(frank);
    expect(await pendingIds(frank)).toContain(id);
  });
});

describe('a send to a recipient that blocked the sender', () => {
  it('is accepted and dropped, its id taken: a retry is a duplicate, before and after an unblock', async () => {
    const [gina, hal, ivy] = await Promise.all([relay.enroll('gina'), relay.enroll('hal'), relay.enroll('ivy')]);
    const block = (method: 'POST' | 'DELETE') =>
      call(relay.url, method, `/api/v1/agents/${hal.number}/block`, undefined, gina.auth);
    expect((await block('POST')).status).toBe(200);
    const e = sealFor(hal, gina, 'blocked');
    const other = sealFor(hal, ivy, 'to ivy, in the same request');
    const before = await inStream(gina);
    expect((await send(hal, [e, other])).body.results?.map((r) => r.status)).toEqual(['accepted', 'accepted']);
    // the retry answers as it would for any recipient (it used to say accepted again)
    expect((await send(hal, [e, other])).body.results?.map((r) => r.status)).toEqual(['duplicate', 'duplicate']);
    expect((await send(hal, [e])).body.results?.map((r) => r.status)).toEqual(['duplicate']);
    expect(await pending(gina)).toEqual([]);
    expect(await inStream(gina)).toBe(before);
    // the id is taken, as any recorded one
    const forged = sealFor(ivy, gina, 'same id', { message_id: e.header.message_id });
    expect(await send(ivy, [forged])).toMatchObject({ status: 409, body: { error: 'message_id_conflict' } });
    // unblocked: the dropped envelope is not delivered by a resend; a new one is
    expect((await block('DELETE')).status).toBe(204);
    expect((await send(hal, [e])).body.results?.map((r) => r.status)).toEqual(['duplicate']);
    const next = sealFor(hal, gina, 'after the unblock');
    expect((await send(hal, [next])).body.results?.map((r) => r.status)).toEqual(['accepted']);
    expect((await pending(gina)).map((r) => r.message_id)).toEqual([next.header.message_id]);
    expect(await inStream(gina)).toBe(before + 1);
  });
});
