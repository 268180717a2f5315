/**
 * Signed webhooks: the relay signs with `signWebhook`, receivers check with
 * `verifyWebhook` and drop repeats with a `WebhookDeduper`.
 *
 * The contract (docs/webhooks.md): `X-Svc-Signature: sha256=<64 hex>` is the HMAC-SHA256
 * of the raw body bytes keyed by the webhook secret (the 64 hex characters as ASCII);
 * `X-Svc-Timestamp` is Unix seconds at signing, accepted within ±5 minutes.
 * Verify the bytes exactly as received, before parsing; never re-serialize.
 *
 * The HMAC covers the body only (the specification says so), so the timestamp header
 * alone cannot stop a replay: the event `id` is inside the signed body, and the
 * deduper (idempotency on `id`) is what turns a replayed delivery into a harmless repeat.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const WEBHOOK_SIGNATURE_HEADER = 'x-svc-signature';
export const WEBHOOK_TIMESTAMP_HEADER = 'x-svc-timestamp';
export const WEBHOOK_EVENT_MESSAGE_RECEIVED = 'message.received';
/** The replay window on X-Svc-Timestamp, both directions. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/** The body of a `message.received` delivery. `envelope` is the sealed envelope, unread by the relay. */
export interface WebhookEvent {
  event: string;
  /** the event id (`evt_…`); the same on every attempt of one delivery: the idempotency key */
  id: string;
  message_id: string;
  /** the recipient agent's id */
  agent_id: string;
  /** when the relay accepted the envelope (RFC 3339) */
  received_at: string;
  envelope: unknown;
}

export type WebhookFailureCode =
  | 'missing_signature'
  | 'malformed_signature'
  | 'missing_timestamp'
  | 'malformed_timestamp'
  | 'stale_timestamp'
  | 'bad_signature'
  | 'malformed_body';

export type WebhookVerifyResult =
  | { ok: true; event: WebhookEvent }
  | { ok: false; code: WebhookFailureCode; message: string };

const MESSAGES: Record<WebhookFailureCode, string> = {
  missing_signature: 'the X-Svc-Signature header is missing',
  malformed_signature: 'X-Svc-Signature is not "sha256=" followed by 64 hex characters',
  missing_timestamp: 'the X-Svc-Timestamp header is missing',
  malformed_timestamp: 'X-Svc-Timestamp is not a Unix time in seconds',
  stale_timestamp: 'X-Svc-Timestamp is outside the replay window',
  bad_signature: 'the signature does not match the body and secret',
  malformed_body: 'the signed body is not a webhook event',
};

/** The HTTP status a receiver should answer a refusal with (a 4xx is not retried by the relay). */
export function webhookFailureStatus(code: WebhookFailureCode): 400 | 401 {
  return code === 'malformed_body' ? 400 : 401;
}

type Bytes = Uint8Array | string;
const asBuffer = (b: Bytes): Buffer =>
  typeof b === 'string' ? Buffer.from(b, 'utf8') : Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** `sha256=<64 lowercase hex>`: HMAC-SHA256 of the raw body bytes keyed by the secret. */
export function webhookSignature(secret: string, rawBody: Bytes): string {
  return `sha256=${createHmac('sha256', secret).update(asBuffer(rawBody)).digest('hex')}`;
}

/** The two headers for a delivery of these exact bytes; `timestamp` in Unix seconds. */
export function signWebhook(
  secret: string,
  rawBody: Bytes,
  timestamp: number = Math.floor(Date.now() / 1000),
): { 'X-Svc-Signature': string; 'X-Svc-Timestamp': string } {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) throw new RangeError('timestamp must be Unix seconds');
  return { 'X-Svc-Signature': webhookSignature(secret, rawBody), 'X-Svc-Timestamp': String(timestamp) };
}

export interface VerifyWebhookOptions {
  /** the request body exactly as received */
  rawBody: Uint8Array | Buffer;
  /** the X-Svc-Signature header as Node gives it (a repeated header is refused) */
  signatureHeader: string | string[] | undefined | null;
  timestampHeader: string | string[] | undefined | null;
  secret: string;
  /** for tests: the current time in Unix seconds */
  now?: number;
  toleranceSeconds?: number;
}

const fail = (code: WebhookFailureCode): WebhookVerifyResult => ({ ok: false, code, message: MESSAGES[code] });

const single = (h: string | string[] | undefined | null): string | undefined | null =>
  Array.isArray(h) ? (h.length === 1 ? h[0] : null) : h;

/**
 * Checks headers, timestamp window and signature (in constant time) over the raw bytes,
 * then parses the body. Never throws for bad input; the result names the reason.
 */
export function verifyWebhook(opts: VerifyWebhookOptions): WebhookVerifyResult {
  const sig = single(opts.signatureHeader);
  if (sig === undefined || sig === '') return fail('missing_signature');
  const m = sig === null ? null : /^sha256=([0-9a-fA-F]{64})$/.exec(sig.trim());
  if (!m) return fail('malformed_signature');
  const ts = single(opts.timestampHeader);
  if (ts === undefined || ts === '') return fail('missing_timestamp');
  if (ts === null || !/^\d{1,15}$/.test(ts.trim())) return fail('malformed_timestamp');
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  const tolerance = opts.toleranceSeconds ?? WEBHOOK_TOLERANCE_SECONDS;
  if (Math.abs(now - Number(ts.trim())) > tolerance) return fail('stale_timestamp');

  const expected = createHmac('sha256', opts.secret).update(asBuffer(opts.rawBody)).digest();
  const given = Buffer.from((m[1] as string).toLowerCase(), 'hex');
  if (!timingSafeEqual(expected, given)) return fail('bad_signature');

  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(opts.rawBody));
  } catch {
    return fail('malformed_body');
  }
  if (!isWebhookEvent(parsed)) return fail('malformed_body');
  return { ok: true, event: parsed };
}

function isWebhookEvent(v: unknown): v is WebhookEvent {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o.event === 'string' &&
    typeof o.id === 'string' &&
    o.id !== '' &&
    typeof o.message_id === 'string' &&
    typeof o.agent_id === 'string' &&
    typeof o.received_at === 'string' &&
    'envelope' in o
  );
}

/**
 * Remembers recently handled event ids (bounded, oldest forgotten first) so a repeated
 * delivery is answered 200 without being handled twice. In memory: a receiver that must
 * stay idempotent across its own restarts keeps the ids in its own store as well.
 */
export class WebhookDeduper {
  readonly #max: number;
  readonly #seen = new Set<string>();

  constructor(maxEntries = 10_000) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError('maxEntries must be a positive integer');
    this.#max = maxEntries;
  }

  /** 'new' records the id; 'duplicate' means it was recorded before (and not forgotten). */
  check(id: string): 'new' | 'duplicate' {
    if (this.#seen.has(id)) return 'duplicate';
    this.#seen.add(id);
    if (this.#seen.size > this.#max) this.#seen.delete(this.#seen.values().next().value as string);
    return 'new';
  }

  /** Forget an id whose handling failed, so the relay's retry is handled again. */
  forget(id: string): void {
    this.#seen.delete(id);
  }

  get size(): number {
    return this.#seen.size;
  }
}
