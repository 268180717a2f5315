/**
 * Webhook delivery through a real relay (createRelay in this process, a real nats-server)
 * to a real local https receiver (its certificate from a throw-away CA the relay trusts
 * through SVC_RELAY_WEBHOOK_CA_FILE; SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS=1 because the
 * receiver is on 127.0.0.1): the signed body, retries and their schedule, 4xx, timeouts,
 * secret rotation, the receiver library on captured deliveries, and a relay stopped
 * between two attempts. The retry delays and the timeout are injected (RETRY_DELAYS,
 * TIMEOUT: the production schedule scaled down), so the tests assert order, counts and
 * the ledger's schedule instead of waiting on wall-clock gaps.
 */
import { createHmac } from 'node:crypto';
import { verifyWebhook, WebhookDeduper } from '@svc/shared/node';
import { freePort, tempDir, until } from '@svc/test-harness';
import { call, openFor, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { type BusRelay, inProcessBusRelay } from '@svc/test-harness/in-process-bus';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerReader } from './helpers/ledger-reader.js';
import {
  type DeliveryRow,
  deliveryRow,
  finalDelivery,
  hitEvent,
  startWebhookReceiver,
  type WebhookHit,
  type WebhookReceiver,
} from './helpers/webhooks.js';

/**
 * The production schedule is a 5 s timeout and retries after 1 s and 2 s; these keep its
 * shape. The timeout stays long enough for a first TLS request on a busy machine.
 */
const RETRY_DELAYS = [150, 300];
// Long enough that a 2xx answered on a busy machine (the full suite on two cores) is not
// taken for no answer: at 1 s a full run once counted an extra attempt.
const TIMEOUT = 3000;

let relay: BusRelay;
let relayUrl: string;
let settings: Record<string, string>;
let receiver: WebhookReceiver;
const agents: Record<string, TestAgent> = {};
const secrets: Record<string, string> = {};

const hitsOn = (path: string) => receiver.hits.filter((h) => h.path === path);

async function waitForHits(path: string, n: number, timeoutMs = 15_000): Promise<WebhookHit[]> {
  await until(() => hitsOn(path).length >= n, timeoutMs, `${n} hits on ${path} (got ${hitsOn(path).length})`);
  return hitsOn(path);
}

/** Starts the relay on the data dir (a restart passes the same settings back). */
async function startRelay(retryDelaysMs = RETRY_DELAYS): Promise<void> {
  relay = await inProcessBusRelay(settings, { webhooks: { retryDelaysMs, timeoutMs: TIMEOUT } });
  relayUrl = relay.url;
}

