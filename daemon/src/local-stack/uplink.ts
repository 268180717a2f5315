/**
 * The leaf uplink of `svc start` (without --local-only): the machine's dedicated
 * `nats-relay` identity claims a named source for each local agent of its deployment,
 * then fetches relay-uplink/v1 creds (which name those sources) and writes them to the
 * file the local nats-server dials the hub with. Calling it again rotates the creds: the
 * relay revokes the old user and the server reconnects with the rewritten file.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { sourceClaimProofBytes, toBase64url, type UplinkCreds } from '@svc/shared';
import { ed25519Sign } from '@svc/shared/node';
import type { AgentManager } from '../agents/manager.js';
import { agentOutOfService } from '../agents/out-of-service.js';
import { DaemonError } from '../errors.js';
import { ensurePrivateFile } from '../private-file.js';
import type { AgentSession } from '../session/session.js';

export interface Uplink {
  identity: string;
  leafUrl: string;
  credsFile: string;
  inboxPrefix: string;
  sources: string[];
  expiresAt: string;
  /** the local agents claimed, with their durable consumer on the hub */
  claimed: Array<{ session: AgentSession; durable: string }>;
}

interface ClaimedSource {
  durable: string;
}

/** Longest wait a timer takes (setTimeout's limit, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * When to renew creds that expire at `expiresAt`: once `share` of their remaining life has
 * passed (0.8 of a day: 4.8 hours before the end, time enough for a relay that is down a
 * while); at once when they expired already.
 */
export function renewalDelayMs(expiresAt: number, now: number, share: number): number {
  const remaining = expiresAt - now;
  if (!(remaining > 0)) return 0;
  return Math.min(MAX_TIMER_MS, Math.floor(remaining * Math.min(1, Math.max(0, share))));
}

/** Gives `session`'s named source back (the relay deletes the consumer); one already gone is fine. */
export async function releaseSource(uplink: AgentSession, session: AgentSession): Promise<void> {
  const res = await uplink.relay.request({
    method: 'DELETE',
    path: `/api/v1/sources/${encodeURIComponent(session.config.agent_number)}`,
  });
  if (res.status >= 300 && res.status !== 404)
    throw new DaemonError('local_stack_failed', `the relay did not release the named source (${res.status})`);
}

/** The local identity holding nats-relay: the one named, else the only one. */
export function uplinkIdentity(agents: AgentManager, ref: string | undefined): AgentSession {
  if (ref) {
    const s = agents.resolve(ref);
    if (!s.config.capabilities.includes('nats-relay'))
      throw new DaemonError('uplink_identity_required', `${s.name} does not hold the nats-relay capability.`);
    return s;
  }
  const found = agents.sessions().filter((s) => s.config.capabilities.includes('nats-relay'));
  if (found.length === 0) outOfServiceUplink(agents);
  if (found.length !== 1)
    throw new DaemonError(
      'uplink_identity_required',
      found.length === 0
        ? 'No local identity holds nats-relay: register one with a dedicated grant (svc-relay grant --capability nats-relay), or use --local-only.'
        : `Several local identities hold nats-relay (${found.map((s) => s.name).join(', ')}); name one with --as.`,
    );
  return found[0] as AgentSession;
}

/**
 * With no nats-relay identity in service: the one out of service, if any, is the failure
 * (its code, and its message naming the file), not "register one", which would spend a
 * grant on a machine whose identity only needs its file restored. An agent whose agent.json
 * cannot be read may be it (its capabilities are in that file); one known to lack
 * nats-relay is not.
 */
function outOfServiceUplink(agents: AgentManager): void {
  const out = agents.outOfService().filter((o) => !o.config || o.config.capabilities.includes('nats-relay'));
  const [first] = out;
  if (!first) return;
  if (out.length === 1) {
    const may = first.config
      ? ''
      : ' Its agent.json cannot be read, so it may be the nats-relay identity; if it was not, register one with a dedicated grant (svc-relay grant --capability nats-relay), or use --local-only.';
    throw agentOutOfService(first, may);
  }
  throw new DaemonError(
    first.error.code,
    `No local identity in service holds nats-relay; these, out of service, may: ${out.map((o) => `${o.name} (${o.error.code})`).join(', ')}. \`svc doctor\` says which file of each cannot be used and what to do.`,
  );
}

/**
 * The leaf URL the relay answers must be the one its signed deployment document names: a
 * relay cannot point this machine's nats-server at another host. A document that names
 * none (signed before it carried one, or with no leaf listener then) cannot be held
 * against the answer.
 */
export function checkLeafUrl(signed: string | null | undefined, answered: string, deploymentName = 'NAME'): void {
  if (signed && signed !== answered) {
    throw new DaemonError(
      'deployment_mismatch',
      `The relay gave leaf URL ${answered}, but its signed deployment document names ${signed}; nothing was started. If the operator moved it, fetch the current document (svc deployment renew ${deploymentName}); otherwise ask the operator to check the relay.`,
    );
  }
}

/**
 * The claim of `session`'s named source by `uplink`, with the agent's consent signed by the
 * agent's own key: the relay lets an edge claim only agents whose keys it holds.
 */
export function sourceClaim(
  session: AgentSession,
  uplink: AgentSession,
  now = new Date(),
): { agent: string; issued_at: string; proof: string } {
  const issued_at = now.toISOString();
  const statement = sourceClaimProofBytes({
    deployment_id: session.config.deployment_id,
    tenant_id: session.config.tenant_id,
    agent_number: session.config.agent_number,
    edge_agent_number: uplink.config.agent_number,
    issued_at,
  });
  return {
    agent: session.config.agent_number,
    issued_at,
    proof: toBase64url(ed25519Sign(session.keys().signPrivate, statement)),
  };
}

export async function prepareUplink(agents: AgentManager, uplink: AgentSession, credsFile: string): Promise<Uplink> {
  const locals = agents
    .sessions()
    .filter((s) => s !== uplink && s.config.deployment === uplink.config.deployment)
    .filter((s) => s.config.capabilities.includes('http-relay'));
  const claimed: Uplink['claimed'] = [];
  for (const s of locals) {
    const source = await uplink.relay.call<ClaimedSource>({
      method: 'POST',
      path: '/api/v1/sources',
      body: sourceClaim(s, uplink),
    });
    claimed.push({ session: s, durable: source.durable });
  }
  const creds = await uplink.relay.call<UplinkCreds>({
    method: 'POST',
    path: '/api/v1/nats/issue-leaf-creds',
    body: {},
  });
  checkLeafUrl(agents.signedLeafUrl(uplink.config), creds.leaf_url, uplink.config.deployment);
  // whole or not at all: the local server may read it again any moment (its leaf reconnects)
  // 0600 before the seed is written, also over a leftover of a wider mode
  ensurePrivateFile(`${credsFile}.tmp`);
  writeFileSync(`${credsFile}.tmp`, creds.creds, { mode: 0o600 });
  renameSync(`${credsFile}.tmp`, credsFile);
  return {
    identity: uplink.name,
    leafUrl: creds.leaf_url,
    credsFile,
    inboxPrefix: creds.inbox_prefix,
    sources: creds.sources,
    expiresAt: creds.expires_at,
    claimed,
  };
}
