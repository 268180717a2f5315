/**
 * Every key and signature field of enrollment, challenge sign-in and key rotation is
 * checked by the shared key policy: the identity and small-order Ed25519 keys (the
 * identity key with R = identity, S = 0 "signs" everything), small-order and
 * non-canonical X25519 keys, and non-canonical base64url are refused with the route's
 * own 4xx — never a 5xx — and a refused enrollment leaves its grant unspent.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { keyRecordBytes, toBase64url, X25519_SMALL_ORDER_U } from '@svc/shared';
import { enrollmentBody, newIdentity, signInSignature, type TestIdentity } from '@svc/test-harness/agent-client';
import { type InProcessAgent, type InProcessRelay, inProcessRelay } from '@svc/test-harness/in-process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mintGrant } from '../src/services/grants.js';

const DEPLOYMENT = 'dep-key-validation';
let relay: InProcessRelay;
beforeEach(async () => {
  relay = await inProcessRelay({ tenants: ['acme'], deploymentId: DEPLOYMENT });
});
afterEach(async () => {
  await relay.close();
});

const le32 = (n: bigint): Uint8Array => {
  const out = new Uint8Array(32);
  for (let i = 0, v = n; i < 32; i++, v >>= 8n) out[i] = Number(v & 255n);
  return out;
};
/** The Ed25519 identity point, and the signature (R = identity, S = 0) it "makes" over any message. */
const IDENTITY_KEY = toBase64url(le32(1n));
const IDENTITY_SIGNATURE = toBase64url(new Uint8Array([...le32(1n), ...new Uint8Array(32)]));
/** A point of order 8. */
const ORDER_8_KEY = toBase64url(Buffer.from('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', 'hex'));

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** The same bytes with unused trailing bits set: base64url that a lenient decoder would take. */
function nonCanonical(text: string): string {
  const last = ALPHABET.indexOf(text.at(-1) as string);
  return `${text.slice(0, -1)}${ALPHABET[last | 1]}`;
}

async function grant() {
  return await mintGrant(relay.ctx, {
    tenantId: 'acme',
    agentId: 'mallory',
    capabilities: ['http-relay'],
    createdBy: 'test',
  });
}

const enrollWith = (payload: unknown) =>
  relay.app.inject({ method: 'POST', url: '/api/v1/enrollment', payload: payload as Record<string, unknown> });

describe('enrollment', () => {
  /** A body for `identity` whose fields are then replaced. */
  function body(code: string, identity: TestIdentity, replace: Record<string, string>) {
    const keys = {
      ...identity,
      ...(replace.signing_public_key ? { signPublic: replace.signing_public_key } : {}),
      ...(replace.encryption_public_key ? { encPublic: replace.encryption_public_key } : {}),
    };
    return { ...enrollmentBody(code, keys), ...(replace.proof ? { proof: replace.proof } : {}) };
  }

  async function expectRefused(replace: (id: TestIdentity) => Record<string, string>) {
    const g = await grant();
    const res = await enrollWith(body(g.enrollment_code, newIdentity(), replace(newIdentity())));
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json()).toEqual({ error: 'invalid_enrollment', message: expect.any(String) });
    expect((await relay.ctx.ledger.getGrant(g.grant_id))?.consumed_at).toBeNull();
  }

  it('the identity signing key with R = identity, S = 0 → 403, grant unspent', () =>
    expectRefused(() => ({ signing_public_key: IDENTITY_KEY, proof: IDENTITY_SIGNATURE })));

  it('a small-order signing key → 403, grant unspent', () =>
    expectRefused(() => ({ signing_public_key: ORDER_8_KEY, proof: IDENTITY_SIGNATURE })));

  it('a non-canonical base64url encryption key → 403 (not 500), grant unspent', () =>
    expectRefused((id) => ({ encryption_public_key: nonCanonical(id.encPublic) })));

  it('a non-canonical base64url signing key → 403, grant unspent', () =>
    expectRefused((id) => ({ signing_public_key: nonCanonical(id.signPublic) })));

  it('a non-canonical base64url proof → 403, grant unspent', async () => {
    const g = await grant();
    const id = newIdentity();
    const good = enrollmentBody(g.enrollment_code, id);
    const res = await enrollWith({ ...good, proof: nonCanonical(good.proof) });
    expect(res.statusCode).toBe(403);
    expect((await relay.ctx.ledger.getGrant(g.grant_id))?.consumed_at).toBeNull();
  });

  it.each(X25519_SMALL_ORDER_U.map((u) => [u.toString().slice(0, 12), u]))(
    'a small-order X25519 encryption key (u = %s…) → 403, grant unspent',
    (_name, u) => expectRefused(() => ({ encryption_public_key: toBase64url(le32(u as bigint)) })),
  );

  it('an honest body still enrolls (the checks refuse only bad keys)', async () => {
    const g = await grant();
    const res = await enrollWith(enrollmentBody(g.enrollment_code, newIdentity()));
    expect(res.statusCode, res.body).toBe(201);
  });
});

