/**
 * The exact bytes that agents sign. Each statement is canonical JSON with a `typ`
 * that separates domains, so a signature made for one purpose never verifies for another.
 */
import { canonicalJsonBytes } from './canonical-json.js';
import type { Capability } from './schemas/common.js';

export interface EnrollmentProofFields {
  grant_id: string;
  deployment_id: string;
  tenant_id: string;
  agent_id: string;
  agent_number: string;
  capabilities: Capability[];
  signing_public_key: string;
  encryption_public_key: string;
  issued_at: string;
}

/** What a code binds, which its redeemer signs back with the keys it enrolls. */
export type EnrollmentProofBindings = Pick<
  EnrollmentProofFields,
  'grant_id' | 'deployment_id' | 'tenant_id' | 'agent_id' | 'agent_number' | 'capabilities'
>;

/**
 * The proof's fields from a code's bindings (any object carrying them, such as a parsed
 * enrollment code's) and the redeemer's keys: only the bound fields are taken.
 */
export function enrollmentProofFields(
  b: EnrollmentProofBindings,
  keys: Pick<EnrollmentProofFields, 'signing_public_key' | 'encryption_public_key' | 'issued_at'>,
): EnrollmentProofFields {
  return {
    grant_id: b.grant_id,
    deployment_id: b.deployment_id,
    tenant_id: b.tenant_id,
    agent_id: b.agent_id,
    agent_number: b.agent_number,
    capabilities: b.capabilities,
    signing_public_key: keys.signing_public_key,
    encryption_public_key: keys.encryption_public_key,
    issued_at: keys.issued_at,
  };
}

export function enrollmentProofBytes(fields: EnrollmentProofFields): Uint8Array {
  return canonicalJsonBytes({
    typ: 'svc.enrollment-proof/v1',
    ...fields,
    capabilities: [...fields.capabilities].sort(),
  });
}

export interface SignInFields {
  challenge_id: string;
  nonce: string;
  agent_id: string;
  deployment_id: string;
  tenant_id: string;
}

export function signInProofBytes(fields: SignInFields): Uint8Array {
  return canonicalJsonBytes({ typ: 'svc.sign-in/v1', ...fields });
}

/**
 * An agent's consent to be streamed by one edge machine (a named source): signed with the
 * agent's own signing key, so an uplink identity of the tenant can claim only the agents
 * whose keys its machine holds, never another machine's.
 */
export interface SourceClaimFields {
  deployment_id: string;
  tenant_id: string;
  agent_number: string;
  /** the agent number of the edge's nats-relay identity */
  edge_agent_number: string;
  issued_at: string;
}

export function sourceClaimProofBytes(fields: SourceClaimFields): Uint8Array {
  return canonicalJsonBytes({
    typ: 'svc.source-claim/v1',
    deployment_id: fields.deployment_id,
    tenant_id: fields.tenant_id,
    agent_number: fields.agent_number,
    edge_agent_number: fields.edge_agent_number,
    issued_at: fields.issued_at,
  });
}

/** Allowed clock skew for a signed enrollment proof's issued_at. */
export const PROOF_MAX_SKEW_MS = 5 * 60 * 1000;

/**
 * One version of an agent's key record in the relay's key directory. Version 1 holds the
 * keys given at enrollment and is signed by the enrolling identity together with its
 * proof; each later version is signed by its own signing key and, when the signing key
 * changes, also by the signing key of the version before it.
 */
export interface KeyRecordFields {
  deployment_id: string;
  tenant_id: string;
  agent_id: string;
  agent_number: string;
  version: number;
  signing_public_key: string;
  encryption_public_key: string;
  created_at: string;
}

export function keyRecordBytes(fields: KeyRecordFields): Uint8Array {
  return canonicalJsonBytes({
    typ: 'svc.key-record/v1',
    deployment_id: fields.deployment_id,
    tenant_id: fields.tenant_id,
    agent_id: fields.agent_id,
    agent_number: fields.agent_number,
    version: fields.version,
    signing_public_key: fields.signing_public_key,
    encryption_public_key: fields.encryption_public_key,
    created_at: fields.created_at,
  });
}

/**
 * Version 1 of the key record, which the enrolling identity signs beside its enrollment
 * proof (`key_record_signature`): the proof's bindings and keys, created at the proof's
 * issued_at. The relay serves it with that signature, so a peer can check version 1
 * against the signing key it pinned instead of trusting the relay for it.
 */
export function enrollmentKeyRecordFields(p: EnrollmentProofFields): KeyRecordFields {
  return {
    deployment_id: p.deployment_id,
    tenant_id: p.tenant_id,
    agent_id: p.agent_id,
    agent_number: p.agent_number,
    version: 1,
    signing_public_key: p.signing_public_key,
    encryption_public_key: p.encryption_public_key,
    created_at: p.issued_at,
  };
}
