/**
 * Verification of administrator bearer tokens: OIDC access tokens (JWT) issued by the one
 * external authority the relay trusts (specification, "Access token claims" and "Relay
 * bearer tokens").
 *
 * Order of checks, each refusal with its code:
 * 1. the token is a compact JWS whose header `alg` is RS256, ES256 or EdDSA — otherwise
 *    `unsupported_algorithm`, decided from the header before any key lookup;
 * 2. signature against the authority's key set (unknown kid → one rate-limited refetch),
 *    `exp` (required), `nbf`, `iss` (exact), `aud` (equal, or a member), non-empty `sub`
 *    → `invalid_token`; a key set that cannot be fetched (unreachable, refused, too slow:
 *    admin-token-keys.ts) → `authority_unavailable`;
 * 3. `azp` equal to the configured client id → `invalid_client_id`;
 * 4. `roles`: a non-empty array of admin / auditor / automation / member → `invalid_roles`;
 * 5. `svc_deployment_id`, `svc_tenant_id`: empty or missing → `invalid_token`, not this
 *    deployment or not an allowed tenant → `binding_mismatch`.
 * Scope checking is the route's business; the principal carries the split `scope`.
 * The reason of every refusal goes to the log (never the token itself).
 */
import { type webcrypto, X509Certificate } from 'node:crypto';
import { SvcError } from '@svc/shared';
import { decodeProtectedHeader, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions, jwtVerify } from 'jose';
import type { Logger } from 'pino';
import { AuthorityKeySet } from './admin-token-keys.js';

export type AdminRole = 'admin' | 'auditor' | 'automation' | 'member';

export const ADMIN_ROLES: readonly AdminRole[] = ['admin', 'auditor', 'automation', 'member'];

/** The header algorithms the relay accepts. */
export const ADMIN_TOKEN_ALGORITHMS: readonly string[] = ['RS256', 'ES256', 'EdDSA'];

/** Allowed clock difference with the authority for exp / nbf / iat. */
export const ADMIN_TOKEN_CLOCK_TOLERANCE_SECONDS = 5;

/** Longer bearer tokens are refused without being parsed. */
const MAX_TOKEN_LENGTH = 16 * 1024;

export interface AdminAuthorityConfig {
  /** https only. */
  issuer: string;
  audience: string;
  /** The required `azp`. */
  clientId: string;
  /** https only; default from the issuer's discovery document (jwks_uri). */
  jwksUrl?: string;
  /** Extra CA bundle (PEM text) trusted for the authority's TLS, in addition to the system CAs. */
  caPem?: string;
  /** svc_deployment_id must equal this. */
  deploymentId: string;
  /** svc_tenant_id must be one of these. */
  tenants: string[];
}

export interface AdminPrincipal {
  subject: string;
  tenantId: string;
  deploymentId: string;
  roles: AdminRole[];
  scopes: string[];
  clientId: string;
}

export interface AdminTokenVerifier {
  /** Resolves the principal, or rejects with an SvcError (codes in the module comment). */
  verify(token: string): Promise<AdminPrincipal>;
}

function configInvalid(message: string): SvcError {
  return new SvcError('config_invalid', message);
}

function requireHttpsUrl(value: unknown, what: string): URL {
  if (typeof value !== 'string' || !URL.canParse(value)) {
    throw configInvalid(`The external authority ${what} must be an https URL; got ${JSON.stringify(value)}.`);
  }
  const url = new URL(value);
  if (url.protocol !== 'https:') {
    throw configInvalid(`The external authority ${what} must be an https URL; got ${JSON.stringify(value)}.`);
  }
  return url;
}

function requireText(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    throw configInvalid(`The external authority ${what} must be set (a non-empty string).`);
  }
  return value;
}

