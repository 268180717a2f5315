import { createPublicKey } from 'node:crypto';
import { ACCESS_TOKEN_TTL_SECONDS } from '@svc/shared';
import { generatePrivateKey } from '@svc/shared/node';
import { describe, expect, it } from 'vitest';
import type { LoadedKey } from '../deployment/key-files.js';
import { accessTokenVerifier, issueAccessToken } from './agent-credentials.js';

const ISSUER = 'https://relay.test';

function key(): LoadedKey {
  const privateKey = generatePrivateKey('ed25519');
  return { kid: 'k1', privateKey, publicKey: createPublicKey(privateKey), publicJwk: {} };
}

const claims = {
  sub: 'agent-row-1',
  svc_incarnation_id: 'row-1',
  svc_agent_number: 'a1',
  svc_deployment_id: 'dep',
  svc_tenant_id: 'ten',
  svc_capabilities: [],
};

describe('accessTokenVerifier', () => {
  it('answers a repeated token from its cache, but never past the token expiry', async () => {
    const k = key();
    // An injected clock: the token is checked one second before its expiry, then at it.
    const issuedAt = Date.UTC(2026, 0, 1);
    let clock = issuedAt + (ACCESS_TOKEN_TTL_SECONDS - 1) * 1000;
    const { token } = await issueAccessToken(k, claims, ISSUER, issuedAt);
    const verify = accessTokenVerifier(k, ISSUER, () => clock);
    expect((await verify(token)).svc_agent_number).toBe('a1');
    expect((await verify(token)).svc_agent_number).toBe('a1');
    clock = issuedAt + ACCESS_TOKEN_TTL_SECONDS * 1000;
    await expect(verify(token)).rejects.toMatchObject({ code: 'invalid_token' });
  });

  it('never answers from the cache for a token that differs by one character', async () => {
    const k = key();
    const { token } = await issueAccessToken(k, claims, ISSUER);
    const verify = accessTokenVerifier(k, ISSUER);
    await verify(token);
    // Flip one bit of a decoded signature byte: changing the last base64url character
    // alone may only touch padding bits and decode to the same signature.
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const sig = Buffer.from(signature, 'base64url');
    for (const at of [0, sig.length - 1]) {
      const altered = Buffer.from(sig);
      altered[at] = (altered[at] as number) ^ 0x01;
      const tampered = `${header}.${payload}.${altered.toString('base64url')}`;
      expect(tampered).not.toBe(token);
      await expect(verify(tampered)).rejects.toMatchObject({ code: 'invalid_token' });
    }
  });

  it('refuses a token of another key even after caching one of its own', async () => {
    const k = key();
    const other = key();
    const verify = accessTokenVerifier(k, ISSUER);
    await verify((await issueAccessToken(k, claims, ISSUER)).token);
    const foreign = await issueAccessToken(other, claims, ISSUER);
    await expect(verify(foreign.token)).rejects.toMatchObject({ code: 'invalid_token' });
  });
});
