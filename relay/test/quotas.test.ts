/**
 * An enrolled agent cannot fill the relay's disk: a recipient holds at most so many pending
 * envelopes and bytes (507 recipient_inbox_full), a tenant's streams at most so many
 * messages and bytes (507 tenant_storage_full; the stream refuses new envelopes, never drops
 * pending ones, and the account JWT backs it up), and a sender sends at most so many
 * envelopes per second (429 rate_limited with Retry-After). All settable; small values here.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { tempDir } from '@svc/test-harness';
import { call, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MSGS_STREAM } from '../src/bus/index.js';
import { DEFAULT_LIMITS } from '../src/config/config.js';

interface SendAnswer {
  results?: Array<{ status: string }>;
  error?: string;
  message?: string;
}

const sender = (relay: () => BusRelay) => (from: TestAgent, envelopes: unknown[]) =>
  call<SendAnswer>(relay().url, 'POST', '/api/v1/messages', { envelopes }, from.auth);

const pendingIds = async (r: BusRelay, who: TestAgent) =>
  (
    await call<{ envelopes: Array<{ message_id: string }> }>(
      r.url,
      'GET',
      '/api/v1/messages/pending?limit=100',
      undefined,
      who.auth,
    )
  ).body.envelopes.map((e) => e.message_id);

const BIG = 'x'.repeat(100_000); // sealed: about 134 KB

describe('per-recipient pending quota', () => {
  let relay: BusRelay;
  let alice: TestAgent;
  let bob: TestAgent;
  let carol: TestAgent;
  let dave: TestAgent;
  const send = sender(() => relay);
  beforeAll(async () => {
    relay = await inProcessBusRelay({
      SVC_RELAY_RECIPIENT_MAX_PENDING: '3',
      SVC_RELAY_RECIPIENT_MAX_PENDING_BYTES: '300000',
    });
    [alice, bob, carol, dave] = await Promise.all([
      relay.enroll('alice'),
      relay.enroll('bob'),
      relay.enroll('carol'),
      relay.enroll('dave'),
    ]);
  }, 60_000);
  afterAll(async () => {
    await relay?.close();
  });

  it('by count: the 4th pending envelope is refused with 507 from any sender; an ack frees a place', async () => {
    for (let i = 0; i < 3; i++) expect((await send(alice, [sealFor(alice, bob, `m${i}`)])).status).toBe(202);
    const full = await send(alice, [sealFor(alice, bob, 'one too many')]);
    expect(full.status).toBe(507);
    expect(full.body).toEqual({ error: 'recipient_inbox_full', message: expect.any(String) });
    expect((await send(carol, [sealFor(carol, bob, 'also refused')])).status).toBe(507);
    // others' inboxes are not affected
    expect((await send(alice, [sealFor(alice, carol, 'to carol')])).status).toBe(202);
    expect(await pendingIds(relay, bob)).toHaveLength(3);
    // a retry of an envelope already held is no new envelope
    const ids = await pendingIds(relay, bob);
    const ack = await call(relay.url, 'POST', `/api/v1/messages/${ids[0]}/ack`, undefined, bob.auth);
    expect(ack.status).toBe(200);
    // one place: a batch of two is refused whole, one goes in
    const two = await send(alice, [sealFor(alice, bob, 'a'), sealFor(alice, bob, 'b')]);
    expect(two.status).toBe(507);
    expect(await pendingIds(relay, bob)).toHaveLength(2);
    expect((await send(alice, [sealFor(alice, bob, 'fits')])).status).toBe(202);
    expect((await send(alice, [sealFor(alice, bob, 'full again')])).status).toBe(507);
  });

  it('by bytes: a recipient under the count limit is full once its pending bytes would pass the limit', async () => {
    expect((await send(alice, [sealFor(alice, dave, BIG)])).status).toBe(202);
    expect((await send(alice, [sealFor(alice, dave, BIG)])).status).toBe(202);
    const full = await send(alice, [sealFor(alice, dave, BIG)]);
    expect(full.status).toBe(507);
    expect(full.body).toMatchObject({ error: 'recipient_inbox_full' });
    expect(await pendingIds(relay, dave)).toHaveLength(2);
  });

  it('a retry into a full inbox, of envelopes it holds, is answered duplicate, not 507', async () => {
    const frank = await relay.enroll('frank');
    const batch = [sealFor(alice, frank, 'r1'), sealFor(alice, frank, 'r2'), sealFor(alice, frank, 'r3')];
    expect((await send(alice, batch)).status).toBe(202); // the inbox is full with it
    const retry = await send(alice, batch);
    expect(retry.status).toBe(202);
    expect(retry.body.results?.map((r) => r.status)).toEqual(['duplicate', 'duplicate', 'duplicate']);
    // with a new envelope in it, the retry is refused whole: the new one does not fit
    expect((await send(alice, [...batch, sealFor(alice, frank, 'r4')])).status).toBe(507);
    // another sender's envelope under a held id is a conflict, full inbox or not
    const forged = sealFor(carol, frank, 'same id', { message_id: batch[0]?.header.message_id });
    expect((await send(carol, [forged])).status).toBe(409);
    expect(await pendingIds(relay, frank)).toHaveLength(3);
  });

  it('concurrent sends cannot slip past the limit together', async () => {
    const erin = await relay.enroll('erin');
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => send(i % 2 ? alice : carol, [sealFor(i % 2 ? alice : carol, erin, `c${i}`)])),
    );
    expect(answers.filter((a) => a.status === 202)).toHaveLength(3);
    expect(answers.filter((a) => a.status === 507)).toHaveLength(5);
    expect(await pendingIds(relay, erin)).toHaveLength(3);
  });
});

describe('per-tenant stream quota', () => {
  let relay: BusRelay;
  let alice: TestAgent;
  let bob: TestAgent;
  const send = sender(() => relay);
  beforeAll(async () => {
    relay = await inProcessBusRelay({
      SVC_RELAY_TENANTS: 'acme,globex',
      SVC_RELAY_TENANT_MAX_MESSAGES: '4',
      SVC_RELAY_TENANT_MAX_BYTES: '300000',
      SVC_RELAY_RECIPIENT_MAX_PENDING: '0',
      SVC_RELAY_RECIPIENT_MAX_PENDING_BYTES: '0',
    });
    [alice, bob] = await Promise.all([relay.enroll('alice', 'acme'), relay.enroll('bob', 'acme')]);
  }, 60_000);
  afterAll(async () => {
    await relay?.close();
  });

  it('the streams and the account carry the limits; the stream refuses new messages instead of dropping old ones', async () => {
    const nc = await relay.relay.context.bus?.tenantConnection('acme');
    const jsm = await jetstreamManager(nc as NonNullable<typeof nc>);
    const cfg = (await jsm.streams.info(MSGS_STREAM)).config;
    expect(cfg).toMatchObject({ max_msgs: 4, max_bytes: 300_000, discard: 'new' });
    // both message streams, and the attachment blob store (its own quota)
    expect((await jsm.getAccountInfo()).limits.max_storage).toBe(600_000 + DEFAULT_LIMITS.tenantMaxBlobBytes);
  });

  it('by messages: 507 tenant_storage_full once the stream holds its maximum; pending envelopes are kept', async () => {
    const sent = [];
    for (let i = 0; i < 4; i++) {
      const e = sealFor(alice, bob, `t${i}`);
      expect((await send(alice, [e])).status).toBe(202);
      sent.push(e.header.message_id);
    }
    const full = await send(alice, [sealFor(alice, bob, 'no room')]);
    expect(full.status).toBe(507);
    expect(full.body).toEqual({ error: 'tenant_storage_full', message: expect.any(String) });
    expect(await pendingIds(relay, bob)).toEqual(sent);
    // acknowledged envelopes leave the stream: room again
    await call(relay.url, 'POST', `/api/v1/messages/${sent[0]}/ack`, undefined, bob.auth);
    expect((await send(alice, [sealFor(alice, bob, 'room again')])).status).toBe(202);
    for (const id of await pendingIds(relay, bob)) {
      await call(relay.url, 'POST', `/api/v1/messages/${id}/ack`, undefined, bob.auth);
    }
  });

  it('by bytes: 507 tenant_storage_full once the stream would pass its byte limit', async () => {
    expect((await send(alice, [sealFor(alice, bob, BIG)])).status).toBe(202);
    expect((await send(alice, [sealFor(alice, bob, BIG)])).status).toBe(202);
    const full = await send(alice, [sealFor(alice, bob, BIG)]);
    expect(full.status).toBe(507);
    expect(full.body).toMatchObject({ error: 'tenant_storage_full' });
  });
});

describe('per-agent send rate', () => {
  let relay: BusRelay;
  let alice: TestAgent;
  let bob: TestAgent;
  const send = sender(() => relay);
  beforeAll(async () => {
    relay = await inProcessBusRelay({ SVC_RELAY_SEND_RATE_PER_AGENT: '2', SVC_RELAY_SEND_BURST_PER_AGENT: '3' });
    [alice, bob] = await Promise.all([relay.enroll('alice'), relay.enroll('bob')]);
  }, 60_000);
  afterAll(async () => {
    await relay?.close();
  });

  it('a burst, then 429 rate_limited with Retry-After until the relay clock refills it', async () => {
    expect(
      (await send(alice, [sealFor(alice, bob, '1'), sealFor(alice, bob, '2'), sealFor(alice, bob, '3')])).status,
    ).toBe(202);
    const res = await fetch(`${relay.url}/api/v1/messages`, {
      method: 'POST',
      headers: { ...alice.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ envelopes: [sealFor(alice, bob, '4')] }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toEqual({
      error: 'rate_limited',
      message: expect.stringMatching(/2 envelopes per second/),
    });
    // another sender has its own budget
    expect((await send(bob, [sealFor(bob, alice, 'hi')])).status).toBe(202);
    relay.advance(500); // one envelope's worth at 2 per second
    expect((await send(alice, [sealFor(alice, bob, '4')])).status).toBe(202);
    expect((await send(alice, [sealFor(alice, bob, '5')])).status).toBe(429);
  });
});

describe('a tenant quota lowered below what the stream holds', () => {
  it('drops no pending envelope: the stream stays at its use and refuses new ones', async () => {
    const dataDir = tempDir('svc-relay-quota-');
    // one public URL for both runs, so the access tokens stay valid across the restart
    const settings = { SVC_RELAY_DATA_DIR: dataDir, SVC_RELAY_PUBLIC_URL: 'http://relay.test' };
    let relay = await inProcessBusRelay({ ...settings, SVC_RELAY_TENANT_MAX_MESSAGES: '10' });
    const send = sender(() => relay);
    const [alice, bob] = await Promise.all([relay.enroll('alice'), relay.enroll('bob')]);
    const sent: string[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const e = sealFor(alice, bob, `kept ${i}`);
        expect((await send(alice, [e])).status).toBe(202);
        sent.push(e.header.message_id);
      }
    } finally {
      await relay.close();
    }
    relay = await inProcessBusRelay({ ...settings, SVC_RELAY_TENANT_MAX_MESSAGES: '3' });
    try {
      expect(await pendingIds(relay, bob)).toEqual(sent);
      expect((await send(alice, [sealFor(alice, bob, 'no room')])).status).toBe(507);
      await call(relay.url, 'POST', `/api/v1/messages/${sent[0]}/ack`, undefined, bob.auth);
      expect(await pendingIds(relay, bob)).toEqual(sent.slice(1));
    } finally {
      await relay.close();
    }
  }, 60_000);
});
