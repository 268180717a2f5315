/**
 * Webhooks while the agent's daemon runs: the daemon acknowledges each envelope within
 * milliseconds, and the endpoint must still get every inbound message (the first attempt
 * always goes out; only retries stop once acknowledged). A muted sender's messages raise
 * no webhook. A real relay process and a real local https receiver.
 */
import { call, enrollAgent, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { grantCode, type RelayProcess, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerReader } from './helpers/ledger-reader.js';
import { finalDelivery, hitEvent, startWebhookReceiver, type WebhookReceiver } from './helpers/webhooks.js';

let relay: RelayProcess;
let receiver: WebhookReceiver;
const agents: Record<string, TestAgent> = {};
const a = (name: string) => agents[name] as TestAgent;
const ledger = ledgerReader(() => relay.dataDir);
const finalRow = (messageId: string) => finalDelivery(ledger, messageId);
const eventsOn = (path: string) => receiver.hits.filter((h) => h.path === path).map(hitEvent);

/** Sends and acknowledges at once, as a running daemon does. */
async function sendAndAck(from: TestAgent, to: TestAgent, text: string): Promise<string> {
  const envelope = sealFor(from, to, text);
  const id = envelope.header.message_id;
  expect((await call(relay.url, 'POST', '/api/v1/messages', { envelopes: [envelope] }, from.auth)).status).toBe(202);
  const acked = await call(relay.url, 'POST', `/api/v1/messages/${id}/ack`, undefined, to.auth);
  expect(acked.status).toBe(200);
  return id;
}

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  relay = await spawnRelay({
    env: { SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS: '1', SVC_RELAY_WEBHOOK_CA_FILE: receiver.caFile },
  });
  for (const name of ['alice', 'bob', 'carol', 'dave'])
    agents[name] = await enrollAgent(relay.url, await grantCode(relay, name));
  for (const name of ['bob', 'carol', 'dave']) {
    const res = await call(
      relay.url,
      'PATCH',
      '/api/v1/agents/me',
      { endpoint_url: `${receiver.url}/${name}` },
      a(name).auth,
    );
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  }
}, 90_000);

afterAll(async () => {
  await ledger.close();
  await relay?.stop();
  await receiver?.close();
});

describe('webhooks for an agent whose daemon acknowledges at once', () => {
  it('the first attempt goes out although the envelope was acknowledged; its stream copy is gone after', async () => {
    const id = await sendAndAck(a('alice'), a('bob'), 'acked before the webhook');
    expect(await finalRow(id)).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(eventsOn('/bob').map((e) => e.message_id)).toEqual([id]);
    // the envelope is no longer pending for pull, acknowledged as it was
    const pending = await call<{ envelopes: unknown[] }>(
      relay.url,
      'GET',
      '/api/v1/messages/pending',
      undefined,
      a('bob').auth,
    );
    expect(pending.body.envelopes).toEqual([]);
  });

  it('a failed first attempt is not retried once the envelope is acknowledged', async () => {
    receiver.script.set('/carol', [503]);
    const id = await sendAndAck(a('alice'), a('carol'), 'fails once');
    const row = await finalRow(id);
    expect(row).toMatchObject({ state: 'cancelled', attempts: 1 });
    // the acknowledgement lands after the failed attempt ends (cancelled then) or while
    // its retry waits (cancelled at the retry's turn): either way, no second attempt
    expect(row.last_error).toMatch(/acknowledged(, not retried|; no more retries)$/);
    expect(eventsOn('/carol')).toHaveLength(1);
  });

  it("a muted sender's messages raise no webhook", async () => {
    expect((await call(relay.url, 'POST', '/api/v1/agents/alice/mute', undefined, a('dave').auth)).status).toBe(200);
    const id = await sendAndAck(a('alice'), a('dave'), 'quietly');
    expect(await finalRow(id)).toMatchObject({
      state: 'cancelled',
      attempts: 0,
      last_error: 'the recipient muted the sender',
    });
    expect(eventsOn('/dave')).toEqual([]);
  });
});
