/**
 * The administrator token verifier against a real oidc-provider served over https
 * (helpers/oidc-provider.ts). Tokens the provider cannot make (other algorithms,
 * unsecured, foreign keys) are made with jose here.
 */
import { randomUUID } from 'node:crypto';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { SvcError } from '@svc/shared';
import { generateTestCertificates } from '@svc/test-harness/ca';
import { startTestAuthority, type TestAuthority } from '@svc/test-harness/oidc-provider';
import { base64url, decodeJwt, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import {
  type AdminAuthorityConfig,
  type AdminTokenVerifier,
  type AdminTokenVerifierTiming,
  createAdminTokenVerifier,
} from '../src/auth/admin-token.js';
import { KEY_SET_COOLDOWN_MS, KEY_SET_MAX_AGE_MS } from '../src/auth/admin-token-keys.js';

const DEPLOYMENT = 'dep-test-1';
const TENANTS = ['tenant-a', 'tenant-b'];

let authority: TestAuthority;
let verifier: AdminTokenVerifier;
const logLines: string[] = [];
const logger = pino({ level: 'debug' }, { write: (line: string) => void logLines.push(line) });

beforeAll(async () => {
  authority = await startTestAuthority({ deploymentId: DEPLOYMENT, tenants: TENANTS });
  verifier = createAdminTokenVerifier(authority.config, logger);
});

afterAll(async () => {
  await authority?.close();
});

async function refusal(promise: Promise<unknown>): Promise<SvcError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SvcError);
  return error as SvcError;
}

/** Expects the refusal code and status; returns the reason the verifier logged. */
async function expectCode(token: string | Promise<string>, code: string, status = 401): Promise<string> {
  return expectCodeWith(verifier, await token, code, status);
}

function unsecured(payload: JWTPayload): string {
  const enc = (v: unknown) => base64url.encode(JSON.stringify(v));
  return `${enc({ alg: 'none', typ: 'JWT' })}.${enc(payload)}.`;
}

function freshVerifier(
  overrides: Partial<AdminAuthorityConfig> = {},
  timing: AdminTokenVerifierTiming = {},
): AdminTokenVerifier {
  return createAdminTokenVerifier({ ...authority.config, ...overrides }, logger, timing);
}

