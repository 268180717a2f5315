/**
 * The bytes and headers of one `message.received` delivery. The body is built once per
 * attempt from the ledger row and the sealed envelope exactly as stored (spliced in, not
 * re-serialized); the signature is the shared library's, so the relay and every receiver
 * using @svc/shared/node agree by construction.
 */
import { signWebhook, WEBHOOK_EVENT_MESSAGE_RECEIVED } from '@svc/shared/node';

export interface DeliveryFacts {
  /** the event id, `evt_…` */
  id: string;
  message_id: string;
  /** the recipient's agent id */
  agent_id: string;
  /** when the relay accepted the envelope, ms */
  accepted_at: number;
}

/** `{event, id, message_id, agent_id, received_at, envelope}` as UTF-8 JSON; `envelope` is the stored JSON text. */
export function deliveryBody(facts: DeliveryFacts, envelopeJson: Uint8Array): Buffer {
  const head = JSON.stringify({
    event: WEBHOOK_EVENT_MESSAGE_RECEIVED,
    id: facts.id,
    message_id: facts.message_id,
    agent_id: facts.agent_id,
    received_at: new Date(facts.accepted_at).toISOString(),
  });
  return Buffer.concat([Buffer.from(`${head.slice(0, -1)},"envelope":`, 'utf8'), envelopeJson, Buffer.from('}')]);
}

/** The request headers of one attempt: content type, signature over `body`, timestamp now. */
export function deliveryHeaders(secret: string, body: Buffer, nowMs: number): Record<string, string> {
  const signed = signWebhook(secret, body, Math.floor(nowMs / 1000));
  return { 'content-type': 'application/json', ...signed };
}
