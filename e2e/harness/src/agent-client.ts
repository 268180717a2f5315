/** A minimal agent for tests: an Ed25519 identity and the enrollment/sign-in requests. */
import { createPrivateKey, type KeyObject, randomBytes, sign } from 'node:crypto';
import {
  createEnvelopeHeader,
  type EnrollmentRequest,
  enrollmentKeyRecordFields,
  enrollmentProofBytes,
  enrollmentProofFields,
  keyRecordBytes,
  parseEnrollmentCode,
  signInProofBytes,
  sourceClaimProofBytes,
  toBase64url,
} from '@svc/shared';
import { deriveIdentityKeys, openEnvelope, sealEnvelope } from '@svc/shared/node';

export interface TestIdentity {
  signPrivate: KeyObject;
  signPublic: string;
  encPublic: string;
}

/** A fresh random identity (from a random seed, as a daemon makes one). */
export function newIdentity(): TestIdentity {
  return identityFromSeed(randomBytes(32)).identity;
}

export function enrollmentBody(
  code: string,
  id: TestIdentity,
  opts: {
    issuedAt?: Date;
    signWith?: KeyObject;
    override?: Partial<Parameters<typeof enrollmentProofBytes>[0]>;
    recordOverride?: Partial<Parameters<typeof keyRecordBytes>[0]>;
  } = {},
): EnrollmentRequest {
  const b = parseEnrollmentCode(code).bindings;
  const issued_at = (opts.issuedAt ?? new Date()).toISOString();
  const fields = {
    ...enrollmentProofFields(b, { signing_public_key: id.signPublic, encryption_public_key: id.encPublic, issued_at }),
    ...opts.override,
  };
  const signer = opts.signWith ?? id.signPrivate;
  return {
    enrollment_code: code,
    signing_public_key: id.signPublic,
    encryption_public_key: id.encPublic,
    issued_at,
    proof: toBase64url(sign(null, enrollmentProofBytes(fields), signer)),
    key_record_signature: toBase64url(
      sign(null, keyRecordBytes({ ...enrollmentKeyRecordFields(fields), ...opts.recordOverride }), signer),
    ),
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

/** An enrolled agent with raw keys, able to seal and open envelopes. */
export interface TestAgent {
  agentId: string;
  number: string;
  tenantId: string;
  deploymentId: string;
  keys: import('@svc/shared').IdentityKeys;
  identity: TestIdentity;
  apiKey: string;
  token: string;
  auth: Record<string, string>;
}

export function identityFromSeed(seed: Uint8Array): {
  identity: TestIdentity;
  keys: import('@svc/shared').IdentityKeys;
} {
  const keys = deriveIdentityKeys(seed, 0);
  const signPrivate = createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: toBase64url(keys.signPrivate), x: toBase64url(keys.signPublic) },
    format: 'jwk',
  });
  return {
    keys,
    identity: { signPrivate, signPublic: toBase64url(keys.signPublic), encPublic: toBase64url(keys.encPublic) },
  };
}

/**
 * The body of `POST /api/v1/sources`: `agent` consents, with its own signature, to be
 * streamed by the edge whose agent number is `edgeNumber`.
 */
export function sourceClaimBody(
  agent: TestAgent,
  edgeNumber: string,
  opts: { issuedAt?: Date; signer?: TestAgent } = {},
): { agent: string; issued_at: string; proof: string } {
  const issued_at = (opts.issuedAt ?? new Date()).toISOString();
  const statement = sourceClaimProofBytes({
    deployment_id: agent.deploymentId,
    tenant_id: agent.tenantId,
    agent_number: agent.number,
    edge_agent_number: edgeNumber,
    issued_at,
  });
  return {
    agent: agent.number,
    issued_at,
    proof: toBase64url(sign(null, statement, (opts.signer ?? agent).identity.signPrivate)),
  };
}

export async function enrollAgent(base: string, code: string): Promise<TestAgent> {
  const { identity, keys } = identityFromSeed(randomBytes(32));
  const res = await call<Record<string, string>>(base, 'POST', '/api/v1/enrollment', enrollmentBody(code, identity));
  if (res.status !== 201) throw new Error(`enrollment failed: ${res.status} ${JSON.stringify(res.body)}`);
  const b = res.body;
  return {
    agentId: b.agent_id as string,
    number: b.agent_number as string,
    tenantId: b.tenant_id as string,
    deploymentId: b.deployment_id as string,
    keys,
    identity,
    apiKey: b.api_key as string,
    token: b.access_token as string,
    auth: { authorization: `Bearer ${b.access_token}` },
  };
}

