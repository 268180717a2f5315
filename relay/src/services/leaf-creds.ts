/**
 * relay-uplink/v1 credentials for an edge machine's leaf node: a NATS user of the tenant
 * account that may connect only as a leaf node, and use only the subjects of the sources
 * the edge holds (pull, consumer info, acks) plus reply inboxes. Each issue is a rotation:
 * the new user is recorded first, then the edge's earlier users are revoked (the edge
 * rewrites its creds file and its nats-server reconnects with it, no restart).
 */
import { SvcError, type UplinkCreds } from '@svc/shared';
import { JETSTREAM_DOMAIN } from '../bus/index.js';
import { uplinkInboxPrefix, uplinkSubjects } from '../bus/sources.js';
import type { RelayBase } from '../context.js';
import type { AgentRow } from '../ledger/ledger.js';

type Ctx = Pick<RelayBase, 'config' | 'stores' | 'bus' | 'logger' | 'now'>;

export async function issueUplinkCreds(ctx: Ctx, edge: AgentRow): Promise<UplinkCreds> {
  const leafUrl = ctx.bus.leafUrl;
  if (!leafUrl) throw new SvcError('leaf_unavailable');
  const durables = await ctx.stores.sources.durablesOfEdge(edge.id);
  const subjects = uplinkSubjects(edge.agent_number, durables);
  const ttl = ctx.config.limits.leafCredsTtlSeconds;
  let minted: { creds: string; publicKey: string };
  try {
    minted = await ctx.bus.mintUserCreds(edge.tenant_id, {
      name: `uplink:${edge.agent_id}`,
      pub: subjects,
      sub: subjects,
      connectionTypes: ['LEAFNODE'],
      expiresInSeconds: ttl,
    });
  } catch (err) {
    throw new SvcError('bus_unavailable', undefined, { detail: (err as Error).message, cause: err });
  }
  const now = ctx.now();
  // recorded before it is handed out, so revoking the edge always finds it
  await ctx.stores.sources.addUplinkUser({
    public_key: minted.publicKey,
    tenant_id: edge.tenant_id,
    agent_row: edge.id,
    created_at: now,
  });
  const old = await ctx.stores.sources.liveUplinkUsers(edge.id, minted.publicKey);
  if (old.length > 0) {
    try {
      await ctx.bus.revokeUsers(edge.tenant_id, old);
      await ctx.stores.sources.markUsersRevoked(old, now);
    } catch (err) {
      // the old users stay recorded as live; the next issue (or the edge's revocation) retries
      ctx.logger.warn({ edge: edge.agent_id, err: (err as Error).message }, 'old uplink users not revoked yet');
    }
  }
  ctx.logger.info({ tenant_id: edge.tenant_id, edge: edge.agent_id, sources: durables.length }, 'uplink creds issued');
  return {
    kind: 'relay-uplink/v1',
    creds: minted.creds,
    user_public_key: minted.publicKey,
    leaf_url: leafUrl,
    jetstream_domain: JETSTREAM_DOMAIN,
    inbox_prefix: uplinkInboxPrefix(edge.agent_number),
    subjects,
    sources: durables,
    expires_at: new Date(now + ttl * 1000).toISOString(),
    revoked_users: old.length,
  };
}
