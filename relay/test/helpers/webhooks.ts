/**
 * What the webhook tests stand up around a relay: a real local https receiver (its
 * certificate from a throw-away CA, written to `caFile` for SVC_RELAY_WEBHOOK_CA_FILE) that
 * records every delivery and answers as scripted, and the ledger's delivery rows (read
 * through either ledger, see ledger-reader.ts).
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import type { WebhookEvent } from '@svc/shared/node';
import { tempDir, until } from '@svc/test-harness';
import { generateTestCertificates } from '@svc/test-harness/ca';
import type { LedgerReader } from './ledger-reader.js';

export interface WebhookHit {
  path: string;
  at: number;
  raw: Buffer;
  signature: string | undefined;
  timestamp: string | undefined;
  headers: Record<string, string | string[] | undefined>;
}

/** What the receiver answers on a path, attempt by attempt (the last entry repeats); 'hang' never answers. */
export type WebhookAnswer = number | 'hang';

export interface WebhookReceiver {
  url: string;
  /** the CA of the receiver's certificate, PEM, for SVC_RELAY_WEBHOOK_CA_FILE */
  caFile: string;
  hits: WebhookHit[];
  /** answers by path; unscripted paths answer 200 */
  script: Map<string, WebhookAnswer[]>;
  close(): Promise<void>;
}

export const hitEvent = (h: WebhookHit): WebhookEvent => JSON.parse(h.raw.toString('utf8')) as WebhookEvent;

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const certs = await generateTestCertificates();
  const hits: WebhookHit[] = [];
  const script = new Map<string, WebhookAnswer[]>();
  const server: Server = createServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const n = hits.filter((h) => h.path === path).length;
      hits.push({
        path,
        at: Date.now(),
        raw: Buffer.concat(chunks),
        signature: req.headers['x-svc-signature'] as string | undefined,
        timestamp: req.headers['x-svc-timestamp'] as string | undefined,
        headers: req.headers,
      });
      const answers = script.get(path) ?? [200];
      const answer = answers[Math.min(n, answers.length - 1)] as WebhookAnswer;
      if (answer === 'hang') return; // never answers; the relay must give up after its timeout
      res.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const caFile = join(tempDir('svc-webhook-ca-'), 'ca.pem');
  writeFileSync(caFile, certs.caPem);
  return {
    url: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
    caFile,
    hits,
    script,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

export interface DeliveryRow {
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: number | null;
  next_attempt_at: number | null;
}

/** The ledger's delivery of an event (by event id or message id), read past the relay. */
export const deliveryRow = (ledger: LedgerReader, eventOrMessageId: string): Promise<DeliveryRow | undefined> =>
  ledger.get<DeliveryRow>(
    'SELECT state, attempts, last_status, last_error, last_attempt_at, next_attempt_at FROM webhook_deliveries WHERE id = ? OR message_id = ?',
    [eventOrMessageId, eventOrMessageId],
  );

/** The delivery once it is no longer pending (the receiver has seen every attempt by then). */
export const finalDelivery = (ledger: LedgerReader, eventOrMessageId: string): Promise<DeliveryRow> =>
  until(
    async () => {
      const r = await deliveryRow(ledger, eventOrMessageId);
      return r && r.state !== 'pending' ? r : undefined;
    },
    15_000,
    `the delivery of ${eventOrMessageId} to end`,
  );
