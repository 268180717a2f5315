/**
 * Webhooks while the agent's daemon runs: the daemon acknowledges each envelope within
 * milliseconds, and the endpoint must still get every inbound message (the first attempt
 * always goes out; only retries stop once acknowledged). A muted sender's messages raise
 * no webhook. A real relay process and a real local https receiver.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import type { WebhookEvent } from '@svc/shared/node';
import { tempDir, until } from '@svc/test-harness';
import { call, enrollAgent, sealFor, type TestAgent } from '@svc/test-harness/agent-client';
import { generateTestCertificates } from '@svc/test-harness/ca';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerReader } from './helpers/ledger-reader.js';

let relay: RelayProcess;
let receiver: Server;
let receiverUrl: string;
const hits: Array<{ path: string; event: WebhookEvent }> = [];
/** what the receiver answers on a path (default 200) */
const answers = new Map<string, number>();
const agents: Record<string, TestAgent> = {};
const a = (name: string) => agents[name] as TestAgent;

type Row = { state: string; attempts: number; last_error: string | null };

const ledger = ledgerReader(() => relay.dataDir);

const ledgerRow = (messageId: string): Promise<Row | undefined> =>
  ledger.get<Row>('SELECT state, attempts, last_error FROM webhook_deliveries WHERE message_id = ?', [messageId]);

const finalRow = (messageId: string) =>
  until(
    async () => {
      const r = await ledgerRow(messageId);
      return r && r.state !== 'pending' ? r : undefined;
    },
    undefined,
    `the delivery of ${messageId} to end`,
  );

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
  const certs = await generateTestCertificates();
  receiver = createServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      hits.push({ path, event: JSON.parse(Buffer.concat(chunks).toString('utf8')) as WebhookEvent });
      res.writeHead(answers.get(path) ?? 200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `https://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  const caFile = join(tempDir('svc-webhook-ca-'), 'ca.pem');
  writeFileSync(caFile, certs.caPem);
  relay = await spawnRelay({ env: { SVC_RELAY_ALLOW_PRIVATE_WEBHOOKS: '1', SVC_RELAY_WEBHOOK_CA_FILE: caFile } });
  for (const name of ['alice', 'bob', 'carol', 'dave']) {
    const g = await runRelayCli(['grant', '--agent-id', name, '--json'], relay.env);
    if (g.code !== 0) throw new Error(g.stderr);
    agents[name] = await enrollAgent(relay.url, JSON.parse(g.stdout).enrollment_code);
  }
  for (const name of ['bob', 'carol', 'dave']) {
    const res = await call(
      relay.url,
      'PATCH',
      '/api/v1/agents/me',
      { endpoint_url: `${receiverUrl}/${name}` },
      a(name).auth,
    );
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  }
}, 90_000);

afterAll(async () => {
  await ledger.close();
  await relay?.stop();
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
});

describe('webhooks for an agent whose daemon acknowledges at once', () => {
  it('the first attempt goes out although the envelope was acknowledged; its stream copy is gone after', async () => {
    const id = await sendAndAck(a('alice'), a('bob'), 'acked before the webhook');
    expect(await finalRow(id)).toMatchObject({ state: 'delivered', attempts: 1 });
    expect(hits.filter((h) => h.path === '/bob').map((h) => h.event.message_id)).toEqual([id]);
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
    answers.set('/carol', 503);
    const id = await sendAndAck(a('alice'), a('carol'), 'fails once');
    const row = await finalRow(id);
    expect(row).toMatchObject({ state: 'cancelled', attempts: 1 });
    expect(row.last_error).toMatch(/acknowledged, not retried/);
    expect(hits.filter((h) => h.path === '/carol')).toHaveLength(1);
  });

  it("a muted sender's messages raise no webhook", async () => {
    expect((await call(relay.url, 'POST', '/api/v1/agents/alice/mute', undefined, a('dave').auth)).status).toBe(200);
    const id = await sendAndAck(a('alice'), a('dave'), 'quietly');
    expect(await finalRow(id)).toMatchObject({
      state: 'cancelled',
      attempts: 0,
      last_error: 'the recipient muted the sender',
    });
    expect(hits.filter((h) => h.path === '/dave')).toEqual([]);
  });
});
