/**
 * Named sources: an edge machine (an identity holding `nats-relay`) claims an agent of
 * its tenant and gets one durable consumer for it. Every limit is checked before anything
 * is created on the bus, and the work on one tenant is serialized, so two claims can never
 * both take the last slot: the tenant's 400 sources (ledger), the edge's 64 (ledger), and
 * the account's consumer ceiling (the bus's own count), with each stream's max_consumers
 * as the server-side backstop.
 */
import { randomUUID } from 'node:crypto';
import { PROOF_MAX_SKEW_MS, SvcError, sourceClaimProofBytes } from '@svc/shared';
import { verifyEd25519 } from '../auth/signatures.js';
import { accountConsumerCount, createSourceConsumer, deleteSourceConsumer, sourceDurable } from '../bus/sources.js';
import type { RelayBase } from '../context.js';
import type { AgentRow } from '../ledger/ledger.js';
import type { SourceRow } from '../ledger/sources.js';

type Ctx = Pick<RelayBase, 'config' | 'ledger' | 'stores' | 'bus' | 'logger' | 'now' | 'sourceClaims'>;
type ClaimCtx = Ctx & Pick<RelayBase, 'deployment'>;

/** The agent's signed consent to be streamed by this edge (see sourceClaimProofBytes). */
export interface SourceConsent {
  issued_at: string;
  proof: string;
}

const BUS_TIMEOUT_MS = 2000;

export interface ClaimedSource {
  agent_id: string;
  agent_number: string;
  durable: string;
  stream: string;
  filter_subject: string;
  created_at: string;
}

/** Runs `fn` after every earlier source operation on the same tenant of this relay has settled. */
function serialized<T>(ctx: Ctx, tenantId: string, fn: () => Promise<T>): Promise<T> {
  return ctx.sourceClaims.run(tenantId, fn);
}

function describe(row: SourceRow, agent: AgentRow): ClaimedSource {
  return {
    agent_id: agent.agent_id,
    agent_number: agent.agent_number,
    durable: row.durable,
    stream: 'SVC_MSGS',
    filter_subject: `msg.${agent.agent_number}`,
    created_at: new Date(row.created_at).toISOString(),
  };
}

async function busCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw new SvcError('bus_unavailable', undefined, { detail: `${what}: ${(err as Error).message}`, cause: err });
  }
}

/**
 * The agent itself must consent: any uplink identity of the tenant may call this route, and
 * without the agent's signature one edge could take another machine's agent (and pull its
 * mail, or keep the agent's own machine from claiming it).
 */
function checkConsent(ctx: ClaimCtx, edge: AgentRow, agent: AgentRow, consent: SourceConsent): void {
  const issuedAt = Date.parse(consent.issued_at);
  if (!Number.isFinite(issuedAt) || Math.abs(ctx.now() - issuedAt) > PROOF_MAX_SKEW_MS)
    throw new SvcError('invalid_source_claim_proof', undefined, { detail: 'issued_at is not within 5 minutes' });
  const statement = sourceClaimProofBytes({
    deployment_id: ctx.deployment.deploymentId,
    tenant_id: agent.tenant_id,
    agent_number: agent.agent_number,
    edge_agent_number: edge.agent_number,
    issued_at: consent.issued_at,
  });
  if (!verifyEd25519(agent.signing_public_key, statement, consent.proof))
    throw new SvcError('invalid_source_claim_proof', undefined, { detail: "not the agent's signature" });
}