/** GET over https trusting `ca`: the body as text. */
function getText(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Pieces a trickled answer is cut into, and the pause after each: the whole takes at least 3 s. */
const TRICKLE_PIECES = 200;
const TRICKLE_PAUSE_MS = 15;

/**
 * A real https server (its own throw-away CA) that answers every GET 200 with the body
 * `bodyFor` gives for its URL, cut into TRICKLE_PIECES pieces with a pause after each:
 * never idle long enough for an idle timeout, and done only after all the pauses.
 */
async function trickleServer(bodyFor: (url: string) => string) {
  const certs = await generateTestCertificates();
  let requests = 0;
  const server = createServer({ key: certs.keyPem, cert: certs.certPem }, (_req, res) => {
    requests += 1;
    const bytes = Buffer.from(bodyFor(url));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': bytes.length });
    const size = Math.ceil(bytes.length / TRICKLE_PIECES);
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const next = () => {
      if (res.destroyed) return;
      res.write(bytes.subarray(sent, sent + size));
      sent += size;
      if (sent >= bytes.length) res.end();
      else timer = setTimeout(next, TRICKLE_PAUSE_MS);
    };
    res.on('close', () => clearTimeout(timer));
    next();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    caPem: certs.caPem,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('accepted tokens', () => {
  test('admin token (RS256): principal with enrollment:grant', async () => {
    const principal = await verifier.verify(await authority.token('admin'));
    expect(principal).toEqual({
      subject: 'svc-test-admin',
      tenantId: 'tenant-a',
      deploymentId: DEPLOYMENT,
      roles: ['admin'],
      scopes: ['enrollment:grant'],
      clientId: authority.clientId,
    });
  });

  test('automation token (ES256): principal with enrollment:grant', async () => {
    const principal = await verifier.verify(await authority.token('automation', { alg: 'ES256' }));
    expect(principal.roles).toEqual(['automation']);
    expect(principal.scopes).toContain('enrollment:grant');
    expect(principal.subject).toBe('svc-test-automation');
  });

  test('a token signed with the EdDSA key is accepted', async () => {
    const principal = await verifier.verify(await authority.token('admin', { alg: 'EdDSA' }));
    expect(principal.roles).toEqual(['admin']);
  });

  test('auditor and member tokens verify as principals but carry no enrollment:grant scope', async () => {
    const auditor = await verifier.verify(await authority.token('auditor'));
    expect(auditor.roles).toEqual(['auditor']);
    expect(auditor.scopes).toEqual([]);
    const member = await verifier.verify(await authority.token('member'));
    expect(member.roles).toEqual(['member']);
    expect(member.scopes).not.toContain('enrollment:grant');
  });

  test('an admin client without the scope yields an admin principal without scopes', async () => {
    const principal = await verifier.verify(await authority.token('no-scope'));
    expect(principal.roles).toEqual(['admin']);
    expect(principal.scopes).toEqual([]);
  });

  test('the second allowed tenant, several roles and several scopes', async () => {
    const principal = await verifier.verify(
      await authority.token('admin', {
        tenantId: 'tenant-b',
        roles: ['admin', 'auditor', 'admin'],
        scope: 'enrollment:grant  profile',
      }),
    );
    expect(principal.tenantId).toBe('tenant-b');
    expect(principal.roles).toEqual(['admin', 'auditor']);
    expect(principal.scopes).toEqual(['enrollment:grant', 'profile']);
  });

  test('aud as an array containing the audience is accepted', async () => {
    const principal = await verifier.verify(
      await authority.token('admin', { audience: ['https://other.example/api', authority.audience] }),
    );
    expect(principal.subject).toBe('svc-test-admin');
  });

  test('an explicit https key-set URL is used without discovery', async () => {
    const before = authority.requests();
    const v = freshVerifier({ jwksUrl: authority.jwksUrl });
    await v.verify(await authority.token('admin'));
    const after = authority.requests();
    expect(after.discovery).toBe(before.discovery);
    expect(after.jwks).toBe(before.jwks + 1);
  });
});

describe('header algorithm', () => {
  test.each([
    ['HS256', async (p: JWTPayload) => new SignJWT(p).setProtectedHeader({ alg: 'HS256' }).sign(new Uint8Array(32))],
    [
      'ES384',
      async (p: JWTPayload) => {
        const { privateKey } = await generateKeyPair('ES384');
        return new SignJWT(p).setProtectedHeader({ alg: 'ES384', kid: 'any' }).sign(privateKey);
      },
    ],
    [
      'PS256',
      async (p: JWTPayload) => {
        const { privateKey } = await generateKeyPair('PS256');
        return new SignJWT(p).setProtectedHeader({ alg: 'PS256' }).sign(privateKey);
      },
    ],
    ['none', async (p: JWTPayload) => unsecured(p)],
  ])('%s → unsupported_algorithm, decided before any key lookup', async (_alg, make) => {
    const now = Math.floor(Date.now() / 1000);
    const token = await make({ ...authority.claims('admin'), iat: now, exp: now + 300 });
    const v = freshVerifier();
    const before = authority.requests();
    const error = await refusal(v.verify(token));
    expect(error.code).toBe('unsupported_algorithm');
    expect(error.status).toBe(401);
    expect(authority.requests()).toEqual(before);
  });

  test('a header without alg is unsupported_algorithm', async () => {
    const enc = (v: unknown) => base64url.encode(JSON.stringify(v));
    await expectCode(`${enc({ typ: 'JWT' })}.${enc(authority.claims())}.c2ln`, 'unsupported_algorithm');
  });
});

describe('signature, keys and time → invalid_token', () => {
  test('a payload changed after signing', async () => {
    const token = await authority.token('auditor');
    const [header, , signature] = token.split('.');
    const forged = base64url.encode(JSON.stringify({ ...decodeJwt(token), roles: ['admin'] }));
    expect(await expectCode(`${header}.${forged}.${signature}`, 'invalid_token')).toMatch(/signature/);
  });

  test('a foreign key under the kid of the authority key', async () => {
    const real = await authority.token('admin');
    const { kid } = JSON.parse(new TextDecoder().decode(base64url.decode(real.split('.')[0]!))) as { kid: string };
    const { privateKey } = await generateKeyPair('RS256');
    const token = await new SignJWT({ ...decodeJwt(real) }).setProtectedHeader({ alg: 'RS256', kid }).sign(privateKey);
    expect(await expectCode(token, 'invalid_token')).toMatch(/signature/);
  });

  test('an unknown kid: one rate-limited refetch, then invalid_token', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const v = freshVerifier();
      const foreign = async () => {
        const { privateKey } = await generateKeyPair('ES256');
        const now = Math.floor(Date.now() / 1000);
        return new SignJWT({ ...authority.claims(), iat: now, exp: now + 300 })
          .setProtectedHeader({ alg: 'ES256', kid: `unknown-${randomUUID()}` })
          .sign(privateKey);
      };
      const start = authority.requests().jwks;
      await v.verify(await authority.token('admin'));
      expect(authority.requests().jwks).toBe(start + 1);
      // Within the cooldown of the first fetch: no refetch.
      expect(await expectCodeWith(v, await foreign(), 'invalid_token')).toMatch(/unknown kid/);
      expect(authority.requests().jwks).toBe(start + 1);
      // After the cooldown: exactly one refetch, then none again.
      vi.setSystemTime(Date.now() + KEY_SET_COOLDOWN_MS + 1000);
      await expectCodeWith(v, await foreign(), 'invalid_token');
      expect(authority.requests().jwks).toBe(start + 2);
      await expectCodeWith(v, await foreign(), 'invalid_token');
      expect(authority.requests().jwks).toBe(start + 2);
      // Valid tokens keep working from the cache, and the set is fetched again after its maximum age.
      await v.verify(await authority.token('automation'));
      expect(authority.requests().jwks).toBe(start + 2);
      vi.setSystemTime(Date.now() + KEY_SET_MAX_AGE_MS + 1000);
      await v.verify(await authority.token('automation'));
      expect(authority.requests().jwks).toBe(start + 3);
    } finally {
      vi.useRealTimers();
    }
  });

  test('expired token', async () => {
    expect(await expectCode(authority.token('admin', { expiresIn: -60 }), 'invalid_token')).toMatch(/expired/);
  });

  test('not yet valid (nbf in the future)', async () => {
    expect(await expectCode(authority.token('admin', { notBefore: 120 }), 'invalid_token')).toMatch(/nbf/);
  });

  test('a token without exp', async () => {
    expect(await expectCode(authority.sign({ ...authority.claims(), exp: undefined }), 'invalid_token')).toMatch(/exp/);
  });

  test('malformed tokens', async () => {
    for (const token of ['', 'abc', 'a.b.c', 'a.b', 'e30.e30.e30.e30.e30', `${'x'.repeat(20_000)}.a.b`]) {
      await expectCode(token, 'invalid_token');
    }
    const header = base64url.encode(JSON.stringify({ alg: 'RS256' }));
    await expectCode(`${header}.not-json.c2ln`, 'invalid_token');
  });
});

describe('issuer and audience → invalid_token', () => {
  test('another issuer, signed by the authority key', async () => {
    const reason = await expectCode(
      authority.token('admin', { claims: { iss: 'https://evil.example' } }),
      'invalid_token',
    );
    expect(reason).toMatch(/iss/);
  });

  test('the same host over http is not the issuer', async () => {
    const httpIssuer = authority.issuer.replace('https:', 'http:');
    expect(await expectCode(authority.token('admin', { claims: { iss: httpIssuer } }), 'invalid_token')).toMatch(/iss/);
  });

  test('a missing iss', async () => {
    expect(await expectCode(authority.token('admin', { claims: { iss: null } }), 'invalid_token')).toMatch(/iss/);
  });

  test('aud as another string', async () => {
    const reason = await expectCode(
      authority.token('admin', { audience: 'https://other.example/api' }),
      'invalid_token',
    );
    expect(reason).toMatch(/aud/);
  });

  test('aud as an array without the audience', async () => {
    const reason = await expectCode(
      authority.token('admin', { audience: ['https://other.example/api', `${authority.audience}/x`] }),
      'invalid_token',
    );
    expect(reason).toMatch(/aud/);
  });

  test('a missing aud', async () => {
    expect(await expectCode(authority.sign({ ...authority.claims(), aud: undefined }), 'invalid_token')).toMatch(/aud/);
  });
});

describe('subject', () => {
  test('an empty sub is invalid_token', async () => {
    expect(await expectCode(authority.token('admin', { claims: { sub: '' } }), 'invalid_token')).toMatch(/sub/);
  });

  test('a missing sub is invalid_token', async () => {
    expect(await expectCode(authority.sign({ ...authority.claims(), sub: undefined }), 'invalid_token')).toMatch(/sub/);
  });
});

describe('azp → invalid_client_id', () => {
  test('azp of another client', async () => {
    await expectCode(authority.token('wrong-azp'), 'invalid_client_id');
  });

  test('azp missing', async () => {
    await expectCode(authority.token('admin', { azp: null }), 'invalid_client_id');
  });

  test('azp empty', async () => {
    await expectCode(authority.token('admin', { azp: '' }), 'invalid_client_id');
  });
});

describe('roles → invalid_roles', () => {
  test('empty roles', async () => {
    await expectCode(authority.token('empty-roles'), 'invalid_roles');
  });

  test('an unknown role beside a known one', async () => {
    await expectCode(authority.token('unknown-role'), 'invalid_roles');
  });

  test('roles missing', async () => {
    await expectCode(authority.token('admin', { roles: null }), 'invalid_roles');
  });

  test('roles not an array', async () => {
    await expectCode(authority.token('admin', { roles: 'admin' }), 'invalid_roles');
    await expectCode(authority.token('admin', { roles: { admin: true } }), 'invalid_roles');
  });

  test('roles with a non-string member or a differently cased name', async () => {
    await expectCode(authority.token('admin', { roles: ['admin', 1] }), 'invalid_roles');
    await expectCode(authority.token('admin', { roles: ['Admin'] }), 'invalid_roles');
  });
});

describe('deployment and tenant bindings', () => {
  test('svc_deployment_id of another deployment → binding_mismatch (403)', async () => {
    await expectCode(authority.token('other-deployment'), 'binding_mismatch', 403);
  });

  test('svc_deployment_id missing or empty → invalid_token', async () => {
    await expectCode(authority.token('admin', { deploymentId: null }), 'invalid_token');
    await expectCode(authority.token('admin', { deploymentId: '' }), 'invalid_token');
  });

  test('svc_tenant_id not allowed → binding_mismatch (403)', async () => {
    await expectCode(authority.token('other-tenant'), 'binding_mismatch', 403);
  });

  test('svc_tenant_id missing or empty → invalid_token', async () => {
    await expectCode(authority.token('admin', { tenantId: null }), 'invalid_token');
    await expectCode(authority.token('admin', { tenantId: '' }), 'invalid_token');
  });

  test('a scope claim that is not a string → invalid_token', async () => {
    await expectCode(authority.token('admin', { claims: { scope: ['enrollment:grant'] } }), 'invalid_token');
  });
});

describe('configuration', () => {
  const refused = (overrides: Partial<AdminAuthorityConfig>): SvcError => {
    let caught: unknown;
    try {
      createAdminTokenVerifier({ ...authority.config, ...overrides }, logger);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SvcError);
    const error = caught as SvcError;
    expect(error.code).toBe('config_invalid');
    expect(error.message).not.toContain('\n');
    return error;
  };

  test('a non-https issuer is refused when the verifier is built', () => {
    expect(refused({ issuer: authority.issuer.replace('https:', 'http:') }).message).toMatch(/issuer.*https/);
    refused({ issuer: 'not a url' });
  });

  test('a non-https key-set URL is refused when the verifier is built', () => {
    expect(refused({ jwksUrl: authority.jwksUrl.replace('https:', 'http:') }).message).toMatch(/key-set URL.*https/);
  });

  test('missing audience, client id, deployment or tenants are refused', () => {
    refused({ audience: '' });
    refused({ clientId: '' });
    refused({ deploymentId: '' });
    refused({ tenants: [] });
    refused({ caPem: 'not a certificate' });
  });
});

describe('authority availability', () => {
  test('without the extra CA the authority TLS is not trusted → authority_unavailable (503)', async () => {
    const v = createAdminTokenVerifier({ ...authority.config, caPem: undefined }, logger);
    await expectCodeWith(v, await authority.token('admin'), 'authority_unavailable', 503);
  });

  test('an unreachable key-set URL → authority_unavailable', async () => {
    const v = freshVerifier({ jwksUrl: 'https://127.0.0.1:1/jwks' });
    await expectCodeWith(v, await authority.token('admin'), 'authority_unavailable', 503);
  });

  describe('an authority that trickles its answer (never idle) is cut off at the fetch deadline', () => {
    /** Far below the trickle's 3 s, so the deadline, not the end of the answer, decides. */
    const deadline: AdminTokenVerifierTiming = { keySetFetchDeadlineMs: 300 };

    test('the key set → authority_unavailable (503), the reason logged', async () => {
      // the authority's real key set: whole, it would verify the token
      const keys = await getText(authority.jwksUrl, authority.caPem);
      const slow = await trickleServer(() => keys);
      try {
        const v = freshVerifier({ jwksUrl: `${slow.url}/jwks`, caPem: slow.caPem }, deadline);
        const reason = await expectCodeWith(v, await authority.token('admin'), 'authority_unavailable', 503);
        expect(reason).toContain(`the key set ${slow.url}/jwks did not arrive in time`);
        expect(slow.requests()).toBe(1);
      } finally {
        await slow.close();
      }
    });

    test('the discovery document → authority_unavailable (503)', async () => {
      // whole, it would name this server as the issuer and the authority's real key set
      const discovery = await trickleServer((url) => JSON.stringify({ issuer: url, jwks_uri: authority.jwksUrl }));
      try {
        const issuer = discovery.url;
        const v = freshVerifier({ issuer, caPem: `${discovery.caPem}${authority.caPem}` }, deadline);
        const token = await authority.token('admin', { claims: { iss: issuer } });
        const reason = await expectCodeWith(v, token, 'authority_unavailable', 503);
        expect(reason).toContain('the discovery document');
        expect(reason).toContain('did not arrive in time');
      } finally {
        await discovery.close();
      }
    });
  });

  test('a discovery document naming another issuer → authority_unavailable', async () => {
    const v = freshVerifier({ issuer: `${authority.issuer}/` });
    await expectCodeWith(v, await authority.token('admin'), 'authority_unavailable', 503);
  });
});

describe('logging', () => {
  test('the refusal reason is logged, the token never', async () => {
    const token = await authority.token('wrong-azp');
    logLines.length = 0;
    await expectCode(token, 'invalid_client_id');
    const text = logLines.join('');
    expect(text).toContain('azp is not the configured client id');
    expect(text).not.toContain(token);
    expect(text).not.toContain(token.split('.')[2]!);
  });
});

async function expectCodeWith(v: AdminTokenVerifier, token: string, code: string, status = 401): Promise<string> {
  logLines.length = 0;
  const error = await refusal(v.verify(token));
  expect(error.code).toBe(code);
  expect(error.status).toBe(status);
  const logged = logLines.map((line) => JSON.parse(line) as { reason?: string; code?: string });
  const reasons = logged.filter((entry) => entry.reason !== undefined);
  expect(reasons.length).toBeGreaterThan(0);
  return reasons.map((entry) => entry.reason).join('; ');
}
