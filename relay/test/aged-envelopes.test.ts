/**
 * Envelopes the stream no longer holds (its max age, 30 days, ran out before the recipient
 * read them) are marked done in the ledger: they no longer hold the recipient's pending
 * quota, and a reader's page is never a page of them. Before, a recipient away for longer
 * than the stream keeps anything came back to an inbox refusing every sender (507) for
 * good, and `GET /messages/pending` answered an empty page with `more: true` behind them,
 * so a client paging by cursor stopped there. Only what lies below the stream's first
 * sequence counts as gone: a copy missing above it is left pending. A real nats-server;
 * the max age is played by purging the stream's oldest messages.
 */
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { call, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MSGS_STREAM } from '../src/bus/index.js';

interface Pending {
  envelopes: Array<{ message_id: string; cursor: number }>;
  more: boolean;
}

const send = (r: BusRelay, from: TestAgent, to: TestAgent, text: string) =>
  call<{ results?: Array<{ message_id: string }>; error?: string }>(
    r.url,
    'POST',
    '/api/v1/messages',
    { envelopes: [sealFor(from, to, text)] },
    from.auth,
  );

const pending = async (r: BusRelay, who: TestAgent, query = 'limit=100') =>
  (await call<Pending>(r.url, 'GET', `/api/v1/messages/pending?${query}`, undefined, who.auth)).body;

describe('envelopes the stream no longer holds', () => {
  let relay: BusRelay;
  let alice: TestAgent;
  let carol: TestAgent;
  let jsm: JetStreamManager;
  beforeAll(async () => {
    relay = await inProcessBusRelay({ SVC_RELAY_RECIPIENT_MAX_PENDING: '3' });
    [alice, carol] = await Promise.all([relay.enroll('alice'), relay.enroll('carol')]);
    const nc = await relay.relay.context.bus?.tenantConnection('default');
    jsm = await jetstreamManager(nc as NonNullable<typeof nc>);
  }, 60_000);
  afterAll(async () => {
    await relay?.close();
  });

  it('no longer fill a full inbox: the next send finds the room they held', async () => {
    const bob = await relay.enroll('bob');
    for (let i = 0; i < 3; i++) expect((await send(relay, alice, bob, `old ${i}`)).status).toBe(202);
    expect((await send(relay, alice, bob, 'refused while they are there')).body.error).toBe('recipient_inbox_full');
    // a month later: the stream's max age took everything it held
    await jsm.streams.purge(MSGS_STREAM);
    // (a full inbox is checked against the stream at most once a minute: the refusal above was one)
    relay.advance(61_000);
    const fresh = await send(relay, alice, bob, 'after a month away');
    expect(fresh.status).toBe(202);
    const page = await pending(relay, bob);
    expect(page.envelopes.map((e) => e.message_id)).toEqual([fresh.body.results?.[0]?.message_id]);
    // the quota still holds for what the stream holds
    for (let i = 0; i < 2; i++) expect((await send(relay, carol, bob, `new ${i}`)).status).toBe(202);
    expect((await send(relay, carol, bob, 'one too many')).body.error).toBe('recipient_inbox_full');
    expect(relay.logLines.some((l) => l.includes('past the stream age limit'))).toBe(true);
  });

  it('are marked done when read: the page goes on past them, and they free the quota', async () => {
    const dave = await relay.enroll('dave');
    const sent: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await send(relay, alice, dave, `m${i}`);
      expect(res.status).toBe(202);
      sent.push(res.body.results?.[0]?.message_id as string);
    }
    const before = await pending(relay, dave);
    expect(before.envelopes.map((e) => e.message_id)).toEqual(sent);
    // the max age takes the first two (everything below the third)
    await jsm.streams.purge(MSGS_STREAM, { seq: before.envelopes[2]?.cursor as number });
    // a page of two: both gone; the reader gets the third, not an empty page that says more
    const page = await pending(relay, dave, 'limit=2');
    expect(page).toEqual({ envelopes: [expect.objectContaining({ message_id: sent[2] })], more: false });
    // they no longer count: two more fit under the quota of 3
    for (let i = 0; i < 2; i++) expect((await send(relay, carol, dave, `more ${i}`)).status).toBe(202);
    expect((await send(relay, carol, dave, 'full')).body.error).toBe('recipient_inbox_full');
    // acknowledging one that expired says it is done, without a receipt for its sender
    const ack = await call<{ already: boolean }>(
      relay.url,
      'POST',
      `/api/v1/messages/${sent[0]}/ack`,
      undefined,
      dave.auth,
    );
    expect(ack.body.already).toBe(true);
    const receipts = await call<{ receipts: Array<{ message_id: string }> }>(
      relay.url,
      'GET',
      '/api/v1/receipts',
      undefined,
      alice.auth,
    );
    expect(receipts.body.receipts.map((r) => r.message_id)).not.toContain(sent[0]);
  });

  it('a copy missing above the stream’s first sequence is not taken for gone: its envelope stays pending', async () => {
    const erin = await relay.enroll('erin');
    const sent: string[] = [];
    for (let i = 0; i < 3; i++)
      sent.push((await send(relay, alice, erin, `e${i}`)).body.results?.[0]?.message_id as string);
    const before = await pending(relay, erin);
    // the middle one's copy goes missing (no path of the relay does this to a pending envelope)
    await jsm.streams.deleteMessage(MSGS_STREAM, before.envelopes[1]?.cursor as number, false);
    expect((await pending(relay, erin)).envelopes.map((e) => e.message_id)).toEqual([sent[0], sent[2]]);
    const row = (await relay.relay.context.ledger.activeAgent('default', 'erin'))?.id as string;
    expect((await relay.relay.context.stores.messages.find(row, sent[1] as string))?.acked_at).toBeNull();
  });
});