/** Claims `agent` as a named source of `edge`; claiming one the edge already holds answers it again. */
export function claimSource(
  ctx: ClaimCtx,
  edge: AgentRow,
  agent: AgentRow,
  consent: SourceConsent,
): Promise<ClaimedSource> {
  checkConsent(ctx, edge, agent, consent);
  return serialized(ctx, edge.tenant_id, async () => {
    const durable = sourceDurable(agent.agent_number);
    const held = await ctx.stores.sources.activeByDurable(edge.tenant_id, durable);
    if (held) {
      if (held.edge_row === edge.id && held.agent_row === agent.id) return describe(held, agent);
      throw new SvcError('source_claimed');
    }
    const limits = ctx.config.limits;
    if ((await ctx.stores.sources.countForTenant(edge.tenant_id)) >= limits.sourcesPerTenant)
      throw new SvcError(
        'source_capacity_exhausted',
        `The tenant already has the maximum of ${limits.sourcesPerTenant} named sources; release one first.`,
      );
    if ((await ctx.stores.sources.countForEdge(edge.id)) >= limits.sourcesPerEdge)
      throw new SvcError(
        'edge_source_capacity_exhausted',
        `This edge machine already streams the maximum of ${limits.sourcesPerEdge} named sources; release one first.`,
      );
    const nc = await busCall('tenant connection', () => ctx.bus.tenantConnection(edge.tenant_id));
    const used = await busCall('account info', () => accountConsumerCount(nc, BUS_TIMEOUT_MS));
    if (used >= limits.tenantMaxConsumers)
      throw new SvcError(
        'consumer_ceiling_reached',
        `The tenant account already holds ${used} of its ${limits.tenantMaxConsumers} consumers; release a source first.`,
      );
    await busCall('create consumer', () => createSourceConsumer(nc, durable, agent.agent_number, BUS_TIMEOUT_MS));
    const row = {
      id: randomUUID(),
      tenant_id: edge.tenant_id,
      agent_row: agent.id,
      edge_row: edge.id,
      durable,
      created_at: ctx.now(),
    };
    try {
      await ctx.stores.sources.insert(row);
    } catch (err) {
      // no consumer without its ledger row
      await deleteSourceConsumer(nc, durable, BUS_TIMEOUT_MS).catch(() => undefined);
      throw err;
    }
    ctx.logger.info({ tenant_id: edge.tenant_id, edge: edge.agent_id, agent: agent.agent_id }, 'named source claimed');
    return describe({ ...row, released_at: null }, agent);
  });
}

/**
 * Takes `gone` out of the edge's uplink account: done before their consumers are deleted,
 * because once one is gone another edge may claim the agent, and its consumer has the same name.
 */
async function withdrawFromUplink(ctx: Ctx, tenantId: string, edgeRow: string, gone: ReadonlySet<string>) {
  const rest = (await ctx.stores.sources.durablesOfEdge(edgeRow)).filter((d) => !gone.has(d));
  await ctx.bus.publishUplink(tenantId, edgeRow, rest);
}

/** Releases the edge's source of `agent`: the consumer is deleted, then the row released. */
export function releaseSource(ctx: Ctx, edge: AgentRow, agentNumber: string): Promise<void> {
  return serialized(ctx, edge.tenant_id, async () => {
    const held = await ctx.stores.sources.activeByDurable(edge.tenant_id, sourceDurable(agentNumber));
    if (!held || held.edge_row !== edge.id) throw new SvcError('not_found', 'This edge holds no such named source.');
    const nc = await busCall('tenant connection', () => ctx.bus.tenantConnection(edge.tenant_id));
    await busCall('uplink account', () => withdrawFromUplink(ctx, edge.tenant_id, edge.id, new Set([held.durable])));
    await busCall('delete consumer', () => deleteSourceConsumer(nc, held.durable, BUS_TIMEOUT_MS));
    await ctx.stores.sources.release(held.id, ctx.now());
    ctx.logger.info({ tenant_id: edge.tenant_id, edge: edge.agent_id, durable: held.durable }, 'named source released');
  });
}

/**
 * Releases every source a revoked incarnation is part of (as the streamed agent or as the
 * edge). Throws source_cleanup_failed when the bus cannot confirm a deletion; the rows
 * then stay active and the next cleanup round tries again.
 */
export function releaseSourcesOf(ctx: Ctx, row: AgentRow): Promise<number> {
  return serialized(ctx, row.tenant_id, async () => {
    const sources = await ctx.stores.sources.activeOfIncarnation(row.id);
    if (sources.length === 0) return 0;
    try {
      const nc = await ctx.bus.tenantConnection(row.tenant_id);
      const gone = new Set(sources.map((s) => s.durable));
      for (const edgeRow of new Set(sources.map((s) => s.edge_row)))
        await withdrawFromUplink(ctx, row.tenant_id, edgeRow, gone);
      for (const s of sources) {
        await deleteSourceConsumer(nc, s.durable, BUS_TIMEOUT_MS);
        await ctx.stores.sources.release(s.id, ctx.now());
      }
    } catch (err) {
      if (err instanceof SvcError && err.code === 'ledger_closed') throw err;
      ctx.logger.warn({ agent_row: row.id, err: (err as Error).message }, 'named source cleanup could not finish');
      throw new SvcError('source_cleanup_failed', undefined, { detail: (err as Error).message, cause: err });
    }
    return sources.length;
  });
}
