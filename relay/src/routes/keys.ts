/**
 * The key directory: an agent uploads its next key record (self-signed, and signed by
 * its current signing key when that changes); agents of the same tenant look up the
 * current keys and the whole history of the active incarnation by agent number or id.
 */
import {
  ErrorResponse,
  KeyAgentParams,
  KeyAgentVersionParams,
  KeyDirectoryEntry,
  KeyRecord,
  KeyRecordEntry,
  KeyUploadRequest,
  KeyVersionParams,
  keyRecordBytes,
  PROOF_MAX_SKEW_MS,
  SvcError,
} from '@svc/shared';
import { canonicalBytes, encryptionKeyProblem, signingKeyProblem } from '../auth/public-keys.js';
import { verifyEd25519 } from '../auth/signatures.js';
import type { RelayContext } from '../context.js';
import { requireAgent } from '../http/auth-hooks.js';
import { KeyDirectory, type KeyOwner } from '../ledger/keys.js';
import type { TypedApp } from './types.js';

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

export function keyRoutes(app: TypedApp, ctx: RelayContext): void {
  const directory = new KeyDirectory(ctx.ledger);
  const owned = (owner: KeyOwner) => ({
    deployment_id: ctx.deployment.deploymentId,
    tenant_id: owner.tenant_id,
    agent_id: owner.agent_id,
    agent_number: owner.agent_number,
  });
  const entry = (owner: KeyOwner): KeyDirectoryEntry => {
    const history = directory.history(owner);
    return { ...owned(owner), current: history[history.length - 1] as KeyRecord, history };
  };
  const version = (owner: KeyOwner, v: string): KeyRecordEntry => {
    const record = directory.history(owner).find((r) => r.version === Number(v));
    if (!record) throw new SvcError('not_found', `Agent ${owner.agent_number} has no key record version ${v}.`);
    return { ...owned(owner), record };
  };
  const callerOf = (request: { agent?: { row: KeyOwner } }): KeyOwner => (request.agent as { row: KeyOwner }).row;
  const lookup = (request: { agent?: { row: KeyOwner } }, ref: string): KeyOwner => {
    const owner = directory.activeByRef(callerOf(request).tenant_id, ref);
    // Unknown, revoked and other-tenant agents are the same answer.
    if (!owner) throw new SvcError('not_found', `No active agent ${ref} in this tenant.`);
    return owner;
  };
  const auth = { onRequest: requireAgent(ctx) };
  const security = [{ accessToken: [] }];
  const errors = { '4xx': ErrorResponse, '5xx': ErrorResponse };

  app.put(
    '/api/v1/agents/me/keys',
    {
      ...auth,
      schema: {
        summary: 'Upload the next version of your keys (self-signed; a new signing key also needs previous_signature)',
        security,
        body: KeyUploadRequest,
        response: { 200: KeyRecord, 201: KeyRecord, ...errors },
      },
    },
    async (request, reply) => {
      const caller = callerOf(request);
      const body = request.body;
      const history = directory.history(caller);
      const current = history[history.length - 1] as KeyRecord;
      if (
        body.signing_public_key === current.signing_public_key &&
        body.encryption_public_key === current.encryption_public_key
      ) {
        return reply.status(200).send(current); // a retry, or nothing to rotate
      }
      checkSigningKey(body.signing_public_key);
      checkEncryptionKey(body.encryption_public_key);
      const createdAt = Date.parse(body.created_at);
      if (!Number.isFinite(createdAt)) throw new SvcError('invalid_key_record', 'created_at must be an RFC 3339 time');
      if (Math.abs(ctx.now() - createdAt) > PROOF_MAX_SKEW_MS) throw new SvcError('key_record_stale');
      const retired = (pick: (r: KeyRecord) => string, key: string) =>
        key !== pick(current) && history.some((r) => pick(r) === key);
      if (retired((r) => r.signing_public_key, body.signing_public_key))
        throw new SvcError(
          'key_reused',
          'signing_public_key was retired by an earlier rotation; generate a fresh key.',
        );
      if (retired((r) => r.encryption_public_key, body.encryption_public_key))
        throw new SvcError(
          'key_reused',
          'encryption_public_key was retired by an earlier rotation; generate a fresh key.',
        );

      const statement = keyRecordBytes({
        ...owned(caller),
        version: current.version + 1,
        signing_public_key: body.signing_public_key,
        encryption_public_key: body.encryption_public_key,
        created_at: body.created_at,
      });
      if (!isSignature(body.signature) || !verifyEd25519(body.signing_public_key, statement, body.signature)) {
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
      const outcome = directory.append(caller.id, current.version, next, ctx.now());
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
      return reply.status(201).send({ version: current.version + 1, ...next });
    },
  );

  app.get(
    '/api/v1/agents/me/keys',
    {
      ...auth,
      schema: {
        summary: 'Your current keys and every earlier version, oldest first',
        security,
        response: { 200: KeyDirectoryEntry, ...errors },
      },
    },
    async (request) => entry(callerOf(request)),
  );

  app.get(
    '/api/v1/agents/me/keys/:version',
    {
      ...auth,
      schema: {
        summary: 'One version of your keys',
        security,
        params: KeyVersionParams,
        response: { 200: KeyRecordEntry, ...errors },
      },
    },
    async (request) => version(callerOf(request), request.params.version),
  );

  app.get(
    '/api/v1/agents/:agent/keys',
    {
      ...auth,
      schema: {
        summary: "An agent's current keys and every earlier version (same tenant; by agent number or id)",
        security,
        params: KeyAgentParams,
        response: { 200: KeyDirectoryEntry, ...errors },
      },
    },
    async (request) => entry(lookup(request, request.params.agent)),
  );

  app.get(
    '/api/v1/agents/:agent/keys/:version',
    {
      ...auth,
      schema: {
        summary: "One version of an agent's keys (same tenant; by agent number or id)",
        security,
        params: KeyAgentVersionParams,
        response: { 200: KeyRecordEntry, ...errors },
      },
    },
    async (request) => version(lookup(request, request.params.agent), request.params.version),
  );
}
