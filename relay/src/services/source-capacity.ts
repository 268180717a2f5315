/**
 * Consumer capacity per tenant, from the bus and from the ledger: what `/readyz` shows in
 * its `capacity` entry and what `svc-relay nats reconcile-source-capacity` compares. The
 * relay never reconciles on its own; the operator command names every disagreement and
 * changes something only when asked (`--apply`).
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { accountConsumerCount, deleteSourceConsumer, sourceConsumerNames, streamConsumerCap } from '../bus/sources.js';
import type { RelayConfig } from '../config/config.js';
import type { LedgerStores } from '../ledger/stores.js';

const TIMEOUT_MS = 2000;

export interface NamedSourceEntry {
  agent_id: string;
  edge_agent_id: string;
  durable: string;
  created_at: string;
}

export interface TenantCapacity {
  /** the account's consumer ceiling */
  configured: number;
  /** consumers the account holds on the bus (null: the bus did not answer) */
  used: number | null;
  remaining: number | null;
  sources_limit: number;
  /** how many active named sources the ledger holds */
  named_source_count: number;
  /** the ledger's active named-source rows: only for an administrator of the tenant (they name agents) */
  named_sources?: NamedSourceEntry[];
  detail?: string;
}

export type CapacityInputs = {
  /** `limits` is read by /readyz only; reconcile takes the ceiling from the bus */
  config: Pick<RelayConfig, 'tenants' | 'limits'>;
  stores: Pick<LedgerStores, 'sources'>;
  connection: (tenantId: string) => Promise<NatsConnection>;
};

async function ledgerRows(ctx: CapacityInputs, tenantId: string): Promise<NamedSourceEntry[]> {
  return (await ctx.stores.sources.listForTenant(tenantId)).map((s) => ({
    agent_id: s.agent_id,
    edge_agent_id: s.edge_agent_id,
    durable: s.durable,
    created_at: new Date(s.created_at).toISOString(),
  }));
}

/** `rowsFor`: the tenants whose named-source rows are shown (an administrator's own). */
export async function sourceCapacity(
  ctx: CapacityInputs,
  rowsFor: ReadonlySet<string> = new Set(),
): Promise<Record<string, TenantCapacity>> {
  const out: Record<string, TenantCapacity> = {};
  const configured = ctx.config.limits.tenantMaxConsumers;
  for (const tenant of ctx.config.tenants) {
    // the rows only where they are shown: an anonymous probe (a load balancer's) counts them
    const rows = rowsFor.has(tenant) ? await ledgerRows(ctx, tenant) : undefined;
    const entry: TenantCapacity = {
      configured,
      used: null,
      remaining: null,
      sources_limit: ctx.config.limits.sourcesPerTenant,
      named_source_count: rows ? rows.length : await ctx.stores.sources.countForTenant(tenant),
      ...(rows ? { named_sources: rows } : {}),
    };
    try {
      const used = await accountConsumerCount(await ctx.connection(tenant), TIMEOUT_MS);
      entry.used = used;
      entry.remaining = Math.max(0, configured - used);
    } catch (err) {
      entry.detail = `bus: ${(err as Error).message}`;
    }
    out[tenant] = entry;
  }
  return out;
}

export interface Disagreement {
  tenant_id: string;
  kind: 'consumer_without_row' | 'row_without_consumer';
  durable: string;
  /** what --apply does about it */
  action: string;
}

export interface TenantReconciliation {
  tenant_id: string;
  bus: { consumers: number; source_consumers: string[] };
  ledger: { named_sources: number; durables: string[] };
  configured: number;
  remaining: number;
}

export interface Reconciliation {
  tenants: TenantReconciliation[];
  disagreements: Disagreement[];
  applied: boolean;
}

/**
 * Compares the bus's source consumers with the ledger's active rows. With `apply`, a
 * consumer without a row is deleted and a row without a consumer is released.
 */
export async function reconcileSourceCapacity(
  ctx: CapacityInputs,
  opts: { apply: boolean; now: number },
): Promise<Reconciliation> {
  const tenants: TenantReconciliation[] = [];
  const disagreements: Disagreement[] = [];
  for (const tenant of ctx.config.tenants) {
    const nc = await ctx.connection(tenant);
    const consumers = await accountConsumerCount(nc, TIMEOUT_MS);
    const onBus = await sourceConsumerNames(nc, TIMEOUT_MS);
    // the operator command has no relay settings: the ceiling is the one the bus holds
    const configured = await streamConsumerCap(nc, TIMEOUT_MS);
    const rows = await ctx.stores.sources.listForTenant(tenant);
    const inLedger = rows.map((r) => r.durable);
    for (const durable of onBus.filter((d) => !inLedger.includes(d)))
      disagreements.push({
        tenant_id: tenant,
        kind: 'consumer_without_row',
        durable,
        action: `delete consumer ${durable} of SVC_MSGS`,
      });
    for (const durable of inLedger.filter((d) => !onBus.includes(d)))
      disagreements.push({
        tenant_id: tenant,
        kind: 'row_without_consumer',
        durable,
        action: `release the ledger row of ${durable}`,
      });
    tenants.push({
      tenant_id: tenant,
      bus: { consumers, source_consumers: onBus },
      ledger: { named_sources: rows.length, durables: inLedger },
      configured,
      remaining: Math.max(0, configured - consumers),
    });
    if (!opts.apply) continue;
    for (const d of disagreements.filter((x) => x.tenant_id === tenant)) {
      if (d.kind === 'consumer_without_row') await deleteSourceConsumer(nc, d.durable, TIMEOUT_MS);
      else {
        const row = rows.find((r) => r.durable === d.durable);
        if (row) await ctx.stores.sources.release(row.id, opts.now);
      }
    }
  }
  return { tenants, disagreements, applied: opts.apply };
}

/** Human-readable lines: the figures side by side, then every disagreement. */
export function reconciliationText(r: Reconciliation): string {
  const lines: string[] = [];
  for (const t of r.tenants) {
    lines.push(
      `tenant ${t.tenant_id}: bus ${t.bus.consumers} consumers (${t.bus.source_consumers.length} named sources) | ledger ${t.ledger.named_sources} named sources | ceiling ${t.configured}, remaining ${t.remaining}`,
    );
  }
  if (r.disagreements.length === 0) lines.push('bus and ledger agree');
  for (const d of r.disagreements) {
    const what = d.kind === 'consumer_without_row' ? 'consumer on the bus, no ledger row' : 'ledger row, no consumer';
    lines.push(`  ${d.tenant_id} ${d.durable}: ${what}; ${r.applied ? 'done' : 'would'}: ${d.action}`);
  }
  if (!r.applied && r.disagreements.length > 0)
    lines.push('nothing changed; run again with --apply to make these changes');
  return lines.join('\n');
}
