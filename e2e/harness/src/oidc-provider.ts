/**
 * A real OpenID authority for tests: `oidc-provider` v8 served over https.
 *
 * How it works
 * - `generateTestCertificates()` makes a throw-away CA and a certificate for 127.0.0.1;
 *   a node:https server with it listens on 127.0.0.1 (random port) and hands every
 *   request to the provider. The issuer is `https://127.0.0.1:<port>`; discovery is at
 *   `/.well-known/openid-configuration`, the key set at `/jwks`, tokens at `/token`.
 *   Clients must trust `caPem` (the relay gets it as its extra CA bundle).
 * - The provider signs with three keys: RS256 (default), ES256 and EdDSA (Ed25519), all
 *   published in its key set. A token request picks one with the `alg` override.
 * - There is one confidential client per token kind (`svc-test-<kind>`, client_credentials
 *   only). `token(kind)` performs a real client_credentials request with the resource
 *   indicator = the relay audience; `features.resourceIndicators.getResourceServerInfo`
 *   answers `accessTokenFormat: 'jwt'`, so the access token is a JWT with iss, aud, sub
 *   (= the requesting client id), client_id, iat, exp, jti and scope.
 * - `extraTokenClaims` adds the claims the relay checks, from the kind's profile:
 *   `azp`, `roles`, `svc_deployment_id`, `svc_tenant_id`. `azp` is deliberately NOT the
 *   requesting client: every kind except `wrong-azp` carries `clientId` (the one id the
 *   relay is configured with), as the broker's claim script would for the operator app.
 * - Only the admin, automation, other-tenant, other-deployment and wrong-azp clients may
 *   request the scope `enrollment:grant`, and `token()` requests it for them; the others
 *   get tokens without a scope claim.
 * - Per-request overrides (expiry, audience, a removed or replaced claim, the signing
 *   alg) travel as an `x-svc-test-case` header naming an entry of a map; the provider's
 *   `formats.customizers.jwt` applies them to the payload before the provider signs.
 *   So even a "wrong" token is a real provider-signed token.
 * - `sign()` signs any payload with the provider's own private key, for hand-crafted
 *   cases; tokens with other algorithms (HS256, ES384, none) are made with jose directly.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { AdminAuthorityConfig } from '@svc/relay';
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import { generateTestCertificates } from './ca.js';

export type TestSigningAlg = 'RS256' | 'ES256' | 'EdDSA';

/** The kinds of client the authority knows; each is one registered client. */
export const TEST_TOKEN_KINDS = [
  'admin',
  'automation',
  'auditor',
  'member',
  /** admin of a tenant the relay does not allow */
  'other-tenant',
  /** admin bound to another deployment */
  'other-deployment',
  /** admin client that may not request enrollment:grant */
  'no-scope',
  /** admin whose azp is another client id */
  'wrong-azp',
  /** roles: [] */
  'empty-roles',
  /** roles: ['admin', 'owner'] */
  'unknown-role',
] as const;

export type TestTokenKind = (typeof TEST_TOKEN_KINDS)[number];

export interface TestTokenOverrides {
  /** Signing key of the provider; default RS256. */
  alg?: TestSigningAlg;
  /** Replaces azp; null removes it. */
  azp?: string | null;
  /** Replaces roles (any JSON value); null removes it. */
  roles?: unknown;
  /** Replaces svc_deployment_id; null removes it. */
  deploymentId?: string | null;
  /** Replaces svc_tenant_id; null removes it. */
  tenantId?: string | null;
  /** Replaces the scope claim; null removes it. */
  scope?: string | null;
  /** Replaces aud (string or array). */
  audience?: string | string[];
  /** exp = now + expiresIn seconds; negative for an expired token (iat is moved back then). */
  expiresIn?: number;
  /** nbf = now + notBefore seconds. */
  notBefore?: number;
  /** Merged last into the payload; a null value removes that claim. */
  claims?: Record<string, unknown>;
}

