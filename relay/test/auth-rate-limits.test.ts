/**
 * The unauthenticated routes (enrollment, sign-in challenge, sign-in, API key exchange)
 * are rate limited per source address, and per enrollment code or API key: 429
 * rate_limited with Retry-After, settable by the operator, on the relay's own (injected)
 * clock. A challenge for an agent that does not exist is answered like one for an agent
 * that does. Challenges are not stored: nobody can fill a table with them, nor push an
 * agent's own challenge out, nor lock an agent out of signing in by naming it.
 */

import { signInSignature } from '@svc/test-harness/agent-client';
import { type InProcessAgent, type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

let relay: InProcessRelay | undefined;
afterEach(async () => {
  await relay?.close();
  relay = undefined;
});

const post = (r: InProcessRelay, url: string, payload: object, from = '198.51.100.7', headers = {}) =>
  r.app.inject({ method: 'POST', url, payload, remoteAddress: from, headers });

const challenge = (r: InProcessRelay, agentId: string, from?: string) =>
  post(
    r,
    '/api/v1/auth/sign-in/challenge',
    { deployment_id: r.ctx.deployment.deploymentId, tenant_id: 'default', agent_id: agentId },
    from,
  );

type Challenge = { challenge_id: string; nonce: string };

/** Signs in with a challenge (as answered, or its fields) as the agent would. */
function signIn(r: InProcessRelay, agent: InProcessAgent, res: LightMyRequestResponse | Challenge, from?: string) {
  const c = 'json' in res ? (res.json() as Challenge) : res;
  return post(
    r,
    '/api/v1/auth/sign-in',
    {
      challenge_id: c.challenge_id,
      agent_id: agent.agentId,
      signature: signInSignature(agent.identity, {
        challenge_id: c.challenge_id,
        nonce: c.nonce,
        agent_id: agent.agentId,
        deployment_id: r.ctx.deployment.deploymentId,
        tenant_id: 'default',
      }),
    },
    from,
  );
}

const limited = (res: LightMyRequestResponse, retryAfter: number) => {
  expect(res.statusCode).toBe(429);
  expect(res.json()).toEqual({ error: 'rate_limited', message: expect.any(String) });
  expect(res.headers['retry-after']).toBe(String(retryAfter));
};

const liveChallenges = async (r: InProcessRelay) =>
  ((await r.ctx.ledger.sql.get<{ n: number }>('SELECT count(*) AS n FROM challenges')) as { n: number }).n;

describe('per source address', () => {
  it('the unauthenticated routes share one budget per address; 429 with Retry-After, then refilled by the clock', async () => {
    relay = await inProcessRelay({
      settings: { SVC_RELAY_AUTH_RATE_PER_ADDRESS: '6', SVC_RELAY_AUTH_RATE_PER_AGENT: '0' },
    });
    const r = relay;
    for (let i = 0; i < 3; i++) expect((await challenge(r, `ghost-${i}`)).statusCode).toBe(201);
    expect(
      (await post(r, '/api/v1/auth/sign-in', { challenge_id: 'chl_x', agent_id: 'a', signature: 'A'.repeat(86) }))
        .statusCode,
    ).toBe(401);
    expect((await post(r, '/api/v1/enrollment', {})).statusCode).toBe(403);
    expect(
      (await post(r, '/api/v1/auth/token', {}, undefined, { authorization: 'Bearer svc_ak_nope' })).statusCode,
    ).toBe(401);
    // 6 per minute: the 7th waits one token, 10 s
    limited(await challenge(r, 'ghost-9'), 10);
    limited(await post(r, '/api/v1/enrollment', {}), 10);
    limited(await post(r, '/api/v1/auth/token', {}, undefined, { authorization: 'Bearer svc_ak_nope' }), 10);
    // another address has its own budget
    expect((await challenge(r, 'ghost-9', '203.0.113.9')).statusCode).toBe(201);
    r.advance(10_000);
    expect((await challenge(r, 'ghost-9')).statusCode).toBe(201);
    limited(await challenge(r, 'ghost-9'), 10);
  });
});

describe('behind a reverse proxy', () => {
  it('counts per client named by X-Forwarded-For only when the proxy is trusted', async () => {
    const budget = { SVC_RELAY_AUTH_RATE_PER_ADDRESS: '2', SVC_RELAY_AUTH_RATE_PER_AGENT: '0' };
    const via = (r: InProcessRelay, client: string) =>
      r.app.inject({
        method: 'POST',
        url: '/api/v1/auth/sign-in/challenge',
        payload: { deployment_id: r.ctx.deployment.deploymentId, tenant_id: 'default', agent_id: 'x' },
        remoteAddress: '10.9.9.9',
        headers: { 'x-forwarded-for': client },
      });
    relay = await inProcessRelay({ settings: { ...budget, SVC_RELAY_TRUSTED_PROXIES: '10.9.0.0/16' } });
    for (const client of ['192.0.2.1', '192.0.2.1', '192.0.2.2', '192.0.2.2']) {
      expect((await via(relay, client)).statusCode).toBe(201);
    }
    limited(await via(relay, '192.0.2.1'), 30);
    await relay.close();
    // untrusted: a forged header changes nothing, the proxy's address is counted
    relay = await inProcessRelay({ settings: budget });
    expect((await via(relay, '192.0.2.1')).statusCode).toBe(201);
    expect((await via(relay, '192.0.2.2')).statusCode).toBe(201);
    limited(await via(relay, '192.0.2.3'), 30);
  });
});

describe('naming an agent', () => {
  it('from any number of addresses, never locks that agent out of signing in', async () => {
    relay = await inProcessRelay({ settings: { SVC_RELAY_AUTH_RATE_PER_ADDRESS: '5' } });
    const r = relay;
    const alice = await r.enroll('default', 'alice');
    // 200 challenge requests and 200 forged sign-ins naming alice, from 100 addresses
    for (let i = 0; i < 200; i++) {
      const from = `198.51.100.${i % 100}`;
      expect((await challenge(r, 'alice', from)).statusCode).toBe(201);
      const forged = await post(
        r,
        '/api/v1/auth/sign-in',
        { challenge_id: `chl_${'A'.repeat(22)}.zzzzzzzz.default`, agent_id: 'alice', signature: 'A'.repeat(86) },
        from,
      );
      expect(forged.statusCode).toBe(401);
    }
    expect(await liveChallenges(r)).toBe(0);
    // alice, from her own address: a challenge, and a sign-in with it
    expect((await signIn(r, alice, await challenge(r, 'alice', '203.0.113.9'), '203.0.113.9')).statusCode).toBe(200);
  });
});

describe('logs', () => {
  it('name what was limited without the API key or the enrollment code', async () => {
    relay = await inProcessRelay({
      settings: { SVC_RELAY_AUTH_RATE_PER_AGENT: '1', SVC_RELAY_AUTH_RATE_PER_ADDRESS: '0' },
    });
    const r = relay;
    const key = { authorization: 'Bearer svc_ak_SECRETKEYSECRETKEY' };
    const code = {
      enrollment_code: 'svce1.cGF5bG9hZA.SECRETCODESECRETCODE',
      signing_public_key: 'A'.repeat(43),
      encryption_public_key: 'A'.repeat(43),
      issued_at: new Date().toISOString(),
      proof: 'A'.repeat(86),
      key_record_signature: 'A'.repeat(86),
    };
    for (let i = 0; i < 2; i++) {
      await post(r, '/api/v1/auth/token', {}, undefined, key);
      await post(r, '/api/v1/enrollment', code);
    }
    limited(await post(r, '/api/v1/auth/token', {}, undefined, key), 60);
    limited(await post(r, '/api/v1/enrollment', code), 60);
    const log = r.logLines.join('\n');
    expect(log).toMatch(/rate limited/);
    expect(log).not.toMatch(/SECRETKEY|SECRETCODE/);
  });
});

describe('challenges for unknown agents', () => {
  it('are answered like those for known ones; the sign-in then fails with invalid_sign_in', async () => {
    relay = await inProcessRelay();
    const r = relay;
    const alice = await r.enroll('default', 'alice');
    const bob = await r.enroll('default', 'bob');
    await r.ctx.ledger.revokeAgent('default', 'bob', r.ctx.now());
    const known = await challenge(r, 'alice');
    const unknown = await challenge(r, 'nobody');
    const revoked = await challenge(r, 'bob');
    const form = (res: LightMyRequestResponse) => ({
      status: res.statusCode,
      keys: Object.keys(res.json()).sort(),
      id: /^chl_[A-Za-z0-9_-]{22}\.[0-9a-z]+\.default$/.test(res.json().challenge_id),
      nonce: /^[A-Za-z0-9_-]{43}$/.test(res.json().nonce),
      type: res.headers['content-type'],
    });
    expect(form(unknown)).toEqual(form(known));
    expect(form(revoked)).toEqual(form(known));
    expect(form(known)).toMatchObject({ status: 201, id: true, nonce: true });
    const ghost = { ...alice, agentId: 'nobody' };
    expect((await signIn(r, ghost, unknown)).json()).toEqual({ error: 'invalid_sign_in', message: expect.any(String) });
    expect((await signIn(r, bob, revoked)).json()).toMatchObject({ error: 'invalid_sign_in' });
    expect((await signIn(r, alice, known)).statusCode).toBe(200);
    // nothing stored for the unknown and revoked ids: the one row is alice's (spent)
    expect(await liveChallenges(r)).toBe(1);
  });
});

describe('a challenge', () => {
  it('signs in once, within its 60 s, for the agent it was asked for; nothing is stored until then', async () => {
    relay = await inProcessRelay({ settings: { SVC_RELAY_AUTH_RATE_PER_ADDRESS: '0' } });
    const r = relay;
    const alice = await r.enroll('default', 'alice');
    const bob = await r.enroll('default', 'bob');
    const issued = [];
    for (let i = 0; i < 5; i++)
      issued.push((await challenge(r, 'alice')).json() as { challenge_id: string; nonce: string });
    expect(await liveChallenges(r)).toBe(0);
    const [first, second, third, fourth] = issued as [
      (typeof issued)[0],
      (typeof issued)[0],
      (typeof issued)[0],
      (typeof issued)[0],
    ];
    // any of them, in any order, each once
    expect((await signIn(r, alice, second)).statusCode).toBe(200);
    expect((await signIn(r, alice, second)).json()).toMatchObject({ error: 'invalid_sign_in' });
    expect((await signIn(r, alice, first)).statusCode).toBe(200);
    expect(await liveChallenges(r)).toBe(2);
    // alice's challenge, signed by bob for bob: its nonce was derived for alice
    expect((await signIn(r, bob, third)).json()).toMatchObject({ error: 'invalid_sign_in' });
    // an id altered (a later expiry, another tenant, another random part) has no nonce of its own
    const [, rand, exp] = /^chl_([^.]+)\.([^.]+)\.default$/.exec(fourth.challenge_id) as RegExpExecArray;
    for (const id of [
      `chl_${rand}.${(Number.parseInt(exp as string, 36) + 1).toString(36)}.default`,
      `chl_${(rand as string).replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}.${exp}.default`,
      `chl_${rand}.${exp}.other`,
    ]) {
      expect((await signIn(r, alice, { ...fourth, challenge_id: id })).json(), id).toMatchObject({
        error: 'invalid_sign_in',
      });
    }
    // after 60 s: stale, and the spent rows are gone with the next sign-in
    r.advance(60_000);
    expect((await signIn(r, alice, fourth)).json()).toMatchObject({ error: 'invalid_sign_in' });
    expect((await signIn(r, alice, await challenge(r, 'alice'))).statusCode).toBe(200);
    expect(await liveChallenges(r)).toBe(1);
  });

  it('a relay configured with the retired challenge settings starts and says they are unused', async () => {
    relay = await inProcessRelay({ settings: { SVC_RELAY_CHALLENGES_MAX: '3', SVC_RELAY_CHALLENGES_PER_AGENT: '1' } });
    const r = relay;
    expect(r.logLines.join('\n')).toMatch(
      /SVC_RELAY_CHALLENGES_PER_AGENT, SVC_RELAY_CHALLENGES_MAX: no longer used|SVC_RELAY_CHALLENGES_MAX, SVC_RELAY_CHALLENGES_PER_AGENT: no longer used/,
    );
    const alice = await r.enroll('default', 'alice');
    for (let i = 0; i < 5; i++) expect((await challenge(r, 'alice')).statusCode).toBe(201);
    expect((await signIn(r, alice, await challenge(r, 'alice'))).statusCode).toBe(200);
  });
});
