/**
 * U+0000 and lone surrogates, in bodies, paths and queries, are refused with a 4xx on either
 * ledger (on PostgreSQL a NUL reached the database and answered 500, even on the
 * unauthenticated sign-in route; SQLite stored bytes that are not UTF-8): the one rule, on
 * the one relay, whichever ledger this run uses (`npm run test:relay:postgres` for the other).
 */
import { type InProcessAgent, type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdsUnstorableText } from '../src/http/storable-text.js';

let relay: InProcessRelay;
let ann: InProcessAgent;

beforeAll(async () => {
  relay = await inProcessRelay({ tenants: ['acme'] });
  ann = await relay.enroll('acme', 'ann', { displayName: 'Ann' });
});
afterAll(() => relay?.close());

/** A JSON text with `text` as a string value, escaped as JSON writes it (`\u0000`, `\ud800`). */
const jsonWith = (field: string, text: string) => `{${JSON.stringify(field)}:${JSON.stringify(text)}}`;

describe('text no ledger can store is refused before any route', () => {
  const bad = ['a\u0000b', 'a\ud800b', 'a\udc00', '\ud800', 'x'.repeat(50) + '\udfff'];
  const good = ['', 'plain', 'emoji \u{1f600} pair', 'é\u00e9', '\ud83d\ude00'];

  it('holdsUnstorableText: every bad string, at any depth and in keys; never a good one', () => {
    for (const s of bad) {
      expect(holdsUnstorableText(s), JSON.stringify(s)).toBe(true);
      expect(holdsUnstorableText({ a: [1, { b: s }] })).toBe(true);
      expect(holdsUnstorableText({ [s]: 1 })).toBe(true);
    }
    for (const s of good) expect(holdsUnstorableText({ a: [s, { [s]: s }] }), JSON.stringify(s)).toBe(false);
    expect(holdsUnstorableText(Buffer.from([0, 0xd8, 0]))).toBe(false); // bytes are not text
  });

  it('in a body: 400 validation_failed, nothing stored', async () => {
    for (const s of bad) {
      const res = await relay.app.inject({
        method: 'PATCH',
        url: '/api/v1/agents/me',
        headers: { authorization: `Bearer ${ann.token}`, 'content-type': 'application/json' },
        payload: jsonWith('display_name', s),
      });
      expect(res.statusCode, JSON.stringify(s)).toBe(400);
      expect(res.json()).toMatchObject({ error: 'validation_failed', message: expect.stringMatching(/U\+0000/) });
    }
    const me = await relay.api(ann.token, 'GET', '/api/v1/agents/me');
    expect(me.json()).toMatchObject({ display_name: 'Ann' });
    const ok = await relay.api(ann.token, 'PATCH', '/api/v1/agents/me', { display_name: 'Ann \u{1f600}' });
    expect(ok.statusCode).toBe(200);
  });

  it('on the unauthenticated routes: their own uniform refusal, never a 5xx', async () => {
    const signIn = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/auth/sign-in',
      headers: { 'content-type': 'application/json' },
      // a well-formed signature: the NUL is what must be refused (it reached the ledger)
      payload: `{"challenge_id":"chl_\\u0000","agent_id":"ann","signature":"${'A'.repeat(86)}"}`,
    });
    expect(signIn.statusCode).toBe(401);
    expect(signIn.json()).toMatchObject({ error: 'invalid_sign_in' });
    const enroll = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/enrollment',
      headers: { 'content-type': 'application/json' },
      payload: jsonWith('display_name', 'x\u0000y'),
    });
    expect(enroll.statusCode).toBe(403);
    expect(enroll.json()).toMatchObject({ error: 'invalid_enrollment' });
  });

  it('in a path or a query value: 400, never a 5xx', async () => {
    for (const url of [
      '/api/v1/agents/%00',
      '/api/v1/agents/a%00b/keys',
      '/api/v1/agents/%ED%A0%80/keys',
      '/api/v1/messages/%00/ack',
      '/api/v1/messages/pending?limit=%00',
    ]) {
      const method = url.endsWith('/ack') ? 'POST' : 'GET';
      const res = await relay.api(ann.token, method, url);
      expect(res.statusCode, url).toBeLessThan(500);
      expect(res.statusCode, url).toBeGreaterThanOrEqual(400);
    }
    const nul = await relay.api(ann.token, 'GET', '/api/v1/agents/%00');
    expect(nul.statusCode).toBe(400);
    expect(nul.json()).toMatchObject({ error: 'validation_failed', message: expect.stringMatching(/path/) });
  });
});