export interface TestAuthorityOptions {
  deploymentId: string;
  tenants: string[];
  /** The relay audience (resource indicator); default https://relay.svc.test/api. */
  audience?: string;
  /** The azp of every happy-path token, i.e. the client id the relay is configured with; default svc-operator-app. */
  clientId?: string;
  /** Access token lifetime in seconds; default 300. */
  accessTokenTtl?: number;
}

export interface TestAuthority {
  issuer: string;
  /** The provider's key-set URL (also advertised by discovery). */
  jwksUrl: string;
  /** CA certificate to trust for the provider's TLS. */
  caPem: string;
  audience: string;
  /** The azp carried by every kind except wrong-azp. */
  clientId: string;
  deploymentId: string;
  tenants: string[];
  /** svc_tenant_id of the other-tenant kind (not among `tenants`). */
  otherTenantId: string;
  /** svc_deployment_id of the other-deployment kind. */
  otherDeploymentId: string;
  /** azp of the wrong-azp kind. */
  wrongClientId: string;
  /** The relay authority settings matching this authority. */
  config: AdminAuthorityConfig;
  /** A real client_credentials access token of that kind (overrides applied by the provider). */
  token(kind: TestTokenKind, overrides?: TestTokenOverrides): Promise<string>;
  /** The claims a token of that kind carries (iat/exp/jti left out), for hand-crafted tokens. */
  claims(kind?: TestTokenKind): JWTPayload;
  /** Signs a payload with the provider's own private key (kid and alg of that key unless given). */
  sign(payload: JWTPayload, options?: { alg?: TestSigningAlg; kid?: string; typ?: string }): Promise<string>;
  /** How many requests reached the discovery, key-set and token endpoints so far. */
  requests(): { discovery: number; jwks: number; token: number };
  close(): Promise<void>;
}

interface Profile {
  roles: unknown;
  deploymentId: string;
  tenantId: string;
  azp: string;
  grantScope: boolean;
}

/** The part of oidc-provider's Provider this helper uses. */
interface OidcProvider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  on(event: string, listener: (...args: unknown[]) => void): void;
}
type OidcProviderClass = new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;
/** The koa context parts the hooks read. */
interface HookContext {
  get(header: string): string;
}
interface HookToken {
  clientId: string;
}

/**
 * oidc-provider 8 ships no type declarations (they live in @types/oidc-provider, which is
 * not installed); a non-literal specifier keeps the compiler from looking for them.
 */
async function loadProvider(): Promise<OidcProviderClass> {
  const mod = (await import('oidc-provider' as string)) as { default: OidcProviderClass };
  return mod.default;
}

const GRANT_SCOPE = 'enrollment:grant';

/** A tiny in-memory adapter (the built-in one prints a development-only notice). */
function memoryAdapterClass() {
  const store = new Map<string, Record<string, unknown>>();
  return class MemoryAdapter {
    readonly #name: string;
    constructor(name: string) {
      this.#name = name;
    }
    #key(id: string): string {
      return `${this.#name}:${id}`;
    }
    async upsert(id: string, payload: Record<string, unknown>): Promise<void> {
      store.set(this.#key(id), payload);
    }
    async find(id: string): Promise<Record<string, unknown> | undefined> {
      return store.get(this.#key(id));
    }
    async findByUserCode(): Promise<undefined> {
      return undefined;
    }
    async findByUid(): Promise<undefined> {
      return undefined;
    }
    async consume(id: string): Promise<void> {
      const found = store.get(this.#key(id));
      if (found) found.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string): Promise<void> {
      store.delete(this.#key(id));
    }
    async revokeByGrantId(): Promise<void> {}
  };
}

async function generateSigningKeys(): Promise<Record<TestSigningAlg, { kid: string; privateJwk: JWK }>> {
  const make = async (alg: TestSigningAlg, options: { modulusLength?: number; crv?: string }) => {
    const { privateKey } = await generateKeyPair(alg, { ...options, extractable: true });
    const kid = `test-${alg.toLowerCase()}-${randomUUID().slice(0, 8)}`;
    return { kid, privateJwk: { ...(await exportJWK(privateKey)), kid, alg, use: 'sig' } };
  };
  const [rs, es, ed] = await Promise.all([
    make('RS256', { modulusLength: 2048 }),
    make('ES256', {}),
    make('EdDSA', { crv: 'Ed25519' }),
  ]);
  return { RS256: rs, ES256: es, EdDSA: ed };
}

function post(
  url: URL,
  body: URLSearchParams,
  headers: Record<string, string>,
  ca: string,
): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        ca,
        agent: false,
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) });
          } catch {
            reject(new Error(`token endpoint answered ${res.statusCode} with non-JSON: ${text.slice(0, 200)}`));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body.toString());
  });
}

