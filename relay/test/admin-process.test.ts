/**
 * The administrator grant flow end to end: a real oidc-provider over https (CA file
 * given through SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE), a real relay process, and the
 * code it returns redeemed by a new agent.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GRANT_SCHEMA_VERSION } from '@svc/shared';
import { tempDir } from '@svc/test-harness';
import { call, enrollmentBody, newIdentity } from '@svc/test-harness/agent-client';
import { startTestAuthority, type TestAuthority } from '@svc/test-harness/oidc-provider';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, expect, it } from 'vitest';

const DEPLOYMENT = 'dep-admin-process';
let authority: TestAuthority;
let relay: RelayProcess;

beforeAll(async () => {
  authority = await startTestAuthority({ deploymentId: DEPLOYMENT, tenants: ['acme'] });
  const dataDir = tempDir();
  const caFile = join(dataDir, 'authority-ca.pem');
  writeFileSync(caFile, authority.caPem);
  const env = {
    SVC_RELAY_DATA_DIR: dataDir,
    SVC_RELAY_DEPLOYMENT_ID: DEPLOYMENT,
    SVC_RELAY_TENANTS: 'acme',
    SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: authority.issuer,
    SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: authority.audience,
    SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID: authority.clientId,
    SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE: caFile,
  };
  expect((await runRelayCli(['deployment', 'init'], env)).code).toBe(0);
  relay = await spawnRelay({ dataDir, env, init: false });
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await authority?.close();
});

const mint = async (token: string, agentId: string) =>
  call<Record<string, string>>(
    relay.url,
    'POST',
    '/api/v1/admin/enrollment/grants',
    {
      schema_version: GRANT_SCHEMA_VERSION,
      deployment_id: DEPLOYMENT,
      tenant_id: 'acme',
      agent_id: agentId,
      ttl_seconds: 600,
      capabilities: ['http-relay'],
    },
    { authorization: `Bearer ${token}` },
  );

it('an admin token mints a grant whose code a new agent redeems', async () => {
  const res = await mint(await authority.token('admin'), 'ops-bot');
  expect(res.status).toBe(201);
  const enrolled = await call(
    relay.url,
    'POST',
    '/api/v1/enrollment',
    enrollmentBody(res.body.enrollment_code as string, newIdentity()),
  );
  expect(enrolled.status).toBe(201);
  expect(enrolled.body).toMatchObject({ agent_id: 'ops-bot', tenant_id: 'acme', deployment_id: DEPLOYMENT });
});

it('an automation token mints; auditor and member tokens are refused', async () => {
  expect((await mint(await authority.token('automation'), 'ci-bot')).status).toBe(201);
  expect(await mint(await authority.token('auditor'), 'x')).toMatchObject({
    status: 403,
    body: { error: 'insufficient_scope' },
  });
  expect(await mint(await authority.token('member'), 'y')).toMatchObject({
    status: 403,
    body: { error: 'insufficient_scope' },
  });
});
