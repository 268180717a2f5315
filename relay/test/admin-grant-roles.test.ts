/**
 * POST /api/v1/admin/enrollment/grants needs the scope enrollment:grant and a role of
 * admin or automation: real oidc-provider tokens that carry the scope on another role
 * are refused, and nothing is stored.
 */
import { GRANT_SCHEMA_VERSION } from '@svc/shared';
import { type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { startTestAuthority, type TestAuthority, type TestTokenKind } from '@svc/test-harness/oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const DEPLOYMENT = 'dep-grant-roles';
let authority: TestAuthority;
let relay: InProcessRelay;

beforeAll(async () => {
  authority = await startTestAuthority({ deploymentId: DEPLOYMENT, tenants: ['acme'] });
  relay = await inProcessRelay({
    tenants: ['acme'],
    deploymentId: DEPLOYMENT,
    authority: {
      issuer: authority.issuer,
      audience: authority.audience,
      clientId: authority.clientId,
      caPem: authority.caPem,
    },
  });
});

afterAll(async () => {
  await relay?.close();
  await authority?.close();
});

const grantCount = async (): Promise<number> =>
  ((await relay.ctx.ledger.sql.get<{ n: number }>('SELECT count(*) AS n FROM grants')) as { n: number }).n;

async function mint(token: string) {
  const res = await relay.app.inject({
    method: 'POST',
    url: '/api/v1/admin/enrollment/grants',
    headers: { authorization: `Bearer ${token}` },
    payload: {
      schema_version: GRANT_SCHEMA_VERSION,
      deployment_id: DEPLOYMENT,
      tenant_id: 'acme',
      agent_id: 'agent-1',
      capabilities: ['http-relay'],
      ttl_seconds: 3600,
    },
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

describe('grant route roles', () => {
  it.each<[string, TestTokenKind, unknown]>([
    ['an auditor token carrying enrollment:grant', 'auditor', ['auditor']],
    ['a member token carrying enrollment:grant', 'member', ['member']],
    ['a token of roles auditor and member carrying enrollment:grant', 'admin', ['auditor', 'member']],
  ])('%s → 403 insufficient_role, no grant stored', async (_name, kind, roles) => {
    const before = await grantCount();
    const token = await authority.token(kind, { scope: 'enrollment:grant', roles });
    const res = await mint(token);
    expect(res).toEqual({ status: 403, body: { error: 'insufficient_role', message: expect.any(String) } });
    expect(await grantCount()).toBe(before);
  });

  it.each<[TestTokenKind, unknown]>([
    ['admin', ['admin']],
    ['automation', ['automation']],
    ['admin', ['auditor', 'admin']],
  ])('a token of kind %s, roles %j, with the scope mints', async (kind, roles) => {
    const res = await mint(await authority.token(kind, { scope: 'enrollment:grant', roles }));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });
});
