/**
 * Enrollment, challenge sign-in and the token exchange against a real relay process
 * with its managed nats-server.
 */

import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Credentials, type DeploymentDocument, parseTrustBundle, verifyDeploymentDocument } from '@svc/shared';
import { freePort, processAlive, tempDir, until } from '@svc/test-harness';
import { call, enrollmentBody, newIdentity, signInSignature, type TestIdentity } from '@svc/test-harness/agent-client';
import { RELAY_BIN } from '@svc/test-harness/bins';
import { grantCode, type RelayProcess, runRelayCli, spawnRelay } from '@svc/test-harness/relay-process';
import { importJWK, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let relay: RelayProcess;
let document: DeploymentDocument;

const grant = (agentId: string, extra: string[] = []) => grantCode(relay, agentId, extra);

async function enroll(code: string, id: TestIdentity = newIdentity()) {
  return call<Credentials>(relay.url, 'POST', '/api/v1/enrollment', enrollmentBody(code, id));
}

const INVALID_ENROLLMENT = { error: 'invalid_enrollment', message: expect.any(String) };

beforeAll(async () => {
  relay = await spawnRelay({ env: { SVC_RELAY_TENANTS: 'acme,globex' } });
  const bundle = parseTrustBundle(
    JSON.parse(readFileSync(join(relay.dataDir, 'deployment', 'trust-bundle.json'), 'utf8')),
  );
  const jws = await (await fetch(`${relay.url}/.well-known/svc-deployment`)).text();
  document = await verifyDeploymentDocument(jws, bundle);
}, 60_000);

afterAll(async () => {
  await relay?.stop();
});

describe('deployment document', () => {
  it('is signed by the trust bundle signer and lists the relay key and URL', () => {
    expect(document.api_url).toBe(relay.url);
    expect(document.tenants).toEqual(['acme', 'globex']);
    expect(document.relay_keys[0]?.use).toContain('access-token');
  });

  it("does not verify against another deployment's bundle", async () => {
    const other = await runRelayCli(['deployment', 'init', '--json'], {
      ...relay.env,
      SVC_RELAY_DATA_DIR: `${relay.dataDir}-other`,
    });
    const bundle = parseTrustBundle(JSON.parse(readFileSync(JSON.parse(other.stdout).trust_bundle, 'utf8')));
    const jws = await (await fetch(`${relay.url}/.well-known/svc-deployment`)).text();
    await expect(verifyDeploymentDocument(jws, bundle)).rejects.toMatchObject({ code: 'deployment_untrusted' });
  });
});

describe('enrollment', () => {
  let creds: Credentials;
  let alice: TestIdentity;

  it('redeems a code minted by svc-relay grant and returns credentials bound to it', async () => {
    alice = newIdentity();
    const res = await enroll(await grant('alice', ['--tenant', 'acme']), alice);
    expect(res.status).toBe(201);
    creds = res.body;
    expect(creds).toMatchObject({
      agent_id: 'alice',
      agent_number: 'alice',
      tenant_id: 'acme',
      deployment_id: document.deployment_id,
      capabilities: ['http-relay'],
    });
    expect(creds.api_key).toMatch(/^svc_ak_[A-Za-z0-9_-]{43}$/);
  });

  it('the access JWT verifies with the relay key from the signed document and carries the capabilities', async () => {
    const entry = document.relay_keys[0] as DeploymentDocument['relay_keys'][number];
    const key = await importJWK({ ...entry.jwk, alg: 'EdDSA' }, 'EdDSA');
    const { payload, protectedHeader } = await jwtVerify(creds.access_token, key, { issuer: relay.url });
    expect(protectedHeader.alg).toBe('EdDSA');
    expect(payload).toMatchObject({
      sub: 'alice',
      svc_agent_number: 'alice',
      svc_tenant_id: 'acme',
      svc_deployment_id: document.deployment_id,
      svc_capabilities: ['http-relay'],
    });
    expect((payload.exp as number) - (payload.iat as number)).toBe(900);
  });

  it('the API key exchanges for a JWT that authenticates agent routes', async () => {
    const tok = await call<Record<string, string & string[]>>(relay.url, 'POST', '/api/v1/auth/token', undefined, {
      authorization: `Bearer ${creds.api_key}`,
    });
    expect(tok.status).toBe(200);
    expect(tok.body).toMatchObject({ token_type: 'Bearer', expires_in: 900, capabilities: ['http-relay'] });
    const me = await call(relay.url, 'GET', '/api/v1/agents/me', undefined, {
      authorization: `Bearer ${tok.body.access_token}`,
    });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ agent_id: 'alice', tenant_id: 'acme' });
  });

  it('a nats-relay grant yields a JWT carrying its capability; the command refuses to add it to an agent', async () => {
    await expect(grant('uplink-2', ['--capability', 'http-relay', 'nats-relay'])).rejects.toThrow(
      /nats-relay is for a dedicated leaf uplink identity/,
    );
    const res = await enroll(await grant('uplink-1', ['--capability', 'nats-relay']));
    expect(res.status).toBe(201);
    const tok = await call<{ access_token: string; capabilities: string[] }>(
      relay.url,
      'POST',
      '/api/v1/auth/token',
      undefined,
      { authorization: `Bearer ${res.body.api_key}` },
    );
    expect(tok.body.capabilities).toEqual(['nats-relay']);
    const claims = JSON.parse(Buffer.from(tok.body.access_token.split('.')[1] as string, 'base64url').toString());
    expect(claims.svc_capabilities).toEqual(['nats-relay']);
  });

  it('is single use: of two concurrent redemptions exactly one succeeds', async () => {
    const code = await grant('racer');
    const results = await Promise.all([enroll(code), enroll(code), enroll(code)]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 403, 403]);
    for (const r of results.filter((x) => x.status === 403)) expect(r.body).toEqual(INVALID_ENROLLMENT);
    expect((await enroll(code)).status).toBe(403);
  });

  it('refuses a tampered code, a wrong secret, a foreign proof and a stale proof with the one uniform 403', async () => {
    const code = await grant('bob');
    const [prefix, payload, secret] = code.split('.') as [string, string, string];
    const fields = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const tampered = `${prefix}.${Buffer.from(JSON.stringify({ ...fields, agent_id: 'mallory' })).toString('base64url')}.${secret}`;
    const wrongSecret = `${prefix}.${payload}.${Buffer.alloc(32, 7).toString('base64url')}`;
    const id = newIdentity();
    const cases = [
      enrollmentBody(tampered, id),
      enrollmentBody(wrongSecret, id),
      enrollmentBody(code, id, { signWith: newIdentity().signPrivate }),
      enrollmentBody(code, id, { issuedAt: new Date(Date.now() - 10 * 60_000) }),
      enrollmentBody(code, id, { override: { tenant_id: 'globex' } }),
      { ...enrollmentBody(code, id), proof: undefined },
      { ...enrollmentBody(code, id), extra: 1 },
    ];
    for (const body of cases) {
      const res = await call(relay.url, 'POST', '/api/v1/enrollment', body);
      expect(res.status).toBe(403);
      expect(res.body).toEqual(INVALID_ENROLLMENT);
    }
    const malformed = await call(relay.url, 'POST', '/api/v1/enrollment', '{"enrollment_code":');
    expect(malformed).toMatchObject({ status: 403, body: INVALID_ENROLLMENT });
    // none of the refusals spent the grant
    expect((await enroll(code, id)).status).toBe(201);
  });

  it('refuses a second enrollment of an active agent id without spending the grant; after revocation the same grant enrolls fresh keys', async () => {
    const code = await grant('alice', ['--tenant', 'acme']);
    const fresh = newIdentity();
    expect((await enroll(code, fresh)).status).toBe(403);

    const revoke = await runRelayCli(
      ['agent', 'revoke', '--agent-id', 'alice', '--tenant', 'acme', '--json'],
      relay.env,
    );
    expect(revoke.code, revoke.stderr).toBe(0);
    const old = await call(relay.url, 'POST', '/api/v1/auth/token', undefined, {
      authorization: `Bearer ${creds.api_key}`,
    });
    expect(old).toMatchObject({ status: 401, body: { error: 'invalid_api_key' } });
    const oldJwt = await call(relay.url, 'GET', '/api/v1/agents/me', undefined, {
      authorization: `Bearer ${creds.access_token}`,
    });
    expect(oldJwt).toMatchObject({ status: 401, body: { error: 'invalid_token' } });

    const again = await enroll(code, fresh);
    expect(again.status).toBe(201);
    const me = await call(relay.url, 'GET', '/api/v1/agents/me', undefined, {
      authorization: `Bearer ${again.body.access_token}`,
    });
    expect(me.status).toBe(200);
    // the old token still does not work for the new incarnation
    expect(
      (await call(relay.url, 'GET', '/api/v1/agents/me', undefined, { authorization: `Bearer ${creds.access_token}` }))
        .status,
    ).toBe(401);
  });
});

