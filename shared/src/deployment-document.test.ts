import { generateKeyPairSync } from 'node:crypto';
import { CompactSign, exportJWK } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { explainDeploymentDocument, type TrustBundle, verifyDeploymentDocument } from './deployment-document.js';

const signer = generateKeyPairSync('ed25519');
const other = generateKeyPairSync('ed25519');
const issued = '2026-01-01T00:00:00.000Z';
const expires = '2026-04-01T00:00:00.000Z';
let bundle: TrustBundle;

function sign(payload: unknown, header: Record<string, unknown> = {}, key = signer.privateKey): Promise<string> {
  const bytes = new TextEncoder().encode(typeof payload === 'string' ? payload : JSON.stringify(payload));
  return new CompactSign(bytes)
    .setProtectedHeader({ alg: 'EdDSA', typ: 'svc-deployment+jws', kid: 's1', ...header })
    .sign(key);
}

const doc = (over: Record<string, unknown> = {}) => ({
  typ: 'svc.deployment/v1',
  deployment_id: 'dep-1',
  api_url: 'https://relay.example',
  leaf_url: null,
  tenants: ['acme'],
  relay_keys: [],
  issued_at: issued,
  expires_at: expires,
  ...over,
});

beforeAll(async () => {
  bundle = {
    typ: 'svc.trust-bundle/v1',
    deployment_id: 'dep-1',
    signer_keys: [{ kid: 's1', jwk: await exportJWK(signer.publicKey) }],
    created_at: issued,
  };
});

const during = { now: new Date('2026-02-01T00:00:00Z') };

describe('explainDeploymentDocument', () => {
  it('lists every step of a document that verifies, and returns it', async () => {
    const r = await explainDeploymentDocument(await sign(doc()), bundle, during);
    expect(r.failed).toBeUndefined();
    expect(r.passed.map((p) => p.step)).toEqual(['format', 'signer', 'signature', 'payload', 'deployment', 'validity']);
    expect(r.passed.at(-1)?.detail).toBe(`issued ${issued}, valid until ${expires}`);
    expect(r.doc?.deployment_id).toBe('dep-1');
  });

  // each case: the step that fails, its code, and the steps passed before it
  const cases: Array<
    [string, () => Promise<string>, string, string, number, { now?: Date; expectedDeploymentId?: string }?]
  > = [
    ['not a JWS', async () => 'a.b', 'format', 'deployment_malformed', 0],
    [
      'a damaged header',
      async () => `!!.${(await sign(doc())).split('.').slice(1).join('.')}`,
      'format',
      'deployment_malformed',
      0,
    ],
    ['another JWS type', () => sign(doc(), { typ: 'JWT' }), 'format', 'deployment_untrusted', 0],
    ['a signer the bundle does not list', () => sign(doc(), { kid: 's2' }), 'signer', 'deployment_untrusted', 1],
    ['a signature by another key', () => sign(doc(), {}, other.privateKey), 'signature', 'deployment_untrusted', 2],
    ['a payload that is not JSON', () => sign('not json'), 'payload', 'deployment_malformed', 3],
    ['a payload of another type', () => sign(doc({ typ: 'x' })), 'payload', 'deployment_malformed', 3],
    [
      'another deployment than the bundle',
      () => sign(doc({ deployment_id: 'dep-2' })),
      'deployment',
      'deployment_mismatch',
      4,
    ],
    [
      'another deployment than expected',
      () => sign(doc()),
      'deployment',
      'deployment_mismatch',
      4,
      { ...during, expectedDeploymentId: 'dep-9' },
    ],
    ['an expired document', () => sign(doc()), 'validity', 'deployment_expired', 5, { now: new Date(expires) }],
  ];
  it.each(cases)(
    '%s: fails at its step, with the error verify throws',
    async (_, make, step, code, before, opts = during) => {
      const jws = await make();
      const r = await explainDeploymentDocument(jws, bundle, opts);
      expect(r.failed?.step).toBe(step);
      expect(r.failed?.error.code).toBe(code);
      expect(r.passed).toHaveLength(before);
      await expect(verifyDeploymentDocument(jws, bundle, opts)).rejects.toThrow(r.failed?.error.message);
      // the content is the signer's once the payload passed, whatever fails later
      expect(r.doc !== undefined).toBe(before >= 4);
    },
  );
});
