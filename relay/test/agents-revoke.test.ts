/** POST /api/v1/agents/me/revoke in-process: an agent revokes itself like `svc-relay agent revoke` does. */

import { type InProcessAgent, type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: InProcessRelay;
let carol: InProcessAgent;
let bob: InProcessAgent;

beforeAll(async () => {
  relay = await inProcessRelay({ tenants: ['acme'] });
  carol = await relay.enroll('acme', 'carol');
  bob = await relay.enroll('acme', 'bob');
});
afterAll(async () => {
  await relay.close();
});

describe('POST /api/v1/agents/me/revoke', () => {
  it('revokes the caller: its token stops working, others no longer find it, cleanup left pending without a bus', async () => {
    const res = await relay.api(carol.token, 'POST', '/api/v1/agents/me/revoke');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      agent_id: 'carol',
      agent_number: carol.agentNumber,
      tenant_id: 'acme',
      revoked_at: expect.any(String),
      cleanup_pending: true,
    });
    expect(await relay.ctx.ledger.activeAgent('acme', 'carol')).toBeUndefined();
    expect((await relay.ctx.ledger.pendingCleanups('acme', 'carol')).map((r) => r.agent_id)).toEqual(['carol']);
    const again = await relay.api(carol.token, 'POST', '/api/v1/agents/me/revoke');
    expect(again.statusCode).toBe(401);
    expect((await relay.api(carol.token, 'GET', '/api/v1/agents/me')).statusCode).toBe(401);
    // the rest of the tenant is untouched
    expect((await relay.api(bob.token, 'GET', '/api/v1/agents/me')).statusCode).toBe(200);
  });

  it('needs an access token', async () => {
    const res = await relay.app.inject({ method: 'POST', url: '/api/v1/agents/me/revoke' });
    expect(res.statusCode).toBe(401);
  });
});
