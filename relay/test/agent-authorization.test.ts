/**
 * Agent routes: a token is bound to the incarnation (ledger row) it was issued to, so a
 * token from before a revocation and re-enrollment is refused at once, whatever its age
 * and even when the relay has it in its verified-token cache; and every agent route
 * needs the grant's http-relay capability.
 */
import type { Capability } from '@svc/shared';
import { enrollmentBody, newIdentity } from '@svc/test-harness/agent-client';
import { type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { SignJWT } from 'jose';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintGrant } from '../src/services/grants.js';

const DEPLOYMENT = 'dep-agent-authorization';
let relay: InProcessRelay;
beforeEach(async () => {
  relay = await inProcessRelay({ tenants: ['acme'], deploymentId: DEPLOYMENT });
});
afterEach(async () => {
  await relay.close();
});

/** Enrolls `agentId` with a grant of exactly `capabilities`; returns its access token. */
async function enrollWith(agentId: string, capabilities: Capability[]): Promise<string> {
  const grant = await mintGrant(relay.ctx, { tenantId: 'acme', agentId, capabilities, createdBy: 'test' });
  const res = await relay.app.inject({
    method: 'POST',
    url: '/api/v1/enrollment',
    payload: enrollmentBody(grant.enrollment_code, newIdentity()),
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().access_token as string;
}

const me = (token: string) => relay.api(token, 'GET', '/api/v1/agents/me');

/** What `svc-relay agent revoke` does to the ledger, plus the bus cleanup (there is no bus in process). */
async function revoke(agentId: string): Promise<void> {
  const row = await relay.ctx.ledger.revokeAgent('acme', agentId, relay.ctx.now());
  expect(row).toBeDefined();
  await relay.ctx.ledger.markCleanupDone(row?.id as string);
}

describe('revocation', () => {
  it('a token of the earlier incarnation is refused right after re-enrollment, in the same millisecond', async () => {
    const old = await enrollWith('alice', ['http-relay']);
    expect((await me(old)).statusCode).toBe(200); // now in the verified-token cache
    await revoke('alice');
    expect((await me(old)).statusCode).toBe(401);
    const fresh = await enrollWith('alice', ['http-relay']);
    const res = await me(old);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'invalid_token', message: expect.any(String) });
    expect((await me(fresh)).statusCode).toBe(200);
  });

  it('a token minted after the re-enrollment time, but for the earlier incarnation, is refused', async () => {
    const old = await enrollWith('bob', ['http-relay']);
    const oldRow = (await relay.ctx.ledger.activeAgent('acme', 'bob'))?.id as string;
    await revoke('bob');
    await enrollWith('bob', ['http-relay']);
    // signed by the relay key with every claim right except the incarnation
    const claims = JSON.parse(Buffer.from(old.split('.')[1] as string, 'base64url').toString());
    const later = Math.floor(relay.ctx.now() / 1000) + 60;
    const forged = await new SignJWT({ ...claims, iat: later, exp: later + 600, svc_incarnation_id: oldRow })
      .setProtectedHeader({ alg: 'EdDSA', kid: relay.ctx.deployment.relayKey.kid, typ: 'at+jwt' })
      .sign(relay.ctx.deployment.relayKey.privateKey);
    expect((await me(forged)).statusCode).toBe(401);
  });

  it('a token without an incarnation claim is refused', async () => {
    const token = await enrollWith('carol', ['http-relay']);
    const { svc_incarnation_id: _dropped, ...claims } = JSON.parse(
      Buffer.from(token.split('.')[1] as string, 'base64url').toString(),
    );
    const legacy = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'EdDSA', kid: relay.ctx.deployment.relayKey.kid, typ: 'at+jwt' })
      .sign(relay.ctx.deployment.relayKey.privateKey);
    expect((await me(legacy)).statusCode).toBe(401);
    expect((await me(token)).statusCode).toBe(200);
  });
});

describe('capabilities', () => {
  // The message routes need the bus: agent-authorization-process.test.ts covers them.
  it('an identity whose grant holds only nats-relay can use no agent route', async () => {
    const token = await enrollWith('uplink', ['nats-relay']);
    const calls: Array<[Parameters<InProcessRelay['api']>[1], string, unknown?]> = [
      ['GET', '/api/v1/agents/me'],
      ['PATCH', '/api/v1/agents/me', { display_name: 'x' }],
      ['GET', '/api/v1/agents/me/keys'],
      ['GET', '/api/v1/contacts'],
    ];
    for (const [method, url, payload] of calls) {
      const res = await relay.api(token, method, url, payload);
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json()).toEqual({ error: 'capability_required', message: expect.any(String) });
    }
  });

  it('an http-relay identity uses them', async () => {
    expect((await me(await enrollWith('plain', ['http-relay']))).statusCode).toBe(200);
  });

  it('no grant adds nats-relay to an agent', async () => {
    await expect(
      mintGrant(relay.ctx, {
        tenantId: 'acme',
        agentId: 'both',
        capabilities: ['http-relay', 'nats-relay'],
        createdBy: 't',
      }),
    ).rejects.toMatchObject({ code: 'validation_failed' });
  });
});
