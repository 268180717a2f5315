import { type Static, Type } from '@sinclair/typebox';
import { AgentId, Base64url, Capability, DeploymentId, TenantId } from './common.js';

const PublicKey32 = Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', description: '32-byte key, base64url' });
const Signature64 = Type.String({ pattern: '^[A-Za-z0-9_-]{86}$', description: 'Ed25519 signature, base64url' });

export const EnrollmentRequest = Type.Object(
  {
    enrollment_code: Type.String({ minLength: 1, maxLength: 4096 }),
    signing_public_key: PublicKey32,
    encryption_public_key: PublicKey32,
    issued_at: Type.String({ format: 'date-time' }),
    proof: Signature64,
    /** By signing_public_key over key record version 1 (`enrollmentKeyRecordFields`: created_at = issued_at). */
    key_record_signature: Signature64,
    display_name: Type.Optional(Type.String({ maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    discoverable: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type EnrollmentRequest = Static<typeof EnrollmentRequest>;

export const Credentials = Type.Object({
  agent_id: Type.String(),
  agent_number: Type.String(),
  tenant_id: Type.String(),
  deployment_id: Type.String(),
  capabilities: Type.Array(Capability),
  api_key: Type.String({ description: 'svc_ak_…; shown once' }),
  api_key_expires_at: Type.String({ format: 'date-time' }),
  access_token: Type.String(),
  access_token_expires_at: Type.String({ format: 'date-time' }),
});
export type Credentials = Static<typeof Credentials>;

export const ChallengeRequest = Type.Object(
  { deployment_id: DeploymentId, tenant_id: TenantId, agent_id: AgentId },
  { additionalProperties: false },
);
export type ChallengeRequest = Static<typeof ChallengeRequest>;

export const ChallengeResponse = Type.Object({
  challenge_id: Type.String(),
  nonce: Base64url,
  expires_at: Type.String({ format: 'date-time' }),
});
export type ChallengeResponse = Static<typeof ChallengeResponse>;

export const SignInRequest = Type.Object(
  { challenge_id: Type.String({ minLength: 1, maxLength: 128 }), agent_id: AgentId, signature: Signature64 },
  { additionalProperties: false },
);
export type SignInRequest = Static<typeof SignInRequest>;

export const TokenResponse = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  expires_at: Type.String({ format: 'date-time' }),
  capabilities: Type.Array(Capability),
});
export type TokenResponse = Static<typeof TokenResponse>;

/** Claims of the relay-issued access JWT (EdDSA, 15 minutes). */
export interface AccessTokenClaims {
  sub: string;
  /** The ledger row of the agent incarnation the token was issued to: a token never outlives its incarnation. */
  svc_incarnation_id: string;
  svc_agent_number: string;
  svc_deployment_id: string;
  svc_tenant_id: string;
  svc_capabilities: Capability[];
}
export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
