/**
 * relay-uplink/v1 credentials for an edge machine's leaf node: a NATS user that may connect
 * only as a leaf node, in the edge's own uplink account. That account imports from the
 * tenant account the sources the edge holds (pull, consumer info, acks) and nothing else;
 * the user may use those subjects plus its reply inbox. Each issue is a rotation: the new
 * user is recorded first, then the edge's earlier users are revoked (the edge rewrites its
 * creds file and its nats-server reconnects with it, no restart).
 *
 * The edge is never a user of the tenant account: a pull's reply subject is where the
 * consumer delivers, nats-server checks it against no permission, and inside the tenant
 * account an edge could have the consumer deliver into `msg.*` (stored again by SVC_MSGS) or
 * another edge's inbox. Through the imports, the hub delivers only into the edge's account.
 */
import { SvcError, type UplinkCreds } from '@svc/shared';
import { JETSTREAM_DOMAIN } from '../bus/index.js';
import { uplinkInboxPrefix, uplinkSubjects } from '../bus/sources.js';
import type { RelayBase } from '../context.js';
import type { AgentRow } from '../ledger/ledger.js';

type Ctx = Pick<RelayBase, 'config' | 'stores' | 'bus' | 'logger' | 'now' | 'sourceClaims'>;

export async function issueUplinkCreds(ctx: Ctx, edge: AgentRow): Promise<UplinkCreds> {
  const leafUrl = ctx.bus.leafUrl;
  if (!leafUrl) throw new SvcError('leaf_unavailable');
  const ttl = ctx.config.limits.leafCredsTtlSeconds;
  // one at a time with the tenant's claims and releases: the account imports what the edge
  // holds now, and a release meanwhile cannot be undone by a push of an older list
  const { durables, subjects, minted, old } = await ctx.sourceClaims.run(edge.tenant_id, async () => {
    const durables = await ctx.stores.sources.durablesOfEdge(edge.id);
    const subjects = uplinkSubjects(edge.agent_number, durables);
    let minted: { creds: string; publicKey: string };
    try {
      await ctx.bus.publishUplink(edge.tenant_id, edge.id, durables);
      minted = await ctx.bus.mintUplinkCreds(edge.tenant_id, edge.id, {
        name: `uplink:${edge.agent_id}`,
        pub: subjects,
        sub: subjects,
        connectionTypes: ['LEAFNODE'],
        expiresInSeconds: ttl,
      });
    } catch (err) {
      throw new SvcError('bus_unavailable', undefined, { detail: (err as Error).message, cause: err });
    }
    // recorded before it is handed out, so revoking the edge always finds it
    await ctx.stores.sources.addUplinkUser({
      public_key: minted.publicKey,
      tenant_id: edge.tenant_id,
      agent_row: edge.id,
      created_at: ctx.now(),
    });
    const old = await ctx.stores.sources.liveUplinkUsers(edge.id, minted.publicKey);
    if (old.length > 0) {
      try {
        await ctx.bus.publishUplink(edge.tenant_id, edge.id, durables, old);
        await ctx.stores.sources.markUsersRevoked(old, ctx.now());
      } catch (err) {
        // the old users stay recorded as live; the next issue (or the edge's revocation) retries
        ctx.logger.warn({ edge: edge.agent_id, err: (err as Error).message }, 'old uplink users not revoked yet');
      }
    }
    return { durables, subjects, minted, old };
  });
  const now = ctx.now();
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

/**
 * Revokes the uplink users an older relay minted in the tenant account (before edges had
 * uplink accounts): with them an edge could have the hub deliver its sources' messages to
 * any subject of the tenant account. Their leaf links are cut; a daemon whose link stays
 * cut fetches new creds (in its uplink account) by itself. Run at start; returns how many
 * it revoked. What the bus cannot confirm stays live for the next start (and expires).
 */
export async function revokeTenantAccountUplinkUsers(ctx: Ctx): Promise<number> {
  const live = await ctx.stores.sources.liveUplinkUsersOfAll();
  const byTenant = new Map<string, typeof live>();
  for (const u of live) byTenant.set(u.tenant_id, [...(byTenant.get(u.tenant_id) ?? []), u]);
  let revoked = 0;
  for (const [tenant, users] of byTenant) {
    const legacy = new Set(
      await ctx.bus.mintedInTenant(
        tenant,
        users.map((u) => u.public_key),
      ),
    );
    for (const edge of new Set(users.filter((u) => legacy.has(u.public_key)).map((u) => u.agent_row))) {
      const keys = users.filter((u) => u.agent_row === edge && legacy.has(u.public_key)).map((u) => u.public_key);
      await ctx.sourceClaims.run(tenant, async () => {
        await ctx.bus.publishUplink(tenant, edge, await ctx.stores.sources.durablesOfEdge(edge), keys);
        await ctx.stores.sources.markUsersRevoked(keys, ctx.now());
      });
      revoked += keys.length;
    }
  }
  if (revoked > 0)
    ctx.logger.warn({ users: revoked }, 'uplink creds of an older relay revoked; their edges fetch new ones');
  return revoked;
}
