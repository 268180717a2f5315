/**
 * Re-enrollment after a revoked incarnation that still holds a named source whose
 * consumer cannot be deleted (the bus is down): 503 source_cleanup_failed, and the new
 * grant is not consumed, so the same request can be retried after repair.
 */

import { enrollmentBody, newIdentity } from '@svc/test-harness/agent-client';
import { type InProcessAgent, type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintGrant } from '../src/services/grants.js';

let relay: InProcessRelay;
let bob: InProcessAgent;

beforeAll(async () => {
  relay = await inProcessRelay({ tenants: ['acme'] });
  bob = await relay.enroll('acme', 'bob');
});
afterAll(async () => relay.close());

describe('re-enrollment after a revoked incarnation with a named source', () => {
  it('answers 503 source_cleanup_failed without consuming the new grant', async () => {
    const { ctx } = relay;
    const row = await ctx.ledger.activeAgent('acme', 'bob');
    if (!row) throw new Error('bob is enrolled');
    // a source of bob's, streamed by an edge (here bob's own row stands in for the edge row)
    await ctx.stores.sources.insert({
      id: 's1',
      tenant_id: 'acme',
      agent_row: row.id,
      edge_row: row.id,
      durable: 'src_bob',
      created_at: ctx.now(),
    });
    const revoked = await relay.api(bob.token, 'POST', '/api/v1/agents/me/revoke');
    expect(revoked.json()).toMatchObject({ cleanup_pending: true });

    const grant = await mintGrant(ctx, {
      tenantId: 'acme',
      agentId: 'bob',
      capabilities: ['http-relay'],
      createdBy: 'test',
    });
    const body = enrollmentBody(grant.enrollment_code, newIdentity());
    const res = await relay.app.inject({ method: 'POST', url: '/api/v1/enrollment', payload: body });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ error: 'source_cleanup_failed' });
    expect((await ctx.ledger.getGrant(grant.grant_id))?.consumed_at).toBeNull();
    expect(await ctx.stores.sources.countForTenant('acme')).toBe(1);
  });
});
