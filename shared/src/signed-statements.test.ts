import { describe, expect, it } from 'vitest';
import type { EnrollmentBindings } from './enrollment-code.js';
import { enrollmentProofBytes, enrollmentProofFields } from './signed-statements.js';

const bindings: EnrollmentBindings = {
  deployment_id: 'dep-1',
  tenant_id: 'acme',
  agent_id: 'alice',
  agent_number: '100001',
  capabilities: ['nats-relay', 'http-relay'],
  grant_id: 'g-1',
  expires_at: '2026-11-23T00:00:00.000Z',
  api_url: 'https://relay.example',
};
const keys = { signing_public_key: 'S', encryption_public_key: 'E', issued_at: '2026-11-22T12:00:00.000Z' };

describe('enrollment proof', () => {
  it('takes exactly the bound fields of a code and the keys: what the relay signs back against', () => {
    const fields = enrollmentProofFields(bindings, keys);
    expect(Object.keys(fields).sort()).toEqual(
      [
        'agent_id',
        'agent_number',
        'capabilities',
        'deployment_id',
        'encryption_public_key',
        'grant_id',
        'issued_at',
        'signing_public_key',
        'tenant_id',
      ].sort(),
    );
    expect(new TextDecoder().decode(enrollmentProofBytes(fields))).toBe(
      '{"agent_id":"alice","agent_number":"100001","capabilities":["http-relay","nats-relay"],' +
        '"deployment_id":"dep-1","encryption_public_key":"E","grant_id":"g-1","issued_at":"2026-11-22T12:00:00.000Z",' +
        '"signing_public_key":"S","tenant_id":"acme","typ":"svc.enrollment-proof/v1"}',
    );
  });

  it('every bound field changes the bytes', () => {
    const base = enrollmentProofBytes(enrollmentProofFields(bindings, keys));
    for (const [k, v] of Object.entries({
      grant_id: 'g-2',
      deployment_id: 'dep-2',
      tenant_id: 'globex',
      agent_id: 'bob',
      agent_number: '100002',
      capabilities: ['http-relay'],
    })) {
      const other = enrollmentProofBytes(enrollmentProofFields({ ...bindings, [k]: v }, keys));
      expect(Buffer.from(other).equals(Buffer.from(base)), k).toBe(false);
    }
  });
});
