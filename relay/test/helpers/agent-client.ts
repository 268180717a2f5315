/** A minimal agent for tests: an Ed25519 identity and the enrollment/sign-in requests. */
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import {
  type EnrollmentRequest,
  enrollmentProofBytes,
  parseEnrollmentCode,
  signInProofBytes,
  toBase64url,
} from '@svc/shared';

export interface TestIdentity {
  signPrivate: KeyObject;
  signPublic: string;
  encPublic: string;
}

export function newIdentity(): TestIdentity {
  const ed = generateKeyPairSync('ed25519');
  const x = generateKeyPairSync('x25519');
  return {
    signPrivate: ed.privateKey,
    signPublic: (ed.publicKey.export({ format: 'jwk' }) as { x: string }).x,
    encPublic: (x.publicKey.export({ format: 'jwk' }) as { x: string }).x,
  };
}

export function enrollmentBody(
  code: string,
  id: TestIdentity,
  opts: { issuedAt?: Date; signWith?: KeyObject; override?: Partial<Parameters<typeof enrollmentProofBytes>[0]> } = {},
): EnrollmentRequest {
  const b = parseEnrollmentCode(code).bindings;
  const issued_at = (opts.issuedAt ?? new Date()).toISOString();
  const proof = enrollmentProofBytes({
    grant_id: b.grant_id,
    deployment_id: b.deployment_id,
    tenant_id: b.tenant_id,
    agent_id: b.agent_id,
    agent_number: b.agent_number,
    capabilities: b.capabilities,
    signing_public_key: id.signPublic,
    encryption_public_key: id.encPublic,
    issued_at,
    ...opts.override,
  });
  return {
    enrollment_code: code,
    signing_public_key: id.signPublic,
    encryption_public_key: id.encPublic,
    issued_at,
    proof: toBase64url(sign(null, proof, opts.signWith ?? id.signPrivate)),
  };
}

export function signInSignature(
  id: TestIdentity,
  fields: { challenge_id: string; nonce: string; agent_id: string; deployment_id: string; tenant_id: string },
): string {
  return toBase64url(sign(null, signInProofBytes(fields), id.signPrivate));
}

export interface JsonResponse<T = Record<string, unknown>> {
  status: number;
  body: T;
}

export async function call<T = Record<string, unknown>>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<JsonResponse<T>> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // non-JSON answers are returned as text
  }
  return { status: res.status, body: parsed as T };
}
