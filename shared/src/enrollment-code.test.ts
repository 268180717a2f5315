import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  type EnrollmentBindings,
  encodeEnrollmentCode,
  enrollmentCodeSigningBytes,
  parseEnrollmentCode,
} from './enrollment-code.js';

const bindings: EnrollmentBindings = {
  deployment_id: 'dep_1',
  tenant_id: 'acme',
  agent_id: 'team.bot:1',
  agent_number: 'team-bot-1',
  capabilities: ['http-relay'],
  grant_id: 'grt_1',
  expires_at: '2030-01-01T00:00:00.000Z',
  api_url: 'https://relay.example',
};

describe('enrollment code', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const secret = new Uint8Array(32).fill(9);
  const code = encodeEnrollmentCode(
    bindings,
    'kid1',
    sign(null, enrollmentCodeSigningBytes(bindings, 'kid1'), privateKey),
    secret,
  );

  it('round-trips bindings, kid, signature and secret; the signature verifies', () => {
    expect(code).toMatch(/^svce1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    const parsed = parseEnrollmentCode(code);
    expect(parsed.bindings).toEqual(bindings);
    expect(parsed.kid).toBe('kid1');
    expect(parsed.secret).toEqual(secret);
    expect(verify(null, enrollmentCodeSigningBytes(parsed.bindings, parsed.kid), publicKey, parsed.signature)).toBe(
      true,
    );
  });

  it('a changed binding no longer verifies', () => {
    const parsed = parseEnrollmentCode(code);
    const changed = { ...parsed.bindings, tenant_id: 'globex' };
    expect(verify(null, enrollmentCodeSigningBytes(changed, parsed.kid), publicKey, parsed.signature)).toBe(false);
  });

  it('refuses damaged codes with a typed error', () => {
    for (const bad of [
      '',
      'svce2.a.b',
      'svce1.!!.x',
      `${code}.extra`,
      code.replace(/\.[^.]+$/, '.AAAA'),
      `svce1.e30.${'A'.repeat(43)}`,
    ]) {
      expect(() => parseEnrollmentCode(bad)).toThrow(expect.objectContaining({ code: 'enrollment_code_malformed' }));
    }
  });
});
