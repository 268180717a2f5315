/** The enrollment code is checked against the trusted deployment before any redemption. */
import { type EnrollmentBindings, encodeEnrollmentCode, enrollmentCodeSigningBytes, toBase64url } from '@svc/shared';
import { ed25519Generate, ed25519Sign } from '@svc/shared/node';
import { describe, expect, it } from 'vitest';
import type { Deployment } from '../deployments/store.js';
import { verifyEnrollmentCode } from './register.js';

const relayKey = ed25519Generate();
const future = new Date(Date.now() + 3_600_000).toISOString();
const deployment = (over: Partial<Deployment['doc']> = {}): Deployment =>
  ({
    name: 'dev',
    doc: {
      typ: 'svc.deployment/v1',
      deployment_id: 'dep-1',
      api_url: 'https://relay.example',
      leaf_url: null,
      tenants: ['acme'],
      relay_keys: [
        {
          kid: 'k1',
          jwk: { kty: 'OKP', crv: 'Ed25519', x: toBase64url(relayKey.publicKey) },
          use: ['enrollment-code'],
        },
      ],
      issued_at: new Date().toISOString(),
      expires_at: future,
      ...over,
    },
  }) as Deployment;

function code(over: Partial<EnrollmentBindings> = {}, opts: { kid?: string; key?: Uint8Array } = {}): string {
  const b: EnrollmentBindings = {
    deployment_id: 'dep-1',
    tenant_id: 'acme',
    agent_id: 'alice',
    agent_number: 'alice',
    capabilities: ['http-relay'],
    grant_id: 'g1',
    expires_at: future,
    api_url: 'https://relay.example',
    ...over,
  };
  const kid = opts.kid ?? 'k1';
  const sig = ed25519Sign(opts.key ?? relayKey.privateKey, enrollmentCodeSigningBytes(b, kid));
  return encodeEnrollmentCode(b, kid, sig, new Uint8Array(32).fill(7));
}

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
};

describe('verifyEnrollmentCode', () => {
  it('accepts a code signed by a relay key of the deployment', () => {
    expect(verifyEnrollmentCode(code(), deployment()).agent_number).toBe('alice');
  });
  it('refuses signatures it cannot trust', () => {
    expect(codeOf(() => verifyEnrollmentCode(code({}, { kid: 'k2' }), deployment()))).toBe('deployment_untrusted');
    expect(codeOf(() => verifyEnrollmentCode(code({}, { key: ed25519Generate().privateKey }), deployment()))).toBe(
      'deployment_untrusted',
    );
  });
  it('refuses codes bound to another deployment, API URL or tenant', () => {
    expect(codeOf(() => verifyEnrollmentCode(code({ deployment_id: 'dep-2' }), deployment()))).toBe(
      'deployment_mismatch',
    );
    expect(codeOf(() => verifyEnrollmentCode(code({ api_url: 'https://evil.example' }), deployment()))).toBe(
      'deployment_mismatch',
    );
    expect(codeOf(() => verifyEnrollmentCode(code({ tenant_id: 'globex' }), deployment()))).toBe('deployment_mismatch');
  });
  it('refuses expired documents and codes, and malformed codes', () => {
    const past = new Date(Date.now() - 1000).toISOString();
    expect(codeOf(() => verifyEnrollmentCode(code(), deployment({ expires_at: past })))).toBe('deployment_expired');
    expect(codeOf(() => verifyEnrollmentCode(code({ expires_at: past }), deployment()))).toBe('invalid_enrollment');
    expect(codeOf(() => verifyEnrollmentCode('svce1.nope', deployment()))).toBe('validation_failed');
  });
});