/** `agent` with a fresh access token from challenge sign-in (what an agent does when its token expired). */
export async function signIn(base: string, agent: TestAgent): Promise<TestAgent> {
  const scope = { deployment_id: agent.deploymentId, tenant_id: agent.tenantId, agent_id: agent.agentId };
  const c = await call<{ challenge_id: string; nonce: string }>(base, 'POST', '/api/v1/auth/sign-in/challenge', scope);
  if (c.status !== 201) throw new Error(`sign-in challenge failed: ${c.status} ${JSON.stringify(c.body)}`);
  const { challenge_id, nonce } = c.body;
  const signature = signInSignature(agent.identity, { ...scope, challenge_id, nonce });
  const res = await call<{ access_token: string }>(base, 'POST', '/api/v1/auth/sign-in', {
    challenge_id,
    agent_id: agent.agentId,
    signature,
  });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${JSON.stringify(res.body)}`);
  const token = res.body.access_token;
  return { ...agent, token, auth: { authorization: `Bearer ${token}` } };
}

export function sealFor(
  from: TestAgent,
  to: { number: string; keys: { encPublic: Uint8Array } },
  text: string,
  header: Partial<import('@svc/shared').EnvelopeHeader> = {},
): import('@svc/shared').Envelope {
  return sealEnvelope({
    header: {
      ...createEnvelopeHeader({
        sender: from.number,
        recipient: to.number,
        conversation_id: `dm:${[from.number, to.number].sort().join(':')}`,
        conversation_type: 'direct',
        content_type: 'text',
        deployment_id: from.deploymentId,
        tenant_id: from.tenantId,
      }),
      ...header,
    },
    plaintext: new TextEncoder().encode(text),
    recipientX25519Public: to.keys.encPublic,
    senderEd25519Private: from.keys.signPrivate,
  });
}

export function openFor(
  agent: TestAgent,
  envelope: import('@svc/shared').Envelope,
  senderSignPublic: Uint8Array,
): string {
  const plain = openEnvelope(envelope, agent.keys.encPrivate, {
    expectedRecipient: agent.number,
    expectedDeploymentId: agent.deploymentId,
    expectedTenantId: agent.tenantId,
    senderEd25519Public: senderSignPublic,
  });
  return new TextDecoder().decode(plain);
}

/** One server-sent event of the message stream: an envelope, or a keepalive comment. */
export type StreamEvent =
  | { kind: 'envelope'; cursor: number; message_id: string; sender: string; envelope: import('@svc/shared').Envelope }
  | { kind: 'keepalive' }
  | { kind: 'error'; data: string }
  /** the stream ended or failed and is opened again (with `reconnect`) */
  | { kind: 'reconnect'; after: number | undefined; reason: string };

export interface MessageStream {
  /** every event so far, in order */
  readonly events: StreamEvent[];
  /** the message ids of the envelope events so far, in order */
  messageIds(): string[];
  /** resolves once the stream answered 200 and wrote its opening comment */
  readonly opened: Promise<void>;
  close(): void;
}

/**
 * Opens GET /api/v1/messages/stream and collects its events in the background. With
 * `reconnect`, a stream that ends or fails is opened again with Last-Event-ID (the last
 * cursor), the way the daemon resumes; `bases` are tried in turn (instances of one relay).
 * `onEnvelope` hears each envelope event as it is read (bench:relay times arrivals with it).
 */
export function openMessageStream(
  base: string | string[],
  auth: Record<string, string>,
  lastEventId?: number,
  opts: { reconnect?: boolean; onEnvelope?: (event: Extract<StreamEvent, { kind: 'envelope' }>) => void } = {},
): MessageStream {
  const bases = Array.isArray(base) ? base : [base];
  const abort = new AbortController();
  const events: StreamEvent[] = [];
  let cursor = lastEventId;
  let markOpen: () => void = () => undefined;
  let failOpen: (err: Error) => void = () => undefined;
  const opened = new Promise<void>((resolve, reject) => {
    markOpen = resolve;
    failOpen = reject;
  });
  const once = async (url: string) => {
    const headers = cursor === undefined ? auth : { ...auth, 'last-event-id': String(cursor) };
    const res = await fetch(`${url}/api/v1/messages/stream`, { headers, signal: abort.signal });
    if (res.status !== 200 || !res.body) throw new Error(`message stream answered ${res.status}`);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let first = true;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      for (let i = buffer.indexOf('\n\n'); i >= 0; i = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        if (first) {
          first = false;
          markOpen();
          continue;
        }
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (/^event: envelope$/m.test(block) && data) {
          const event = {
            kind: 'envelope' as const,
            ...(JSON.parse(data) as Omit<Extract<StreamEvent, { kind: 'envelope' }>, 'kind'>),
          };
          events.push(event);
          cursor = event.cursor;
          opts.onEnvelope?.(event);
        } else if (/^event: error$/m.test(block)) events.push({ kind: 'error', data: data ?? '' });
        else if (block.startsWith(': keepalive')) events.push({ kind: 'keepalive' });
      }
    }
  };
  void (async () => {
    for (let attempt = 0; !abort.signal.aborted; attempt++) {
      let reason = 'ended';
      try {
        await once(bases[attempt % bases.length] as string);
      } catch (err) {
        if (!opts.reconnect) failOpen(err as Error);
        reason = (err as Error).message;
      }
      if (!opts.reconnect || abort.signal.aborted) return;
      events.push({ kind: 'reconnect', after: cursor, reason });
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  opened.catch(() => undefined);
  return {
    events,
    messageIds: () => events.flatMap((e) => (e.kind === 'envelope' ? [e.message_id] : [])),
    opened,
    close: () => abort.abort(),
  };
}
