/**
 * POST /api/v1/admin/enrollment/grants against a real oidc-provider over https:
 * one test for each token rule and each request rule, and the roles that may mint (the
 * scope enrollment:grant on a role other than admin or automation is refused, nothing stored).
 */
import { GRANT_SCHEMA_VERSION, GRANT_TTL, parseEnrollmentCode } from '@svc/shared';
import { type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { startTestAuthority, type TestAuthority, type TestTokenKind } from '@svc/test-harness/oidc-provider';
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const DEPLOYMENT = 'dep-grants-test';
const TENANTS = ['acme', 'globex'];
let authority: TestAuthority;
let relay: InProcessRelay;

beforeAll(async () => {
  authority = await startTestAuthority({ deploymentId: DEPLOYMENT, tenants: TENANTS });
  relay = await inProcessRelay({
    tenants: TENANTS,
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

function request(overrides: Record<string, unknown> = {}) {
  return {
    schema_version: GRANT_SCHEMA_VERSION,
    deployment_id: DEPLOYMENT,
    tenant_id: 'acme',
    agent_id: 'agent-1',
    capabilities: ['http-relay'],
    ttl_seconds: 3600,
    ...overrides,
  };
}

async function mint(token: string | undefined, body: unknown = request()) {
  const res = await relay.app.inject({
    method: 'POST',
    url: '/api/v1/admin/enrollment/grants',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    payload: body as Record<string, unknown>,
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

async function expectRefused(token: string | undefined, status: number, code: string, body?: unknown) {
  const before = await grantCount();
  const res = await mint(token, body);
  expect(res.status).toBe(status);
  expect(res.body.error).toBe(code);
  expect(typeof res.body.message).toBe('string');
  expect(await grantCount()).toBe(before); // nothing persisted on any refusal
}

describe('happy paths', () => {
  it('admin mints a grant; the code carries the bindings and is signed by the relay key', async () => {
    const res = await mint(await authority.token('admin'), request({ agent_id: 'alice' }));
    expect(res.status).toBe(201);
    expect(res.body.capabilities).toEqual(['http-relay']);
    const code = parseEnrollmentCode(res.body.enrollment_code as string);
    expect(code.bindings).toMatchObject({
      deployment_id: DEPLOYMENT,
      tenant_id: 'acme',
      agent_id: 'alice',
      agent_number: 'alice',
      capabilities: ['http-relay'],
    });
    expect(code.kid).toBe(relay.ctx.deployment.relayKey.kid);
    const row = await relay.ctx.ledger.getGrant(code.bindings.grant_id);
    expect(row?.created_by).toMatch(/^oidc:/);
    expect(Date.parse(code.bindings.expires_at) - Date.now()).toBeGreaterThan(3500_000);
  });

  it('automation mints a nats-relay grant for an uplink identity, never one that adds it to an agent', async () => {
    const token = await authority.token('automation');
    const res = await mint(token, request({ agent_id: 'uplink', capabilities: ['nats-relay'] }));
    expect(res.status).toBe(201);
    expect(res.body.capabilities).toEqual(['nats-relay']);
    const both = await mint(token, request({ agent_id: 'uplink-2', capabilities: ['nats-relay', 'http-relay'] }));
    expect(both.status).toBe(400);
    expect(both.body).toEqual({
      error: 'validation_failed',
      message: expect.stringMatching(/^nats-relay is for a dedicated/),
    });
  });

  it('ttl_seconds defaults to one day when omitted', async () => {
    const body = request({ agent_id: 'ttl-default' });
    delete (body as Record<string, unknown>).ttl_seconds;
    const res = await mint(await authority.token('admin'), body);
    expect(res.status).toBe(201);
    const exp = Date.parse(res.body.expires_at as string);
    expect(Math.abs(exp - Date.now() - GRANT_TTL.default * 1000)).toBeLessThan(60_000);
  });

  it('publishes the route in the generated OpenAPI document', async () => {
    const res = await relay.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    const doc = res.json() as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
    expect(doc.paths['/api/v1/admin/enrollment/grants']?.post?.requestBody).toBeDefined();
    expect(doc.paths['/api/v1/enrollment']?.post).toBeDefined();
    expect(doc.paths['/api/v1/auth/token']?.post).toBeDefined();
  });
});

describe('token rules', () => {
  it('no token → 401 missing_token', () => expectRefused(undefined, 401, 'missing_token'));

  it('auditor cannot mint (no enrollment:grant) → 403 insufficient_scope', async () =>
    expectRefused(await authority.token('auditor'), 403, 'insufficient_scope'));

  it('member cannot mint → 403 insufficient_scope', async () =>
    expectRefused(await authority.token('member'), 403, 'insufficient_scope'));

  it('admin token without the scope → 403 insufficient_scope', async () =>
    expectRefused(await authority.token('no-scope'), 403, 'insufficient_scope'));

  for (const alg of ['ES384', 'HS256', 'none'] as const) {
    it(`header alg ${alg} → 401 unsupported_algorithm`, async () => {
      let token: string;
      if (alg === 'none') {
        const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
        token = `${enc({ alg: 'none', typ: 'JWT' })}.${enc(authority.claims('admin'))}.`;
      } else {
        const key =
          alg === 'HS256' ? new TextEncoder().encode('x'.repeat(32)) : (await generateKeyPair('ES384')).privateKey;
        token = await new SignJWT(authority.claims('admin')).setProtectedHeader({ alg }).sign(key);
      }
      await expectRefused(token, 401, 'unsupported_algorithm');
    });
  }

  it('iss must match exactly (another issuer) → 401 invalid_token', async () =>
    expectRefused(
      await authority.sign({ ...authority.claims('admin'), iss: `${authority.issuer}/other` }),
      401,
      'invalid_token',
    ));

  it('aud as a string not equal → 401 invalid_token', async () =>
    expectRefused(await authority.token('admin', { audience: 'https://elsewhere.test/api' }), 401, 'invalid_token'));

  it('aud as an array containing the audience is accepted', async () => {
    const res = await mint(
      await authority.token('admin', { audience: ['https://other.test', authority.audience] }),
      request({ agent_id: 'aud-array' }),
    );
    expect(res.status).toBe(201);
  });

  it('aud as an array without the audience → 401 invalid_token', async () =>
    expectRefused(await authority.token('admin', { audience: ['https://other.test'] }), 401, 'invalid_token'));

  it('azp not the configured client → 401 invalid_client_id', async () =>
    expectRefused(await authority.token('wrong-azp'), 401, 'invalid_client_id'));

  it('azp missing → 401 invalid_client_id', async () =>
    expectRefused(await authority.token('admin', { azp: null }), 401, 'invalid_client_id'));

  it('svc_deployment_id of another deployment → 403 binding_mismatch', async () =>
    expectRefused(await authority.token('other-deployment'), 403, 'binding_mismatch'));

  it('svc_tenant_id not an allowed tenant → 403 binding_mismatch', async () =>
    expectRefused(await authority.token('other-tenant'), 403, 'binding_mismatch'));

  it('sub empty → 401 invalid_token', async () =>
    expectRefused(await authority.sign({ ...authority.claims('admin'), sub: '' }), 401, 'invalid_token'));

  it('roles empty → 401 invalid_roles', async () =>
    expectRefused(await authority.token('empty-roles'), 401, 'invalid_roles'));

  it('roles with an unknown name → 401 invalid_roles', async () =>
    expectRefused(await authority.token('unknown-role'), 401, 'invalid_roles'));

  it('expired token → 401 invalid_token', async () =>
    expectRefused(await authority.token('admin', { expiresIn: -120 }), 401, 'invalid_token'));

  it('signature by a key outside the authority key set → 401 invalid_token', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const token = await new SignJWT(authority.claims('admin'))
      .setProtectedHeader({ alg: 'ES256', kid: 'not-in-jwks' })
      .sign(privateKey);
    await expectRefused(token, 401, 'invalid_token');
  });
});

describe('request rules', () => {
  it('schema_version must be the constant → 400', async () =>
    expectRefused(
      await authority.token('admin'),
      400,
      'validation_failed',
      request({ schema_version: 'svc.relay.admin-enrollment-grant/v2' }),
    ));

  it('deployment_id not this relay, even with the right scope → 403 binding_mismatch', async () =>
    expectRefused(await authority.token('admin'), 403, 'binding_mismatch', request({ deployment_id: 'dep-other' })));

  it("tenant_id allowed by the relay but not the token's tenant → 403 binding_mismatch", async () =>
    expectRefused(await authority.token('admin'), 403, 'binding_mismatch', request({ tenant_id: 'globex' })));

  it('token of tenant globex mints for globex', async () => {
    const res = await mint(
      await authority.token('admin', { tenantId: 'globex' }),
      request({ tenant_id: 'globex', agent_id: 'g1' }),
    );
    expect(res.status).toBe(201);
    expect(res.body.tenant_id).toBe('globex');
  });

  it('agent_number with a forbidden character is refused before anything is persisted', async () =>
    expectRefused(await authority.token('admin'), 400, 'validation_failed', request({ agent_number: 'bad.number' })));

  it('agent_number longer than 128 is refused', async () =>
    expectRefused(
      await authority.token('admin'),
      400,
      'validation_failed',
      request({ agent_number: 'a'.repeat(129) }),
    ));

  it('agent_number of exactly 128 is accepted', async () => {
    const res = await mint(
      await authority.token('admin'),
      request({ agent_id: 'long', agent_number: 'n'.repeat(128) }),
    );
    expect(res.status).toBe(201);
  });

  it('agent_id with . or : and no agent_number is refused (it would be the number)', async () =>
    expectRefused(await authority.token('admin'), 400, 'validation_failed', request({ agent_id: 'team.bot:1' })));

  it('agent_id with . or : and a separate agent_number is accepted', async () => {
    const res = await mint(
      await authority.token('admin'),
      request({ agent_id: 'team.bot:1', agent_number: 'team-bot-1' }),
    );
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ agent_id: 'team.bot:1', agent_number: 'team-bot-1' });
  });

  it('capabilities outside http-relay / nats-relay are refused', async () =>
    expectRefused(
      await authority.token('admin'),
      400,
      'validation_failed',
      request({ capabilities: ['http-relay', 'admin'] }),
    ));

  it('empty capabilities are refused', async () =>
    expectRefused(await authority.token('admin'), 400, 'validation_failed', request({ capabilities: [] })));

  it(`ttl_seconds below ${GRANT_TTL.min} or above ${GRANT_TTL.max} is refused`, async () => {
    const token = await authority.token('admin');
    await expectRefused(token, 400, 'validation_failed', request({ ttl_seconds: GRANT_TTL.min - 1 }));
    await expectRefused(token, 400, 'validation_failed', request({ ttl_seconds: GRANT_TTL.max + 1 }));
    await expectRefused(token, 400, 'validation_failed', request({ ttl_seconds: '3600' }));
  });

  it('unknown fields and malformed JSON are refused with a code', async () => {
    const token = await authority.token('admin');
    await expectRefused(token, 400, 'validation_failed', request({ role: 'admin' }));
    const res = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/admin/enrollment/grants',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: '{"schema_version":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_json');
  });
});

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