function validateConfig(config: AdminAuthorityConfig): { jwksUrl: URL | undefined } {
  requireHttpsUrl(config.issuer, 'issuer (SVC_RELAY_EXTERNAL_AUTHORITY_ISSUER)');
  const jwksUrl =
    config.jwksUrl === undefined
      ? undefined
      : requireHttpsUrl(config.jwksUrl, 'key-set URL (SVC_RELAY_EXTERNAL_AUTHORITY_JWKS_URL)');
  requireText(config.audience, 'audience (SVC_RELAY_EXTERNAL_AUTHORITY_AUDIENCE)');
  requireText(config.clientId, 'client id (SVC_RELAY_EXTERNAL_AUTHORITY_CLIENT_ID)');
  requireText(config.deploymentId, 'deployment id (SVC_RELAY_DEPLOYMENT_ID)');
  if (!Array.isArray(config.tenants) || config.tenants.length === 0) {
    throw configInvalid('The allowed tenants (SVC_RELAY_TENANTS) must list at least one tenant id.');
  }
  for (const tenant of config.tenants) requireText(tenant, 'tenant list (SVC_RELAY_TENANTS) entry');
  if (config.caPem !== undefined) {
    try {
      new X509Certificate(config.caPem);
    } catch {
      throw configInvalid(
        'The external authority CA bundle (SVC_RELAY_EXTERNAL_AUTHORITY_CA_FILE) is not a PEM certificate.',
      );
    }
  }
  return { jwksUrl };
}

function isRole(value: unknown): value is AdminRole {
  return typeof value === 'string' && (ADMIN_ROLES as readonly string[]).includes(value);
}

function joseCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}

/** Timing of the verifier (not settings: tests shorten it). */
export interface AdminTokenVerifierTiming {
  /** How long one fetch of the authority's key set may take in all (default KEY_SET_FETCH_DEADLINE_MS). */
  keySetFetchDeadlineMs?: number;
}