export async function startTestAuthority(options: TestAuthorityOptions): Promise<TestAuthority> {
  const audience = options.audience ?? 'https://relay.svc.test/api';
  const clientId = options.clientId ?? 'svc-operator-app';
  const { deploymentId, tenants } = options;
  const defaultTenant = tenants[0];
  if (defaultTenant === undefined) throw new Error('startTestAuthority needs at least one tenant');
  const otherTenantId = 'tenant-not-allowed';
  const otherDeploymentId = `${deploymentId}-other`;
  const wrongClientId = 'svc-some-other-app';

  const admin = { deploymentId, tenantId: defaultTenant, azp: clientId, grantScope: true, roles: ['admin'] };
  const plain = { ...admin, grantScope: false };
  const profiles: Record<TestTokenKind, Profile> = {
    admin,
    automation: { ...admin, roles: ['automation'] },
    auditor: { ...plain, roles: ['auditor'] },
    member: { ...plain, roles: ['member'] },
    'other-tenant': { ...admin, tenantId: otherTenantId },
    'other-deployment': { ...admin, deploymentId: otherDeploymentId },
    'no-scope': plain,
    'wrong-azp': { ...admin, azp: wrongClientId },
    'empty-roles': { ...plain, roles: [] },
    'unknown-role': { ...plain, roles: ['admin', 'owner'] },
  };
  const clientIdOf = (kind: TestTokenKind) => `svc-test-${kind}`;
  const kindOf = new Map(TEST_TOKEN_KINDS.map((kind) => [clientIdOf(kind), kind]));
  const secret = randomBytes(24).toString('base64url');

  const [certs, keys, Provider] = await Promise.all([
    generateTestCertificates(),
    generateSigningKeys(),
    loadProvider(),
  ]);

  const counts = { discovery: 0, jwks: 0, token: 0 };
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer({ key: certs.keyPem, cert: certs.certPem }, (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/.well-known/openid-configuration') counts.discovery += 1;
    else if (path === '/jwks') counts.jwks += 1;
    else if (path === '/token') counts.token += 1;
    if (handler === undefined) {
      res.statusCode = 503;
      res.end();
      return;
    }
    handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const issuer = `https://127.0.0.1:${port}`;

  const pending = new Map<string, TestTokenOverrides>();
  const overridesOf = (ctx: HookContext): TestTokenOverrides => pending.get(ctx.get('x-svc-test-case')) ?? {};

  const provider = new Provider(issuer, {
    adapter: memoryAdapterClass(),
    clients: TEST_TOKEN_KINDS.map((kind) => ({
      client_id: clientIdOf(kind),
      client_secret: secret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      ...(profiles[kind].grantScope ? { scope: GRANT_SCOPE } : { scope: 'openid' }),
    })),
    jwks: { keys: [keys.RS256.privateJwk, keys.ES256.privateJwk, keys.EdDSA.privateJwk] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    scopes: ['openid', GRANT_SCOPE],
    ttl: { ClientCredentials: () => options.accessTokenTtl ?? 300 },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx: HookContext, resourceIndicator: string) => {
          if (resourceIndicator !== audience) {
            throw new Error(`the test authority knows only the resource ${audience}`);
          }
          return {
            scope: GRANT_SCOPE,
            audience,
            accessTokenTTL: options.accessTokenTtl ?? 300,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: overridesOf(ctx).alg ?? 'RS256' } },
          };
        },
      },
    },
    extraTokenClaims: (_ctx: HookContext, token: HookToken) => {
      const kind = kindOf.get(token.clientId);
      if (kind === undefined) return undefined;
      const p = profiles[kind];
      return { azp: p.azp, roles: p.roles, svc_deployment_id: p.deploymentId, svc_tenant_id: p.tenantId };
    },
    formats: {
      customizers: {
        jwt: (ctx: HookContext, _token: unknown, jwt: { payload: Record<string, unknown> }) => {
          applyOverrides(jwt.payload, overridesOf(ctx));
        },
      },
    },
  });
  provider.on('server_error', (_ctx: unknown, error: unknown) => {
    console.error('test authority server_error', error);
  });
  handler = provider.callback();

  async function token(kind: TestTokenKind, overrides: TestTokenOverrides = {}): Promise<string> {
    const profile = profiles[kind];
    if (profile === undefined) throw new Error(`unknown test token kind ${kind}`);
    const caseId = randomUUID();
    pending.set(caseId, overrides);
    try {
      const body = new URLSearchParams({ grant_type: 'client_credentials', resource: audience });
      if (profile.grantScope) body.set('scope', GRANT_SCOPE);
      const basic = Buffer.from(`${encodeURIComponent(clientIdOf(kind))}:${encodeURIComponent(secret)}`).toString(
        'base64',
      );
      const { status, json } = await post(
        new URL('/token', issuer),
        body,
        { authorization: `Basic ${basic}`, 'x-svc-test-case': caseId },
        certs.caPem,
      );
      const accessToken = (json as { access_token?: unknown }).access_token;
      if (status !== 200 || typeof accessToken !== 'string') {
        throw new Error(`test authority refused a ${kind} token: ${status} ${JSON.stringify(json)}`);
      }
      return accessToken;
    } finally {
      pending.delete(caseId);
    }
  }

  function claims(kind: TestTokenKind = 'admin'): JWTPayload {
    const p = profiles[kind];
    return {
      iss: issuer,
      aud: audience,
      sub: clientIdOf(kind),
      client_id: clientIdOf(kind),
      azp: p.azp,
      roles: p.roles,
      svc_deployment_id: p.deploymentId,
      svc_tenant_id: p.tenantId,
      ...(p.grantScope ? { scope: GRANT_SCOPE } : {}),
    };
  }

  async function sign(
    payload: JWTPayload,
    signOptions: { alg?: TestSigningAlg; kid?: string; typ?: string } = {},
  ): Promise<string> {
    const alg = signOptions.alg ?? 'RS256';
    const { kid, privateJwk } = keys[alg];
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iat: now, exp: now + 300, ...payload })
      .setProtectedHeader({ alg, kid: signOptions.kid ?? kid, typ: signOptions.typ ?? 'at+jwt' })
      .sign(privateJwk);
  }

  async function close(): Promise<void> {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    caPem: certs.caPem,
    audience,
    clientId,
    deploymentId,
    tenants: [...tenants],
    otherTenantId,
    otherDeploymentId,
    wrongClientId,
    config: { issuer, audience, clientId, caPem: certs.caPem, deploymentId, tenants: [...tenants] },
    token,
    claims,
    sign,
    requests: () => ({ ...counts }),
    close,
  };
}

function applyOverrides(payload: Record<string, unknown>, o: TestTokenOverrides): void {
  const set = (claim: string, value: unknown) => {
    if (value === undefined) return;
    if (value === null) delete payload[claim];
    else payload[claim] = value;
  };
  set('azp', o.azp);
  set('roles', o.roles);
  set('svc_deployment_id', o.deploymentId);
  set('svc_tenant_id', o.tenantId);
  set('scope', o.scope);
  set('aud', o.audience);
  const now = Math.floor(Date.now() / 1000);
  if (o.expiresIn !== undefined) {
    if (o.expiresIn <= 0) payload.iat = now + o.expiresIn - 300;
    payload.exp = now + o.expiresIn;
  }
  if (o.notBefore !== undefined) payload.nbf = now + o.notBefore;
  for (const [claim, value] of Object.entries(o.claims ?? {})) set(claim, value);
}
