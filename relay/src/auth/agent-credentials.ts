/** Agent credentials the relay issues: API keys (stored hashed) and EdDSA access JWTs. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ACCESS_TOKEN_TTL_SECONDS, type AccessTokenClaims, type Capability, SvcError } from '@svc/shared';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { LoadedKey } from '../deployment/key-files.js';

export const API_KEY_PREFIX = 'svc_ak_';

export function newApiKey(): { key: string; hash: string } {
  const key = `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { key, hash: hashSecret(key) };
}

/** SHA-256 hex: secrets are high-entropy, so a plain hash is the right storage form. */
export function hashSecret(secret: string | Uint8Array): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function equalHashes(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

export function bearerOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

export interface IssuedToken {
  token: string;
  expiresAt: Date;
}

export async function issueAccessToken(
  key: LoadedKey,
  claims: AccessTokenClaims,
  issuer: string,
  now = Date.now(),
): Promise<IssuedToken> {
  const iat = Math.floor(now / 1000);
  const token = await new SignJWT({
    svc_incarnation_id: claims.svc_incarnation_id,
    svc_agent_number: claims.svc_agent_number,
    svc_deployment_id: claims.svc_deployment_id,
    svc_tenant_id: claims.svc_tenant_id,
    svc_capabilities: claims.svc_capabilities,
  })
    .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: 'at+jwt' })
    .setSubject(claims.sub)
    .setIssuer(issuer)
    .setAudience(`${issuer}/api/v1`)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ACCESS_TOKEN_TTL_SECONDS)
    .setJti(randomBytes(12).toString('base64url'))
    .sign(key.privateKey);
  return { token, expiresAt: new Date((iat + ACCESS_TOKEN_TTL_SECONDS) * 1000) };
}

export type VerifiedAccessToken = AccessTokenClaims & { iat: number; exp: number };

export async function verifyAccessToken(
  key: LoadedKey,
  token: string,
  issuer: string,
  now: () => number = Date.now,
): Promise<VerifiedAccessToken> {
  try {
    const { payload } = await jwtVerify(token, key.publicKey, {
      algorithms: ['EdDSA'],
      issuer,
      audience: `${issuer}/api/v1`,
      typ: 'at+jwt',
      currentDate: new Date(now()),
    });
    const caps = payload.svc_capabilities;
    if (
      typeof payload.sub !== 'string' ||
      typeof payload.svc_incarnation_id !== 'string' ||
      typeof payload.svc_agent_number !== 'string' ||
      typeof payload.svc_deployment_id !== 'string' ||
      typeof payload.svc_tenant_id !== 'string' ||
      !Array.isArray(caps) ||
      typeof payload.iat !== 'number' ||
      typeof payload.exp !== 'number'
    ) {
      throw new SvcError('invalid_token', undefined, { detail: 'access token lacks svc claims' });
    }
    return {
      sub: payload.sub,
      svc_incarnation_id: payload.svc_incarnation_id,
      svc_agent_number: payload.svc_agent_number,
      svc_deployment_id: payload.svc_deployment_id,
      svc_tenant_id: payload.svc_tenant_id,
      svc_capabilities: caps as Capability[],
      iat: payload.iat,
      exp: payload.exp,
    };
  } catch (err) {
    if (err instanceof SvcError) throw err;
    const detail = err instanceof joseErrors.JOSEError ? err.code : String(err);
    throw new SvcError('invalid_token', undefined, { detail });
  }
}

/** Verified tokens kept, oldest dropped first; each holds a few hundred bytes. */
const VERIFIED_TOKENS_MAX = 10_000;

export type AccessTokenVerifier = (token: string) => Promise<VerifiedAccessToken>;

/**
 * `verifyAccessToken` with the signature checks remembered until each token expires: an
 * agent sends the same token with every request for its lifetime, and an EdDSA verify
 * costs more than the rest of a small request. Only a byte-identical token hits, so the
 * cache cannot accept anything the full check would refuse before `exp`; revocation is
 * checked per request against the ledger, after this (the token's incarnation must be
 * the agent's active row), so a revocation is seen at once.
 */
export function accessTokenVerifier(key: LoadedKey, issuer: string, now: () => number = Date.now): AccessTokenVerifier {
  const verified = new Map<string, VerifiedAccessToken>();
  return async (token) => {
    const hit = verified.get(token);
    if (hit) {
      if (hit.exp * 1000 > now()) return hit;
      verified.delete(token);
    }
    const claims = await verifyAccessToken(key, token, issuer, now);
    if (verified.size >= VERIFIED_TOKENS_MAX) verified.delete(verified.keys().next().value as string);
    verified.set(token, Object.freeze(claims));
    return claims;
  };
}