export function createAdminTokenVerifier(
  config: AdminAuthorityConfig,
  logger: Logger,
  timing: AdminTokenVerifierTiming = {},
): AdminTokenVerifier {
  const { jwksUrl } = validateConfig(config);
  const log = logger.child({ component: 'admin-token' });
  const keySet = new AuthorityKeySet({
    issuer: config.issuer,
    jwksUrl,
    caPem: config.caPem,
    logger: log,
    fetchDeadlineMs: timing.keySetFetchDeadlineMs,
  });
  const tenants = new Set(config.tenants);
  const options: JWTVerifyOptions = {
    issuer: config.issuer,
    audience: config.audience,
    algorithms: [...ADMIN_TOKEN_ALGORITHMS],
    requiredClaims: ['exp', 'sub'],
    clockTolerance: ADMIN_TOKEN_CLOCK_TOLERANCE_SECONDS,
  };

  function refuse(
    code: 'invalid_token' | 'unsupported_algorithm' | 'invalid_client_id' | 'invalid_roles' | 'binding_mismatch',
    reason: string,
    fields: Record<string, unknown> = {},
  ): SvcError {
    log.info({ ...fields, code, reason }, 'administrator token refused');
    return new SvcError(code, undefined, { detail: reason });
  }

  /** jwtVerify, trying each candidate when several keys of the set match the header. */
  async function verifyWith(token: string, keys: JWTVerifyGetKey): Promise<JWTPayload> {
    try {
      return (await jwtVerify(token, keys, options)).payload;
    } catch (error) {
      if (joseCode(error) !== 'ERR_JWKS_MULTIPLE_MATCHING_KEYS') throw error;
      let last: unknown = error;
      for await (const key of error as AsyncIterable<webcrypto.CryptoKey>) {
        try {
          return (await jwtVerify(token, key, options)).payload;
        } catch (inner) {
          if (joseCode(inner) !== 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') throw inner;
          last = inner;
        }
      }
      throw joseCode(last) === 'ERR_JWKS_MULTIPLE_MATCHING_KEYS'
        ? new Error('no matching key could be imported')
        : last;
    }
  }

  async function verifySignature(token: string): Promise<JWTPayload> {
    const keys = await keySet.current();
    try {
      return await verifyWith(token, keys);
    } catch (error) {
      if (joseCode(error) !== 'ERR_JWKS_NO_MATCHING_KEY') throw error;
      const fresh = await keySet.refreshForUnknownKid();
      if (fresh === undefined) throw error;
      return await verifyWith(token, fresh);
    }
  }

  function refusalFor(error: unknown): SvcError {
    if (error instanceof SvcError) return error;
    const code = joseCode(error);
    const message = error instanceof Error ? error.message : String(error);
    switch (code) {
      case 'ERR_JWT_EXPIRED':
        return refuse('invalid_token', 'the token has expired');
      case 'ERR_JWT_CLAIM_VALIDATION_FAILED': {
        const claim = (error as { claim?: unknown }).claim;
        return refuse('invalid_token', `claim check failed: ${message}`, { claim });
      }
      case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
        return refuse('invalid_token', 'the signature does not verify with the authority key');
      case 'ERR_JWKS_NO_MATCHING_KEY':
        return refuse('invalid_token', 'no key of the authority key set matches the token header (unknown kid)');
      case 'ERR_JOSE_ALG_NOT_ALLOWED':
        return refuse('unsupported_algorithm', message);
      default:
        return refuse('invalid_token', `the token is malformed: ${message}`, { joseCode: code });
    }
  }

  async function verify(token: string): Promise<AdminPrincipal> {
    if (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_LENGTH) {
      throw refuse('invalid_token', 'the token is empty or too long');
    }
    if (token.split('.').length !== 3) throw refuse('invalid_token', 'the token is not a compact JWS');
    let alg: unknown;
    let kid: unknown;
    try {
      ({ alg, kid } = decodeProtectedHeader(token));
    } catch {
      throw refuse('invalid_token', 'the token header is not decodable');
    }
    if (typeof alg !== 'string' || !ADMIN_TOKEN_ALGORITHMS.includes(alg)) {
      throw refuse('unsupported_algorithm', `header alg ${JSON.stringify(alg)} is not RS256, ES256 or EdDSA`, { alg });
    }

    let payload: JWTPayload;
    try {
      payload = await verifySignature(token);
    } catch (error) {
      throw refusalFor(error);
    }

    const { sub, azp, roles, scope } = payload;
    const deploymentId = payload.svc_deployment_id;
    const tenantId = payload.svc_tenant_id;
    const who = { alg, kid, sub };

    if (typeof sub !== 'string' || sub === '') throw refuse('invalid_token', 'sub is missing or empty', who);
    if (typeof azp !== 'string' || azp === '') {
      throw refuse('invalid_client_id', 'azp is missing or empty', who);
    }
    if (azp !== config.clientId) {
      throw refuse('invalid_client_id', 'azp is not the configured client id', { ...who, azp });
    }
    if (!Array.isArray(roles) || roles.length === 0) {
      throw refuse('invalid_roles', 'roles is missing, empty or not an array', who);
    }
    if (!roles.every(isRole)) throw refuse('invalid_roles', 'roles holds an unknown role', { ...who, roles });
    if (typeof deploymentId !== 'string' || deploymentId === '') {
      throw refuse('invalid_token', 'svc_deployment_id is missing or empty', who);
    }
    if (deploymentId !== config.deploymentId) {
      throw refuse('binding_mismatch', 'svc_deployment_id is not this deployment', { ...who, deploymentId });
    }
    if (typeof tenantId !== 'string' || tenantId === '') {
      throw refuse('invalid_token', 'svc_tenant_id is missing or empty', who);
    }
    if (!tenants.has(tenantId)) {
      throw refuse('binding_mismatch', 'svc_tenant_id is not an allowed tenant', { ...who, tenantId });
    }
    if (scope !== undefined && typeof scope !== 'string') throw refuse('invalid_token', 'scope is not a string', who);

    const principal: AdminPrincipal = {
      subject: sub,
      tenantId,
      deploymentId,
      roles: [...new Set(roles)],
      scopes: scope === undefined ? [] : scope.split(' ').filter((s) => s !== ''),
      clientId: azp,
    };
    log.debug({ sub, tenantId, roles: principal.roles }, 'administrator token accepted');
    return principal;
  }

  return { verify };
}
