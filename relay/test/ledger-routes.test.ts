/** In-process route behaviour that needs control over the clock or the ledger. */

import { enrollmentBody, newIdentity } from '@svc/test-harness/agent-client';
import { type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintGrant } from '../src/services/grants.js';

let relay: InProcessRelay;
beforeEach(async () => {
  relay = await inProcessRelay();
});
afterEach(async () => {
  await relay.close();
});

const enroll = (body: unknown) =>
  relay.app.inject({ method: 'POST', url: '/api/v1/enrollment', payload: body as Record<string, unknown> });

describe('grant expiry', () => {
  it('an expired grant is refused with invalid_enrollment, the reason only in the log', async () => {
    const grant = await mintGrant(relay.ctx, {
      tenantId: 'default',
      agentId: 'late',
      capabilities: ['http-relay'],
      ttlSeconds: 60,
      createdBy: 'test',
    });
    const body = enrollmentBody(grant.enrollment_code, newIdentity());
    relay.advance(61_000);
    const res = await enroll({ ...body, issued_at: new Date(Date.now() + 61_000).toISOString() });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: 'invalid_enrollment', message: expect.any(String) });
    expect(relay.logLines.some((l) => l.includes('grant expired'))).toBe(true);
    expect(res.body).not.toContain('expired');
  });
});

describe('ledger outage', () => {
  it('answers 503 ledger_closed on every API route when the ledger cannot answer, and /readyz reports it', async () => {
    await relay.ctx.ledger.close();
    const routes: Array<[string, string]> = [
      ['POST', '/api/v1/enrollment'],
      ['POST', '/api/v1/auth/sign-in/challenge'],
      ['POST', '/api/v1/auth/sign-in'],
      ['POST', '/api/v1/auth/token'],
      ['POST', '/api/v1/admin/enrollment/grants'],
      ['GET', '/api/v1/agents/me'],
    ];
    for (const [method, url] of routes) {
      const res = await relay.app.inject({ method: method as 'GET', url, payload: method === 'POST' ? {} : undefined });
      expect(res.statusCode, url).toBe(503);
      expect(res.json(), url).toMatchObject({ error: 'ledger_closed' });
    }
    const ready = await relay.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().checks.ledger.ok).toBe(false);
    expect((await relay.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});

describe('bad input never crashes the server', () => {
  it('answers unknown routes, wrong methods, wrong media types and oversize bodies with codes', async () => {
    expect((await relay.app.inject({ method: 'GET', url: '/api/v1/nope' })).json()).toMatchObject({
      error: 'not_found',
    });
    const text = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/auth/token',
      headers: { 'content-type': 'application/xml' },
      payload: '<x/>',
    });
    expect(text.statusCode).toBe(415);
    expect(text.json().error).toBe('unsupported_media_type');
    const big = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/auth/token',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ x: 'y'.repeat(1024 * 1024 + 10) }),
    });
    expect(big.statusCode).toBe(413);
    expect(big.json().error).toBe('payload_too_large');
    const res = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/auth/token',
      headers: { authorization: 'Bearer svc_ak_nonsense' },
    });
    expect(res.json()).toMatchObject({ error: 'invalid_api_key' });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