describe('re-enrollment when the cleanup of the revoked incarnation cannot finish', () => {
  it('answers 503 revocation_unavailable without consuming the grant; the same request succeeds after repair', async () => {
    expect((await enroll(await grant('carol'))).status).toBe(201);
    const nats = relay.natsPid();
    process.kill(nats, 'SIGSTOP');
    try {
      expect((await runRelayCli(['agent', 'revoke', '--agent-id', 'carol'], relay.env)).code).toBe(0);
      const body = enrollmentBody(await grant('carol'), newIdentity());
      const res = await call(relay.url, 'POST', '/api/v1/enrollment', body);
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ error: 'revocation_unavailable' });
      process.kill(nats, 'SIGCONT');
      // the bus connection may need a moment to recover from the stall
      const retry = await until(
        async () => {
          const r = await call(relay.url, 'POST', '/api/v1/enrollment', body);
          return r.status === 503 ? undefined : r;
        },
        15_000,
        'the enrollment to be accepted again',
      );
      expect(retry.status).toBe(201);
      expect(retry.body.agent_id).toBe('carol');
    } finally {
      process.kill(nats, 'SIGCONT');
    }
  }, 30_000);
});

describe('challenge sign-in', () => {
  let dave: TestIdentity;
  let daveKey: string;

  beforeAll(async () => {
    dave = newIdentity();
    const res = await enroll(await grant('dave'), dave);
    daveKey = res.body.api_key;
  });

  const challenge = (agent_id = 'dave', tenant_id = 'acme') =>
    call<{ challenge_id: string; nonce: string }>(relay.url, 'POST', '/api/v1/auth/sign-in/challenge', {
      deployment_id: document.deployment_id,
      tenant_id,
      agent_id,
    });

  const answer = (c: { challenge_id: string; nonce: string }, id = dave) =>
    call<Record<string, string>>(relay.url, 'POST', '/api/v1/auth/sign-in', {
      challenge_id: c.challenge_id,
      agent_id: 'dave',
      signature: signInSignature(id, {
        challenge_id: c.challenge_id,
        nonce: c.nonce,
        agent_id: 'dave',
        deployment_id: document.deployment_id,
        tenant_id: 'acme',
      }),
    });

  it('a signed challenge yields a fresh API key and JWT; the earlier key is retired', async () => {
    const c = await challenge();
    expect(c.status).toBe(201);
    const res = await answer(c.body);
    expect(res.status).toBe(200);
    expect(res.body.api_key).not.toBe(daveKey);
    const tok = await call(relay.url, 'POST', '/api/v1/auth/token', undefined, {
      authorization: `Bearer ${res.body.api_key}`,
    });
    expect(tok.status).toBe(200);
    const old = await call(relay.url, 'POST', '/api/v1/auth/token', undefined, { authorization: `Bearer ${daveKey}` });
    expect(old.status).toBe(401);
  });

  it('a challenge is single use', async () => {
    const c = await challenge();
    expect((await answer(c.body)).status).toBe(200);
    expect(await answer(c.body)).toMatchObject({ status: 401, body: { error: 'invalid_sign_in' } });
  });

  it('a wrongly signed or never issued challenge is refused uniformly', async () => {
    const c = await challenge();
    expect(await answer(c.body, newIdentity())).toMatchObject({ status: 401, body: { error: 'invalid_sign_in' } });
    expect(await answer({ challenge_id: 'chl_never', nonce: 'x' })).toMatchObject({
      status: 401,
      body: { error: 'invalid_sign_in' },
    });
    // a wrong signature spends nothing (nobody without the key can burn an agent's challenge);
    // the right one signs in, once
    expect(await answer(c.body)).toMatchObject({ status: 200 });
    expect(await answer(c.body)).toMatchObject({ status: 401, body: { error: 'invalid_sign_in' } });
  });

  it('challenges for unknown, revoked or other-tenant agents are answered like any, and never sign in', async () => {
    for (const [agent, tenant] of [
      ['nobody', 'acme'],
      ['dave', 'globex'],
      ['carol-old', 'acme'],
    ] as const) {
      const c = await challenge(agent, tenant);
      expect(c).toMatchObject({ status: 201, body: { challenge_id: expect.any(String), nonce: expect.any(String) } });
      expect(await answer(c.body)).toMatchObject({ status: 401, body: { error: 'invalid_sign_in' } });
    }
    const bad = await call(relay.url, 'POST', '/api/v1/auth/sign-in/challenge', { agent_id: 5 });
    expect(bad).toMatchObject({ status: 401, body: { error: 'invalid_challenge_request' } });
  });
});

