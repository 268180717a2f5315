/**
 * The key directory's rules: an agent uploads its next key record (self-signed, and
 * signed by its current signing key when that changes); agents of the same tenant look
 * up the current keys and the whole history of the active incarnation by number or id.
 */
import {
  type KeyDirectoryEntry,
  type KeyRecord,
  type KeyRecordEntry,
  type KeyUploadRequest,
  keyRecordBytes,
  PROOF_MAX_SKEW_MS,
  SvcError,
} from '@svc/shared';
import { canonicalBytes, encryptionKeyProblem, signingKeyProblem } from '../auth/public-keys.js';
import { verifyEd25519 } from '../auth/signatures.js';
import type { RelayBase } from '../context.js';
import type { KeyDirectory, KeyOwner } from '../ledger/keys.js';

function checkSigningKey(key: string): void {
  const problem = signingKeyProblem(key);
  if (problem !== undefined) {
    throw new SvcError(
      'invalid_key_record',
      'signing_public_key must be a 32-byte Ed25519 key in canonical base64url, not a small-order point',
      { detail: problem },
    );
  }
}

/** A small-order X25519 point gives a predictable (all-zero) shared secret. */
function checkEncryptionKey(key: string): void {
  const problem = encryptionKeyProblem(key);
  if (problem !== undefined) {
    throw new SvcError(
      'invalid_key_record',
      'encryption_public_key must be a 32-byte X25519 key in canonical base64url, not a small-order point',
      { detail: problem },
    );
  }
}

const isSignature = (text: string): boolean => canonicalBytes(text, 64) !== undefined;

export type KeyUpload = { status: 200 | 201; record: KeyRecord };

export class KeyService {
  readonly #ctx: Pick<RelayBase, 'deployment' | 'logger' | 'now'>;
  readonly #directory: KeyDirectory;

  constructor(ctx: Pick<RelayBase, 'deployment' | 'logger' | 'now' | 'stores'>) {
    this.#ctx = ctx;
    this.#directory = ctx.stores.keys;
  }

  #owned(owner: KeyOwner) {
    return {
      deployment_id: this.#ctx.deployment.deploymentId,
      tenant_id: owner.tenant_id,
      agent_id: owner.agent_id,
      agent_number: owner.agent_number,
    };
  }

  /** The active agent of the tenant named by number or id; unknown, revoked and other-tenant agents are the same answer. */
  async lookup(tenantId: string, ref: string): Promise<KeyOwner> {
    const owner = await this.#directory.activeByRef(tenantId, ref);
    if (!owner) throw new SvcError('not_found', `No active agent ${JSON.stringify(ref)} in this tenant.`);
    return owner;
  }

  async entry(owner: KeyOwner): Promise<KeyDirectoryEntry> {
    const history = await this.#directory.history(owner);
    return { ...this.#owned(owner), current: history[history.length - 1] as KeyRecord, history };
  }

  async version(owner: KeyOwner, v: string): Promise<KeyRecordEntry> {
    const record = (await this.#directory.history(owner)).find((r) => r.version === Number(v));
    if (!record) throw new SvcError('not_found', `Agent ${owner.agent_number} has no key record version ${v}.`);
    return { ...this.#owned(owner), record };
  }

  /** Checks and records the caller's next key version: 201 when recorded, 200 when nothing changes (a retry). */
  async rotate(caller: KeyOwner, body: KeyUploadRequest): Promise<KeyUpload> {
    const ctx = this.#ctx;
    const history = await this.#directory.history(caller);
    const current = history[history.length - 1] as KeyRecord;
    if (
      body.signing_public_key === current.signing_public_key &&
      body.encryption_public_key === current.encryption_public_key &&
      // the same keys again take a version only to sign an unsigned version 1 (an
      // incarnation enrolled before it was signed: `svc keys backfill`)
      current.signature !== null
    ) {
      return { status: 200, record: current }; // a retry, or nothing to rotate
    }
    checkSigningKey(body.signing_public_key);
    checkEncryptionKey(body.encryption_public_key);
    const createdAt = Date.parse(body.created_at);
    if (!Number.isFinite(createdAt)) throw new SvcError('invalid_key_record', 'created_at must be an RFC 3339 time');
    if (Math.abs(ctx.now() - createdAt) > PROOF_MAX_SKEW_MS) throw new SvcError('key_record_stale');
    const retired = (pick: (r: KeyRecord) => string, key: string) =>
      key !== pick(current) && history.some((r) => pick(r) === key);
    if (retired((r) => r.signing_public_key, body.signing_public_key))
      throw new SvcError('key_reused', 'signing_public_key was retired by an earlier rotation; generate a fresh key.');
    if (retired((r) => r.encryption_public_key, body.encryption_public_key))
      throw new SvcError(
        'key_reused',
        'encryption_public_key was retired by an earlier rotation; generate a fresh key.',
      );

    const statementOf = (version: number) =>
      keyRecordBytes({
        ...this.#owned(caller),
        version,
        signing_public_key: body.signing_public_key,
        encryption_public_key: body.encryption_public_key,
        created_at: body.created_at,
      });
    const statement = statementOf(current.version + 1);
    if (!isSignature(body.signature) || !verifyEd25519(body.signing_public_key, statement, body.signature)) {
      // signed for the version another upload took just before this one: a lost race, which
      // the client resolves by reading the directory again (not a bad signature)
      if (
        isSignature(body.signature) &&
        verifyEd25519(body.signing_public_key, statementOf(current.version), body.signature)
      ) {
        throw new SvcError('key_version_conflict');
      }
      throw new SvcError('invalid_key_signature', undefined, { detail: `expected version ${current.version + 1}` });
    }
    const signingChanged = body.signing_public_key !== current.signing_public_key;
    if (signingChanged && body.previous_signature === undefined) throw new SvcError('previous_signature_required');
    if (
      body.previous_signature !== undefined &&
      (!isSignature(body.previous_signature) ||
        !verifyEd25519(current.signing_public_key, statement, body.previous_signature))
    ) {
      throw new SvcError('invalid_previous_signature');
    }

    const next = {
      signing_public_key: body.signing_public_key,
      encryption_public_key: body.encryption_public_key,
      created_at: body.created_at,
      signature: body.signature,
      previous_signature: body.previous_signature ?? null,
    };
    const outcome = await this.#directory.append(caller.id, current.version, next, ctx.now());
    if (outcome === 'conflict') throw new SvcError('key_version_conflict');
    if (outcome === 'revoked') throw new SvcError('invalid_token', undefined, { detail: 'agent revoked meanwhile' });
    ctx.logger.info(
      {
        tenant_id: caller.tenant_id,
        agent_id: caller.agent_id,
        version: current.version + 1,
        signing_key_changed: signingChanged,
      },
      'agent keys rotated',
    );
    return { status: 201, record: { version: current.version + 1, ...next } };
  }
}
