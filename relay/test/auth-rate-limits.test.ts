/**
 * The unauthenticated routes (enrollment, sign-in challenge, sign-in, API key exchange)
 * are rate limited per source address and per agent: 429 rate_limited with Retry-After,
 * settable by the operator, on the relay's own (injected) clock. A challenge for an agent
 * that does not exist is answered like one for an agent that does, and the challenge table
 * stays bounded (expired rows pruned, a cap per agent and in all).
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

function signIn(r: InProcessRelay, agent: InProcessAgent, res: LightMyRequestResponse, from?: string) {
  const c = res.json() as { challenge_id: string; nonce: string };
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

describe('per agent', () => {
  it('counts requests naming one agent, known or not, from any address', async () => {
    relay = await inProcessRelay({
      settings: { SVC_RELAY_AUTH_RATE_PER_AGENT: '3', SVC_RELAY_AUTH_RATE_PER_ADDRESS: '0' },
    });
    const r = relay;
    await r.enroll('default', 'alice');
    for (const id of ['alice', 'ghost']) {
      for (let i = 0; i < 3; i++) expect((await challenge(r, id, `198.51.100.${i}`)).statusCode).toBe(201);
      limited(await challenge(r, id, '198.51.100.99'), 20);
    }
    expect((await challenge(r, 'bob')).statusCode).toBe(201);
    r.advance(20_000);
    expect((await challenge(r, 'alice')).statusCode).toBe(201);
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
      id: /^chl_[A-Za-z0-9_-]{22}$/.test(res.json().challenge_id),
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

describe('the challenge table is bounded', () => {
  it('keeps the newest few per agent; the replaced ones no longer sign in', async () => {
    relay = await inProcessRelay({
      settings: { SVC_RELAY_CHALLENGES_PER_AGENT: '2', SVC_RELAY_AUTH_RATE_PER_AGENT: '0' },
    });
    const r = relay;
    const alice = await r.enroll('default', 'alice');
    const issued = [];
    for (let i = 0; i < 5; i++) {
      issued.push(await challenge(r, 'alice'));
      r.advance(1);
    }
    expect(await liveChallenges(r)).toBe(2);
    expect((await signIn(r, alice, issued[0] as LightMyRequestResponse)).json()).toMatchObject({
      error: 'invalid_sign_in',
    });
    expect((await signIn(r, alice, issued[4] as LightMyRequestResponse)).statusCode).toBe(200);
  });

  it('drops expired rows, and past the overall cap turns every agent id away alike', async () => {
    relay = await inProcessRelay({ settings: { SVC_RELAY_CHALLENGES_MAX: '3', SVC_RELAY_AUTH_RATE_PER_AGENT: '0' } });
    const r = relay;
    for (const id of ['a1', 'a2', 'a3']) await r.enroll('default', id);
    for (const id of ['a1', 'a2', 'a3']) expect((await challenge(r, id)).statusCode).toBe(201);
    expect(await liveChallenges(r)).toBe(3);
    limited(await challenge(r, 'a1'), 60);
    limited(await challenge(r, 'nobody'), 60);
    r.advance(60_000); // every challenge lives 60 s
    expect((await challenge(r, 'a2')).statusCode).toBe(201);
    expect(await liveChallenges(r)).toBe(1);
  });

  it('a flood of 500 requests leaves a bounded table and answers 429 past the address budget', async () => {
    // a fixed clock: no budget refills while the 500 requests run, however long they take
    relay = await inProcessRelay({ settings: { SVC_RELAY_AUTH_RATE_PER_ADDRESS: '100' }, fixedClock: true });
    const r = relay;
    await r.enroll('default', 'alice');
    const statuses = new Map<number, number>();
    for (let i = 0; i < 500; i++) {
      const res = await challenge(r, i % 2 ? 'alice' : `ghost-${i}`, '192.0.2.1');
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
    }
    // of the first 100 (the address budget), the 50 for alice pass her budget of 20 a minute
    expect(statuses.get(201)).toBe(70);
    expect(statuses.get(429)).toBe(430);
    expect(await liveChallenges(r)).toBeLessThanOrEqual(5);
  });
});