describe('process lifecycle', () => {
  it('SIGTERM ends open event streams and long-polls instead of waiting for them, and stops its nats-server', async () => {
    const r = await spawnRelay();
    const nats = r.natsPid();
    expect(processAlive(nats)).toBe(true);
    const g = await runRelayCli(['grant', '--agent-id', 'streamer', '--json'], r.env);
    const creds = (
      await call<Credentials>(
        r.url,
        'POST',
        '/api/v1/enrollment',
        enrollmentBody(JSON.parse(g.stdout).enrollment_code, newIdentity()),
      )
    ).body;
    const auth = { authorization: `Bearer ${creds.access_token}` };
    const stream = await fetch(`${r.url}/api/v1/messages/stream`, { headers: auth });
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    await reader.read(); // the stream is open
    const poll = fetch(`${r.url}/api/v1/messages/pending?wait=30`, { headers: auth }).then((res) => res.status);
    await new Promise((res) => setTimeout(res, 200));
    // Without ending them the server would wait for these connections (a minute and more);
    // the test's own timeout is far shorter.
    expect(await r.stop('SIGTERM')).toBe(0);
    expect(await poll).toBe(200);
    let done = false;
    while (!done) done = (await reader.read()).done;
    await until(() => !processAlive(nats), 5_000, 'nats-server to exit');
  }, 20_000);

  it('Ctrl-C under npm (SIGINT twice at once) stops the relay and its nats-server (the second signal killed it mid-stop)', async () => {
    const r = await spawnRelay({ command: 'dev' });
    const nats = r.natsPid();
    r.child.kill('SIGINT');
    r.child.kill('SIGINT');
    expect(await r.stop('SIGINT')).toBe(0);
    await until(() => !processAlive(nats), 5_000, 'nats-server to exit');
  }, 30_000);

  it('a SIGINT while the relay starts stops it once it runs, nats-server included', async () => {
    const dataDir = tempDir('svc-relay-start-signal-');
    const child = spawn(process.execPath, [RELAY_BIN, 'dev', '--listen', `127.0.0.1:${await freePort()}`], {
      env: { ...process.env, SVC_RELAY_DATA_DIR: dataDir },
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((done) => child.once('exit', done));
    const pidFile = join(dataDir, 'nats', 'nats-server.pid');
    // the nats-server is up, the relay not yet listening
    await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 60_000, 'nats-server pid');
    const nats = Number(readFileSync(pidFile, 'utf8').trim());
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    await until(() => !processAlive(nats), 5_000, 'nats-server to exit');
  }, 90_000);
});
