/** The svc-relay binary: dev mode, configuration refusals, and credential expiry. */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { mintGrant } from '@svc/relay';
import { parseEnrollmentCode } from '@svc/shared';
import { tempDir } from '@svc/test-harness';
import { call, enrollmentBody, newIdentity, signInSignature } from '@svc/test-harness/agent-client';
import { inProcessRelay } from '@svc/test-harness/in-process';
import { type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { afterAll, describe, expect, it } from 'vitest';

const started: RelayProcess[] = [];
afterAll(async () => {
  await Promise.all(started.map((r) => r.stop()));
});

describe('svc-relay dev', () => {
  it('generates a deployment and a default tenant and prints a working enrollment code and register command', async () => {
    const r = await spawnRelay({ command: 'dev' });
    started.push(r);
    const out = r.stdout();
    const m = /register --enrollment-grant (svce1\.\S+)/.exec(out);
    expect(m, out).not.toBeNull();
    const code = (m as RegExpExecArray)[1] as string;
    expect(out).toContain(`--trust ${r.dataDir}/deployment/trust-bundle.json`);
    const b = parseEnrollmentCode(code).bindings;
    expect(b.tenant_id).toBe('default');
    expect(b.api_url).toBe(r.url);
    const res = await call(r.url, 'POST', '/api/v1/enrollment', enrollmentBody(code, newIdentity()));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ agent_id: b.agent_id, tenant_id: 'default', capabilities: ['http-relay'] });
  }, 60_000);
});

describe('configuration refusals at start', () => {
  const dataDir = tempDir();
  const run = (env: Record<string, string>) =>
    runRelayCli(['serve'], { SVC_RELAY_DATA_DIR: dataDir, SVC_RELAY_LISTEN: '127.0.0.1:0', ...env });

  it('refuses a non-https issuer with one clear line', async () => {
    const res = await run({
      SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: 'http://idp.example.test',
      SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: 'https://relay.example.test/api',
      SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID: 'operator-app',
    });
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toMatch(
      /^svc-relay: error: SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER must be an https URL.*\(config_invalid\)$/,
    );
  });

  it('refuses a non-https key-set URL', async () => {
    const res = await run({
      SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER: 'https://idp.example.test',
      SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL: 'http://idp.example.test/jwks',
      SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE: 'https://relay.example.test/api',
      SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID: 'operator-app',
    });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL must be an https URL');
  });

  it('a port in use: dev exits with the reason (listen_failed) and leaves no nats-server running', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const dir = tempDir();
    const pidFile = join(dir, 'nats', 'nats-server.pid');
    try {
      const port = (busy.address() as AddressInfo).port;
      const res = await runRelayCli(['dev'], { SVC_RELAY_DATA_DIR: dir, SVC_RELAY_LISTEN: `127.0.0.1:${port}` });
      expect(res.code).toBe(1);
      // the log lines before it are the relay's; the failure is the last line
      expect(res.stderr.trimEnd().split('\n').at(-1)).toBe(
        `svc-relay: error: cannot listen on 127.0.0.1:${port}: the address is already in use; stop what holds it or choose another address with --listen or SVC_RELAY_LISTEN (listen_failed)`,
      );
      // the relay stopped its nats-server, which removes the pid file
      expect(existsSync(pidFile)).toBe(false);
      // found before anything was set up: no deployment, no nats-server, no streams in the data dir
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      busy.close();
      if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGTERM');
    }
  });

  it('serve without a deployment says how to create one', async () => {
    const res = await run({});
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('svc-relay deployment init');
  });

  it('deployment init signs the leaf URL in the document (a signer moved offline never signs again)', async () => {
    const dir = tempDir('svc-relay-init-leaf-');
    const env = { SVC_RELAY_DATA_DIR: dir, SVC_RELAY_LEAF_ADVERTISE: 'hub.example:7422' };
    expect((await runRelayCli(['deployment', 'init'], env)).code).toBe(0);
    const jws = readFileSync(join(dir, 'deployment', 'document.jws'), 'utf8').trim();
    const doc = JSON.parse(Buffer.from(jws.split('.')[1] as string, 'base64url').toString('utf8'));
    expect(doc.leaf_url).toBe('nats-leaf://hub.example:7422');
    rmSync(dir, { recursive: true, force: true });
  });

  it('the grant command validates agent_number before persisting anything', async () => {
    await runRelayCli(['deployment', 'init'], { SVC_RELAY_DATA_DIR: dataDir });
    const res = await runRelayCli(['grant', '--agent-id', 'team.bot', '--json'], { SVC_RELAY_DATA_DIR: dataDir });
    // an invalid option value, as docs/operators.md says
    expect(res.code).toBe(2);
    expect(JSON.parse(res.stdout)).toMatchObject({ error: 'validation_failed' });
  });
});

describe('an expired but not revoked credential', () => {
  it('cannot exchange its API key, but signs in with a challenge and receives a fresh API key', async () => {
    // in this process, so the relay's clock moves past the key's lifetime without waiting
    const relay = await inProcessRelay({ settings: { SVC_RELAY_API_KEY_TTL_SECONDS: '1' } });
    try {
      const post = async <T = Record<string, string>>(url: string, payload?: unknown, apiKey?: string) => {
        const res = await relay.app.inject({
          method: 'POST',
          url,
          ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
          ...(apiKey === undefined ? {} : { headers: { authorization: `Bearer ${apiKey}` } }),
        });
        return { status: res.statusCode, body: res.json() as T };
      };
      const grant = await mintGrant(relay.ctx, {
        tenantId: 'default',
        agentId: 'erin',
        capabilities: ['http-relay'],
        createdBy: 'test',
      });
      const erin = newIdentity();
      const enrolled = await post('/api/v1/enrollment', enrollmentBody(grant.enrollment_code, erin));
      expect(enrolled.status).toBe(201);
      relay.advance(1001);
      const expired = await post('/api/v1/auth/token', undefined, enrolled.body.api_key);
      expect(expired).toMatchObject({ status: 401, body: { error: 'invalid_api_key' } });

      const { deployment_id, tenant_id } = enrolled.body as { deployment_id: string; tenant_id: string };
      const c = await post<{ challenge_id: string; nonce: string }>('/api/v1/auth/sign-in/challenge', {
        deployment_id,
        tenant_id,
        agent_id: 'erin',
      });
      expect(c.status).toBe(201);
      const signedIn = await post('/api/v1/auth/sign-in', {
        challenge_id: c.body.challenge_id,
        agent_id: 'erin',
        signature: signInSignature(erin, {
          challenge_id: c.body.challenge_id,
          nonce: c.body.nonce,
          agent_id: 'erin',
          deployment_id,
          tenant_id,
        }),
      });
      expect(signedIn.status).toBe(200);
      expect((await post('/api/v1/auth/token', undefined, signedIn.body.api_key)).status).toBe(200);
    } finally {
      await relay.close();
    }
  });
});
