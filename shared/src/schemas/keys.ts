/**
 * The key directory: an agent's Ed25519 signing key and X25519 encryption key, as a
 * history of self-signed versions (GET/PUT /api/v1/agents/me/keys, GET /api/v1/agents/{agent}/keys).
 * Keys and signatures are checked by the relay itself (not by pattern here), so a
 * malformed one is answered with invalid_key_record / invalid_key_signature.
 */
import { type Static, Type } from '@sinclair/typebox';

const KeyText = (description: string) => Type.String({ minLength: 1, maxLength: 128, description });
const SignatureText = (description: string) => Type.String({ minLength: 1, maxLength: 256, description });
const NullableSignature = (description: string) => Type.Union([SignatureText(description), Type.Null()]);

/** One version of an agent's keys. The signed statement is `keyRecordBytes` (typ svc.key-record/v1). */
export const KeyRecord = Type.Object({
  version: Type.Integer({ minimum: 1, description: '1 = the keys given at enrollment, then 2, 3, …' }),
  signing_public_key: KeyText('Ed25519 public key, 32 bytes, base64url'),
  encryption_public_key: KeyText('X25519 public key, 32 bytes, base64url'),
  created_at: Type.String({ description: 'RFC 3339 time, exactly as signed' }),
  signature: NullableSignature(
    "Ed25519 signature by this version's signing key over the statement (version 1: made at enrollment, created_at = the proof's issued_at); null only for a version 1 enrolled before it was signed",
  ),
  previous_signature: NullableSignature(
    "Ed25519 signature by the previous version's signing key over the same statement; present when the signing key changed",
  ),
});
export type KeyRecord = Static<typeof KeyRecord>;

/** PUT /api/v1/agents/me/keys: the next version, self-signed. */
export const KeyUploadRequest = Type.Object(
  {
    signing_public_key: KeyText('Ed25519 public key, 32 bytes, base64url'),
    encryption_public_key: KeyText('X25519 public key, 32 bytes, base64url'),
    created_at: Type.String({ format: 'date-time', description: 'RFC 3339, within 5 minutes of the relay clock' }),
    signature: SignatureText('Ed25519 signature by signing_public_key over the statement with version = current + 1'),
    previous_signature: Type.Optional(
      SignatureText('Ed25519 signature by the current signing key over the same statement; required to change it'),
    ),
  },
  { additionalProperties: false },
);
export type KeyUploadRequest = Static<typeof KeyUploadRequest>;

const Owner = {
  deployment_id: Type.String(),
  tenant_id: Type.String(),
  agent_id: Type.String(),
  agent_number: Type.String(),
};

/** GET …/keys: the current version and every version of the active incarnation, oldest first. */
export const KeyDirectoryEntry = Type.Object({
  ...Owner,
  current: KeyRecord,
  history: Type.Array(KeyRecord),
});
export type KeyDirectoryEntry = Static<typeof KeyDirectoryEntry>;

/** GET …/keys/{version}. */
export const KeyRecordEntry = Type.Object({ ...Owner, record: KeyRecord });
export type KeyRecordEntry = Static<typeof KeyRecordEntry>;

const AgentRef = Type.String({ minLength: 1, maxLength: 256, description: 'agent number or agent id, same tenant' });
const Version = Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: 'key record version, 1 or more' });

export const KeyAgentParams = Type.Object({ agent: AgentRef }, { additionalProperties: false });
export type KeyAgentParams = Static<typeof KeyAgentParams>;

export const KeyVersionParams = Type.Object({ version: Version }, { additionalProperties: false });
export type KeyVersionParams = Static<typeof KeyVersionParams>;

export const KeyAgentVersionParams = Type.Object(
  { agent: AgentRef, version: Version },
  { additionalProperties: false },
);
export type KeyAgentVersionParams = Static<typeof KeyAgentVersionParams>;