async function setEndpoint(who: TestAgent, url: string | null): Promise<string | undefined> {
  const res = await call<{ webhook_secret?: string; error?: string }>(
    relayUrl,
    'PATCH',
    '/api/v1/agents/me',
    { endpoint_url: url },
    who.auth,
  );
  if (res.status !== 200) throw new Error(`PATCH endpoint_url: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.webhook_secret;
}

const send = (from: TestAgent, envelopes: unknown[]) =>
  call<{ results: Array<{ status: string }> }>(relayUrl, 'POST', '/api/v1/messages', { envelopes }, from.auth);

const pendingIds = async (who: TestAgent): Promise<string[]> =>
  (
    await call<{ envelopes: Array<{ message_id: string }> }>(
      relayUrl,
      'GET',
      '/api/v1/messages/pending?limit=100',
      undefined,
      who.auth,
    )
  ).body.envelopes.map((e) => e.message_id);

const ledger = ledgerReader(() => settings.SVC_RELAY_DATA_DIR as string);
const ledgerRow = (eventOrMessageId: string) => deliveryRow(ledger, eventOrMessageId);

/** The delivery's outcome once it is no longer pending (the receiver has seen every attempt by then). */
async function outcome(eventOrMessageId: string): Promise<Pick<DeliveryRow, 'state' | 'attempts' | 'last_status'>> {
  const row = await finalDelivery(ledger, eventOrMessageId);
  return { state: row.state, attempts: row.attempts, last_status: row.last_status };
}

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  settings = {
    SVC_RELAY_DATA_DIR: tempDir('svc-relay-webhooks-'),
    SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS: '1',
    SVC_RELAY_WEBHOOK_CA_FILE: receiver.caFile,
    // a restart keeps the public URL, which issued the agents' tokens
    SVC_RELAY_LISTEN: `127.0.0.1:${await freePort()}`,
  };
  await startRelay();
  const names = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'gina', 'hank'];
  const enrolled = await Promise.all(names.map((name) => relay.enroll(name)));
  for (const [i, name] of names.entries()) agents[name] = enrolled[i] as TestAgent;
  for (const name of names.slice(1)) {
    secrets[name] = (await setEndpoint(agents[name] as TestAgent, `${receiver.url}/${name}`)) as string;
  }
}, 90_000);

afterAll(async () => {
  await ledger.close();
  await relay?.close();
  await receiver?.close();
});

const a = (name: string) => agents[name] as TestAgent;

describe('webhook delivery', () => {
  it('POSTs message.received, signed over the raw bytes, once on 2xx; the envelope stays pending for pull', async () => {
    const envelope = sealFor(a('alice'), a('bob'), 'héllo bob ✓ 👋\t \r\n  end ');
    const sentAt = Math.floor(Date.now() / 1000);
    expect((await send(a('alice'), [envelope])).status).toBe(202);
    const [hit] = await waitForHits('/bob', 1);
    expect(hit?.headers['content-type']).toBe('application/json');
    expect(hit?.signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(hit?.signature).toBe(
      `sha256=${createHmac('sha256', secrets.bob as string)
        .update(hit?.raw as Buffer)
        .digest('hex')}`,
    );
    expect(Math.abs(Number(hit?.timestamp) - sentAt)).toBeLessThanOrEqual(5);
    const verified = verifyWebhook({
      rawBody: hit?.raw as Buffer,
      signatureHeader: hit?.headers['x-svc-signature'],
      timestampHeader: hit?.headers['x-svc-timestamp'],
      secret: secrets.bob as string,
    });
    expect(verified.ok).toBe(true);
    const event = hitEvent(hit as WebhookHit);
    expect(event).toMatchObject({
      event: 'message.received',
      message_id: envelope.header.message_id,
      agent_id: a('bob').agentId,
    });
    expect(Object.keys(event).sort()).toEqual(['agent_id', 'envelope', 'event', 'id', 'message_id', 'received_at']);
    expect(event.id).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
    expect(Math.abs(Date.parse(event.received_at) / 1000 - sentAt)).toBeLessThanOrEqual(5);
    // still sealed: only bob can open it, and it opens to the exact text
    expect(event.envelope).toEqual(JSON.parse(JSON.stringify(envelope)));
    expect(openFor(a('bob'), event.envelope as typeof envelope, a('alice').keys.signPublic)).toBe(
      'héllo bob ✓ 👋\t \r\n  end ',
    );
    expect(await outcome(event.id)).toEqual({ state: 'delivered', attempts: 1, last_status: 200 });
    expect(hitsOn('/bob')).toHaveLength(1);
    expect(await pendingIds(a('bob'))).toContain(envelope.header.message_id);
  });

  it('retries 5xx after the first and then the second delay, then stops and leaves the envelope for pull', async () => {
    receiver.script.set('/carol', [503, 500, 502]);
    const envelope = sealFor(a('alice'), a('carol'), 'retry me');
    await send(a('alice'), [envelope]);
    const three = await waitForHits('/carol', 3);
    const [h1, h2, h3] = three as [WebhookHit, WebhookHit, WebhookHit];
    // each retry waits at least its delay (a busy machine only makes the gaps longer)
    expect(h2.at - h1.at).toBeGreaterThanOrEqual(RETRY_DELAYS[0] as number);
    expect(h3.at - h2.at).toBeGreaterThanOrEqual(RETRY_DELAYS[1] as number);
    // one event: the same id and the same body bytes on every attempt, each freshly signed and verifiable
    expect(new Set(three.map((h) => hitEvent(h).id)).size).toBe(1);
    expect(h2.raw.equals(h1.raw) && h3.raw.equals(h1.raw)).toBe(true);
    for (const h of three) {
      expect(
        verifyWebhook({
          rawBody: h.raw,
          signatureHeader: h.signature,
          timestampHeader: h.timestamp,
          secret: secrets.carol as string,
        }).ok,
      ).toBe(true);
    }
    expect(await outcome(hitEvent(h1).id)).toEqual({ state: 'gave_up', attempts: 3, last_status: 502 });
    expect(hitsOn('/carol')).toHaveLength(3);
    expect(await pendingIds(a('carol'))).toContain(envelope.header.message_id);
  });

  it('stops retrying at the first 2xx; 429 is retried; another 4xx is not', async () => {
    receiver.script.set('/dave', [503, 200]);
    receiver.script.set('/erin', [429, 204]);
    receiver.script.set('/frank', [400, 200]);
    const toDave = sealFor(a('alice'), a('dave'), 'one');
    const toErin = sealFor(a('alice'), a('erin'), 'two');
    const toFrank = sealFor(a('alice'), a('frank'), 'three');
    await Promise.all([send(a('alice'), [toDave]), send(a('alice'), [toErin]), send(a('alice'), [toFrank])]);
    expect(await outcome(toDave.header.message_id)).toEqual({ state: 'delivered', attempts: 2, last_status: 200 });
    expect(await outcome(toErin.header.message_id)).toEqual({ state: 'delivered', attempts: 2, last_status: 204 });
    expect(await outcome(toFrank.header.message_id)).toEqual({ state: 'gave_up', attempts: 1, last_status: 400 });
    expect(hitsOn('/dave')).toHaveLength(2);
    expect(hitsOn('/erin')).toHaveLength(2);
    expect(hitsOn('/frank')).toHaveLength(1);
    expect(await pendingIds(a('frank'))).toContain(toFrank.header.message_id);
  });

  it('treats no answer within the timeout as a failure and retries after the first delay', async () => {
    receiver.script.set('/gina', ['hang', 200]);
    const envelope = sealFor(a('alice'), a('gina'), 'slow');
    await send(a('alice'), [envelope]);
    const [h1, h2] = (await waitForHits('/gina', 2)) as [WebhookHit, WebhookHit];
    // the second attempt comes only after the first was given up on (the receiver sees the
    // first request a little after the relay started its timer, so the delay is not added)
    expect(h2.at - h1.at).toBeGreaterThanOrEqual(TIMEOUT);
    expect(await outcome(envelope.header.message_id)).toEqual({ state: 'delivered', attempts: 2, last_status: 200 });
    expect(hitsOn('/gina')).toHaveLength(2);
  });

  it('signs with the new secret after rotation; the old secret no longer verifies', async () => {
    const old = secrets.bob as string;
    expect(await setEndpoint(a('bob'), null)).toBeUndefined();
    const fresh = (await setEndpoint(a('bob'), `${receiver.url}/bob-rotated`)) as string;
    expect(fresh).toMatch(/^[0-9a-f]{64}$/);
    expect(fresh).not.toBe(old);
    await send(a('alice'), [sealFor(a('alice'), a('bob'), 'after rotation')]);
    const [hit] = (await waitForHits('/bob-rotated', 1)) as [WebhookHit];
    const check = (secret: string) =>
      verifyWebhook({ rawBody: hit.raw, signatureHeader: hit.signature, timestampHeader: hit.timestamp, secret });
    expect(check(fresh).ok).toBe(true);
    expect(check(old)).toMatchObject({ ok: false, code: 'bad_signature' });
    secrets.bobOld = old;
    secrets.bob = fresh;
  });

  it('a captured delivery replayed outside the window, or twice, is refused / reported by the receiver library', async () => {
    const [hit] = hitsOn('/bob') as [WebhookHit];
    const ts = Number(hit.timestamp);
    const replay = (now: number) =>
      verifyWebhook({
        rawBody: hit.raw,
        signatureHeader: hit.signature,
        timestampHeader: hit.timestamp,
        // the secret the capture was signed with (rotated since)
        secret: secrets.bobOld as string,
        now,
      });
    expect(replay(ts).ok).toBe(true);
    expect(replay(ts + 301)).toMatchObject({ ok: false, code: 'stale_timestamp' });
    expect(replay(ts - 301)).toMatchObject({ ok: false, code: 'stale_timestamp' });
    const dedupe = new WebhookDeduper();
    const first = verifyWebhook({
      rawBody: hitsOn('/carol')[0]?.raw as Buffer,
      signatureHeader: hitsOn('/carol')[0]?.signature,
      timestampHeader: hitsOn('/carol')[0]?.timestamp,
      secret: secrets.carol as string,
      now: Number(hitsOn('/carol')[0]?.timestamp),
    });
    expect(first.ok).toBe(true);
    const ids = hitsOn('/carol').map((h) => hitEvent(h).id);
    expect(ids.map((id) => dedupe.check(id))).toEqual(['new', 'duplicate', 'duplicate']);
  });

  it('a relay stopped between two attempts makes the next attempt after it restarts', async () => {
    // the retry an hour away, so it cannot come before the stop however busy the machine is
    const HOUR = 3_600_000;
    await relay.close();
    await startRelay([HOUR]);
    receiver.script.set('/hank', [503, 200]);
    const envelope = sealFor(a('alice'), a('hank'), 'survive a crash');
    expect((await send(a('alice'), [envelope])).status).toBe(202);
    const [first] = (await waitForHits('/hank', 1)) as [WebhookHit];
    // its outcome recorded, not only its claim (which counts it at once): a relay closed
    // before it records the outcome abandons the attempt, uncounted
    await until(
      async () => {
        const row = await ledgerRow(hitEvent(first).id);
        return row?.attempts === 1 && row.last_status === 503;
      },
      15_000,
      'the first attempt to be recorded',
    );
    await relay.close();
    const stoppedAt = Date.now();
    expect(hitsOn('/hank')).toHaveLength(1);
    await startRelay();
    relay.advance(HOUR); // the relay's clock passes the retry time
    const [, second] = (await waitForHits('/hank', 2)) as [WebhookHit, WebhookHit];
    expect(second.at).toBeGreaterThan(stoppedAt);
    expect(hitEvent(second).id).toBe(hitEvent(first).id);
    expect(second.raw.equals(first.raw)).toBe(true);
    expect(
      verifyWebhook({
        rawBody: second.raw,
        signatureHeader: second.signature,
        timestampHeader: second.timestamp,
        secret: secrets.hank as string,
        // signed at the relay's (advanced) time
        now: Math.floor((Date.now() + HOUR) / 1000),
      }).ok,
    ).toBe(true);
    expect(await outcome(hitEvent(first).id)).toEqual({ state: 'delivered', attempts: 2, last_status: 200 });
    expect(hitsOn('/hank')).toHaveLength(2);
  });
});
