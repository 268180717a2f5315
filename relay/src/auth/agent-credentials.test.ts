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
    // A token with about 1.5 s to live.
    const issuedAt = Date.now() - ACCESS_TOKEN_TTL_SECONDS * 1000 + 1500;
    const { token } = await issueAccessToken(k, claims, ISSUER, issuedAt);
    const verify = accessTokenVerifier(k, ISSUER);
    expect((await verify(token)).sub).toBe('agent-row-1');
    expect((await verify(token)).svc_agent_number).toBe('a1');
    await new Promise((r) => setTimeout(r, 2100));
    await expect(verify(token)).rejects.toMatchObject({ code: 'invalid_token' });
  });

  it('never answers from the cache for a token that differs by one character', async () => {
    const k = key();
    const { token } = await issueAccessToken(k, claims, ISSUER);
    const verify = accessTokenVerifier(k, ISSUER);
    await verify(token);
    const last = token.at(-1) === 'A' ? 'B' : 'A';
    await expect(verify(`${token.slice(0, -1)}${last}`)).rejects.toMatchObject({ code: 'invalid_token' });
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
