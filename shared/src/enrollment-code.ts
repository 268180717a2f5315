/**
 * Enrollment code: `svce1.<payload>.<secret>`.
 * payload = base64url(canonical JSON of the bindings plus `kid` and `sig`), where `sig`
 * is the relay key's Ed25519 signature over enrollmentCodeSigningBytes(bindings, kid).
 * The relay key is listed in the signed deployment document, so a client can check
 * trust bundle → deployment document → relay key → code before redeeming.
 * secret = 32 random bytes (base64url); the relay stores only its hash.
 */
import { fromBase64url, fromUtf8, toBase64url, utf8 } from './base64url.js';
import { canonicalJson, canonicalJsonBytes } from './canonical-json.js';
import { CAPABILITIES, type Capability } from './schemas/common.js';

export const ENROLLMENT_CODE_PREFIX = 'svce1';

export interface EnrollmentBindings {
  deployment_id: string;
  tenant_id: string;
  agent_id: string;
  agent_number: string;
  capabilities: Capability[];
  grant_id: string;
  expires_at: string;
  api_url: string;
}

export interface ParsedEnrollmentCode {
  bindings: EnrollmentBindings;
  kid: string;
  signature: Uint8Array;
  secret: Uint8Array;
}

export class EnrollmentCodeFormatError extends Error {
  readonly code = 'enrollment_code_malformed';
  constructor(message: string) {
    super(message);
    this.name = 'EnrollmentCodeFormatError';
  }
}

export function enrollmentCodeSigningBytes(bindings: EnrollmentBindings, kid: string): Uint8Array {
  return canonicalJsonBytes({ typ: 'svc.enrollment-code/v1', kid, ...bindings });
}

export function encodeEnrollmentCode(
  bindings: EnrollmentBindings,
  kid: string,
  signature: Uint8Array,
  secret: Uint8Array,
): string {
  const payload = toBase64url(utf8(canonicalJson({ ...bindings, kid, sig: toBase64url(signature) })));
  return `${ENROLLMENT_CODE_PREFIX}.${payload}.${toBase64url(secret)}`;
}

const STRING_FIELDS = [
  'deployment_id',
  'tenant_id',
  'agent_id',
  'agent_number',
  'grant_id',
  'expires_at',
  'api_url',
] as const;

export function parseEnrollmentCode(code: string): ParsedEnrollmentCode {
  const parts = code.trim().split('.');
  if (parts.length !== 3 || parts[0] !== ENROLLMENT_CODE_PREFIX) {
    throw new EnrollmentCodeFormatError('not an svc enrollment code (expected svce1.<payload>.<secret>)');
  }
  let raw: unknown;
  let secret: Uint8Array;
  try {
    raw = JSON.parse(fromUtf8(fromBase64url(parts[1] as string)));
    secret = fromBase64url(parts[2] as string);
  } catch {
    throw new EnrollmentCodeFormatError('the enrollment code is damaged (bad encoding)');
  }
  if (secret.length !== 32) throw new EnrollmentCodeFormatError('the enrollment code secret has the wrong length');
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new EnrollmentCodeFormatError('the enrollment code payload is not an object');
  }
  const obj = raw as Record<string, unknown>;
  for (const f of [...STRING_FIELDS, 'kid', 'sig'] as const) {
    if (typeof obj[f] !== 'string' || obj[f] === '')
      throw new EnrollmentCodeFormatError(`the enrollment code lacks ${f}`);
  }
  const caps = obj.capabilities;
  if (
    !Array.isArray(caps) ||
    caps.length === 0 ||
    !caps.every((c): c is Capability => (CAPABILITIES as readonly unknown[]).includes(c))
  ) {
    throw new EnrollmentCodeFormatError('the enrollment code has invalid capabilities');
  }
  let signature: Uint8Array;
  try {
    signature = fromBase64url(obj.sig as string);
  } catch {
    throw new EnrollmentCodeFormatError('the enrollment code signature is damaged');
  }
  if (signature.length !== 64)
    throw new EnrollmentCodeFormatError('the enrollment code signature has the wrong length');
  const bindings = {
    deployment_id: obj.deployment_id as string,
    tenant_id: obj.tenant_id as string,
    agent_id: obj.agent_id as string,
    agent_number: obj.agent_number as string,
    capabilities: caps,
    grant_id: obj.grant_id as string,
    expires_at: obj.expires_at as string,
    api_url: obj.api_url as string,
  };
  return { bindings, kid: obj.kid as string, signature, secret };
}
