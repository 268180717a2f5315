import * as crypto from 'node:crypto';
import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { signWebhook, verifyWebhook, WebhookDeduper, webhookFailureStatus, webhookSignature } from './webhooks.js';

vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return { ...real, timingSafeEqual: vi.fn(real.timingSafeEqual) };
});

const SECRET = 'a1'.repeat(32);
const NOW = 1_760_000_000;
// unicode, a tab, CRLF, a trailing space and key order that JSON.stringify would not reproduce
const RAW = Buffer.from(
  '{ "event":"message.received",\t"id":"evt_1", "message_id":"m1",\r\n "agent_id":"bob","received_at":"2025-01-01T00:00:00.000Z",\n  "envelope":{"note":"héllo ✓ 👋 \\u00e9"} } ',
  'utf8',
);

const verify = (over: Partial<Parameters<typeof verifyWebhook>[0]> = {}) => {
  const h = signWebhook(SECRET, RAW, NOW);
  return verifyWebhook({
    rawBody: RAW,
    signatureHeader: h['X-Svc-Signature'],
    timestampHeader: h['X-Svc-Timestamp'],
    secret: SECRET,
    now: NOW,
    ...over,
  });
};

afterEach(() => vi.mocked(crypto.timingSafeEqual).mockClear());

describe('signWebhook', () => {
  it('is sha256= and the hex HMAC-SHA256 of the raw bytes keyed by the secret', () => {
    const h = signWebhook(SECRET, RAW, NOW);
    expect(h['X-Svc-Signature']).toBe(`sha256=${createHmac('sha256', SECRET).update(RAW).digest('hex')}`);
    expect(h['X-Svc-Signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(h['X-Svc-Timestamp']).toBe(String(NOW));
    // a string body is its UTF-8 bytes
    expect(webhookSignature(SECRET, RAW.toString('utf8'))).toBe(h['X-Svc-Signature']);
  });
});

describe('verifyWebhook', () => {
  it('accepts the exact bytes (unicode, odd whitespace) and returns the parsed event', () => {
    const r = verify();
    expect(r).toEqual({ ok: true, event: JSON.parse(RAW.toString('utf8')) });
    expect(crypto.timingSafeEqual).toHaveBeenCalledTimes(1);
  });

  it('refuses the same event re-serialized, or with one byte changed', () => {
    const reserialized = Buffer.from(JSON.stringify(JSON.parse(RAW.toString('utf8'))));
    expect(verify({ rawBody: reserialized })).toMatchObject({ ok: false, code: 'bad_signature' });
    const flipped = Buffer.from(RAW);
    flipped[flipped.length - 1] = 0x0a;
    expect(verify({ rawBody: flipped })).toMatchObject({ ok: false, code: 'bad_signature' });
    expect(verify({ secret: 'b2'.repeat(32) })).toMatchObject({ ok: false, code: 'bad_signature' });
    // the comparison is the constant-time one, also when it fails
    expect(crypto.timingSafeEqual).toHaveBeenCalledTimes(3);
  });

  it('accepts upper-case hex and a Uint8Array view into a larger buffer', () => {
    const sig = signWebhook(SECRET, RAW, NOW)['X-Svc-Signature'];
    expect(verify({ signatureHeader: `sha256=${sig.slice(7).toUpperCase()}` }).ok).toBe(true);
    const big = new Uint8Array(RAW.length + 10);
    big.set(RAW, 5);
    expect(verify({ rawBody: big.subarray(5, 5 + RAW.length) }).ok).toBe(true);
  });

  it('enforces the 5-minute window on both sides', () => {
    expect(verify({ now: NOW + 300 }).ok).toBe(true);
    expect(verify({ now: NOW - 300 }).ok).toBe(true);
    expect(verify({ now: NOW + 301 })).toMatchObject({ ok: false, code: 'stale_timestamp' });
    expect(verify({ now: NOW - 301 })).toMatchObject({ ok: false, code: 'stale_timestamp' });
    expect(verify({ now: NOW + 30, toleranceSeconds: 10 })).toMatchObject({ code: 'stale_timestamp' });
    // a replay outside the window is refused before the signature is even computed
    expect(crypto.timingSafeEqual).toHaveBeenCalledTimes(2);
  });

  it('names each malformed input with its own code', () => {
    const cases: Array<[Partial<Parameters<typeof verifyWebhook>[0]>, string]> = [
      [{ signatureHeader: undefined }, 'missing_signature'],
      [{ signatureHeader: '' }, 'missing_signature'],
      [{ signatureHeader: 'sha1=abc' }, 'malformed_signature'],
      [{ signatureHeader: `sha256=${'0'.repeat(63)}` }, 'malformed_signature'],
      [{ signatureHeader: ['sha256=a', 'sha256=b'] }, 'malformed_signature'],
      [{ timestampHeader: undefined }, 'missing_timestamp'],
      [{ timestampHeader: '12.5' }, 'malformed_timestamp'],
      [{ timestampHeader: '-1' }, 'malformed_timestamp'],
      [{ signatureHeader: `sha256=${'0'.repeat(64)}` }, 'bad_signature'],
    ];
    for (const [over, code] of cases) expect(verify(over), code).toMatchObject({ ok: false, code });
    for (const body of ['not json', '[1]', '{"event":"message.received"}']) {
      const raw = Buffer.from(body);
      const h = signWebhook(SECRET, raw, NOW);
      expect(
        verifyWebhook({
          rawBody: raw,
          signatureHeader: h['X-Svc-Signature'],
          timestampHeader: h['X-Svc-Timestamp'],
          secret: SECRET,
          now: NOW,
        }),
      ).toMatchObject({ ok: false, code: 'malformed_body' });
    }
    expect(webhookFailureStatus('bad_signature')).toBe(401);
    expect(webhookFailureStatus('malformed_body')).toBe(400);
  });
});

describe('WebhookDeduper', () => {
  it('reports a repeated id as duplicate, forgets on request, and stays bounded', () => {
    const d = new WebhookDeduper(2);
    expect(d.check('evt_a')).toBe('new');
    expect(d.check('evt_a')).toBe('duplicate');
    d.forget('evt_a');
    expect(d.check('evt_a')).toBe('new');
    expect(d.check('evt_b')).toBe('new');
    expect(d.check('evt_c')).toBe('new'); // evicts evt_a, the oldest
    expect(d.size).toBe(2);
    expect(d.check('evt_b')).toBe('duplicate');
    expect(d.check('evt_a')).toBe('new');
  });
});