describe('challenge sign-in', () => {
  async function challenge(agent: InProcessAgent) {
    const res = await relay.app.inject({
      method: 'POST',
      url: '/api/v1/auth/sign-in/challenge',
      payload: { deployment_id: DEPLOYMENT, tenant_id: agent.tenant, agent_id: agent.agentId },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { challenge_id: string; nonce: string };
  }
  /** The agent's signature over challenge `c`. */
  const answer = (agent: InProcessAgent, c: { challenge_id: string; nonce: string }) =>
    signInSignature(agent.identity, {
      challenge_id: c.challenge_id,
      nonce: c.nonce,
      agent_id: agent.agentId,
      deployment_id: DEPLOYMENT,
      tenant_id: agent.tenant,
    });
  const signIn = (agent: InProcessAgent, challengeId: string, signature: string) =>
    relay.app.inject({
      method: 'POST',
      url: '/api/v1/auth/sign-in',
      payload: { challenge_id: challengeId, agent_id: agent.agentId, signature },
    });

  it('an agent row holding the identity key (enrolled before the check) cannot sign in with R = identity, S = 0', async () => {
    const agent = await relay.enroll('acme', 'legacy');
    await relay.ctx.ledger.sql.run('UPDATE agents SET signing_public_key = ? WHERE agent_id = ?', [
      IDENTITY_KEY,
      agent.agentId,
    ]);
    const c = await challenge(agent);
    const res = await signIn(agent, c.challenge_id, IDENTITY_SIGNATURE);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'invalid_sign_in', message: expect.any(String) });
  });

  it('a non-canonical base64url signature → 401 invalid_sign_in', async () => {
    const agent = await relay.enroll('acme', 'dave');
    const c = await challenge(agent);
    const signature = answer(agent, c);
    const res = await signIn(agent, c.challenge_id, nonCanonical(signature));
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'invalid_sign_in', message: expect.any(String) });
    // the challenge was spent by the refused answer; a fresh one with the canonical signature works
    const again = await challenge(agent);
    const ok = answer(agent, again);
    expect((await signIn(agent, again.challenge_id, ok)).statusCode).toBe(200);
  });
});

describe('key rotation (PUT /api/v1/agents/me/keys)', () => {
  const xKey = () => (generateKeyPairSync('x25519').publicKey.export({ format: 'jwk' }) as { x: string }).x;

  /** The bytes of `agent`'s version-2 key record: what a rotation's two signatures cover. */
  const recordBytes = (agent: InProcessAgent, signing: string, encryption: string, created_at: string) =>
    keyRecordBytes({
      deployment_id: DEPLOYMENT,
      tenant_id: agent.tenant,
      agent_id: agent.agentId,
      agent_number: agent.agentNumber,
      version: 2,
      signing_public_key: signing,
      encryption_public_key: encryption,
      created_at,
    });

  /** A version-2 upload signed by `signature` (default: the identity signature) and by the current key. */
  function upload(agent: InProcessAgent, signing: string, encryption: string, signature?: string) {
    const created_at = new Date().toISOString();
    const bytes = recordBytes(agent, signing, encryption, created_at);
    const previous = toBase64url(sign(null, bytes, agent.identity.signPrivate));
    return {
      signing_public_key: signing,
      encryption_public_key: encryption,
      created_at,
      signature: signature ?? IDENTITY_SIGNATURE,
      previous_signature: previous,
    };
  }

  async function expectRefused(agent: InProcessAgent, payload: unknown, code: string) {
    const res = await relay.api(agent.token, 'PUT', '/api/v1/agents/me/keys', payload);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toEqual({ error: code, message: expect.any(String) });
    const current = (await relay.api(agent.token, 'GET', '/api/v1/agents/me/keys')).json() as {
      current: { version: number };
    };
    expect(current.current.version).toBe(1);
  }

  it('to the identity signing key, even with a valid previous_signature → 400 invalid_key_record', async () => {
    const agent = await relay.enroll('acme', 'erin');
    await expectRefused(agent, upload(agent, IDENTITY_KEY, xKey()), 'invalid_key_record');
  });

  it('to a small-order signing key → 400 invalid_key_record', async () => {
    const agent = await relay.enroll('acme', 'frank');
    await expectRefused(agent, upload(agent, ORDER_8_KEY, xKey()), 'invalid_key_record');
  });

  it('a non-canonical base64url encryption key → 400 invalid_key_record', async () => {
    const agent = await relay.enroll('acme', 'grace');
    const payload = upload(agent, agent.identity.signPublic, nonCanonical(xKey()));
    await expectRefused(agent, payload, 'invalid_key_record');
  });

  it.each(X25519_SMALL_ORDER_U.map((u) => [u.toString().slice(0, 12), u]))(
    'a small-order X25519 key (u = %s…) → 400 invalid_key_record',
    async (_name, u) => {
      const agent = await relay.enroll('acme', 'heidi');
      await expectRefused(
        agent,
        upload(agent, agent.identity.signPublic, toBase64url(le32(u as bigint))),
        'invalid_key_record',
      );
    },
  );

  it('a non-canonical base64url previous_signature → 400 invalid_previous_signature', async () => {
    const agent = await relay.enroll('acme', 'judy');
    const next = newIdentity();
    const created_at = new Date().toISOString();
    const bytes = recordBytes(agent, next.signPublic, next.encPublic, created_at);
    await expectRefused(
      agent,
      {
        signing_public_key: next.signPublic,
        encryption_public_key: next.encPublic,
        created_at,
        signature: toBase64url(sign(null, bytes, next.signPrivate)),
        previous_signature: nonCanonical(toBase64url(sign(null, bytes, agent.identity.signPrivate))),
      },
      'invalid_previous_signature',
    );
  });

  it('a non-canonical base64url signature → 400 invalid_key_signature', async () => {
    const agent = await relay.enroll('acme', 'ivan');
    const enc = xKey();
    const created_at = new Date().toISOString();
    const bytes = recordBytes(agent, agent.identity.signPublic, enc, created_at);
    const signature = nonCanonical(toBase64url(sign(null, bytes, agent.identity.signPrivate)));
    await expectRefused(
      agent,
      { signing_public_key: agent.identity.signPublic, encryption_public_key: enc, created_at, signature },
      'invalid_key_signature',
    );
  });
});
