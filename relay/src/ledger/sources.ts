/** Named sources and the leaf uplink users of edge identities. */
import type { Ledger } from './ledger.js';

export interface SourceRow {
  id: string;
  tenant_id: string;
  agent_row: string;
  edge_row: string;
  durable: string;
  created_at: number;
  released_at: number | null;
}

/** An active source with the agent it streams (for the readyz capacity entry and reconcile). */
export interface SourceListing extends SourceRow {
  agent_id: string;
  edge_agent_id: string;
}

export const UPLINK_USER_KIND = 'relay-uplink';

export class SourceStore {
  constructor(private readonly ledger: Ledger) {}

  insert(row: Omit<SourceRow, 'released_at'>): void {
    this.ledger.guarded(() =>
      this.ledger
        .stmt(
          `INSERT INTO named_sources (id, tenant_id, agent_row, edge_row, durable, created_at)
           VALUES (@id, @tenant_id, @agent_row, @edge_row, @durable, @created_at)`,
        )
        .run(row),
    );
  }

  activeByDurable(tenantId: string, durable: string): SourceRow | undefined {
    return this.ledger.guarded(
      () =>
        this.ledger
          .stmt('SELECT * FROM named_sources WHERE tenant_id = ? AND durable = ? AND released_at IS NULL')
          .get(tenantId, durable) as SourceRow | undefined,
    );
  }

  countForTenant(tenantId: string): number {
    return this.ledger.guarded(
      () =>
        (
          this.ledger
            .stmt('SELECT count(*) AS n FROM named_sources WHERE tenant_id = ? AND released_at IS NULL')
            .get(tenantId) as { n: number }
        ).n,
    );
  }

  countForEdge(edgeRow: string): number {
    return this.ledger.guarded(
      () =>
        (
          this.ledger
            .stmt('SELECT count(*) AS n FROM named_sources WHERE edge_row = ? AND released_at IS NULL')
            .get(edgeRow) as { n: number }
        ).n,
    );
  }

  /** Active sources the edge streams, by consumer name. */
  durablesOfEdge(edgeRow: string): string[] {
    return this.ledger.guarded(() =>
      (
        this.ledger
          .stmt('SELECT durable FROM named_sources WHERE edge_row = ? AND released_at IS NULL ORDER BY durable')
          .all(edgeRow) as Array<{ durable: string }>
      ).map((r) => r.durable),
    );
  }

  /** Active sources an incarnation is part of, as the streamed agent or as the edge. */
  activeOfIncarnation(agentRow: string): SourceRow[] {
    return this.ledger.guarded(
      () =>
        this.ledger
          .stmt(
            'SELECT * FROM named_sources WHERE (agent_row = ? OR edge_row = ?) AND released_at IS NULL ORDER BY durable',
          )
          .all(agentRow, agentRow) as SourceRow[],
    );
  }

  listForTenant(tenantId: string): SourceListing[] {
    return this.ledger.guarded(
      () =>
        this.ledger
          .stmt(
            `SELECT s.*, a.agent_id AS agent_id, e.agent_id AS edge_agent_id FROM named_sources s
             JOIN agents a ON a.id = s.agent_row JOIN agents e ON e.id = s.edge_row
             WHERE s.tenant_id = ? AND s.released_at IS NULL ORDER BY s.durable`,
          )
          .all(tenantId) as SourceListing[],
    );
  }

  release(id: string, now: number): void {
    this.ledger.guarded(() =>
      this.ledger.stmt('UPDATE named_sources SET released_at = ? WHERE id = ? AND released_at IS NULL').run(now, id),
    );
  }

  // leaf uplink users (bus_users of kind relay-uplink)

  addUplinkUser(u: { public_key: string; tenant_id: string; agent_row: string; created_at: number }): void {
    this.ledger.guarded(() =>
      this.ledger
        .stmt(
          `INSERT INTO bus_users (public_key, tenant_id, agent_row, kind, created_at)
           VALUES (@public_key, @tenant_id, @agent_row, '${UPLINK_USER_KIND}', @created_at)`,
        )
        .run(u),
    );
  }

  /** The edge's uplink users still live, except `keep`. */
  liveUplinkUsers(agentRow: string, keep: string): string[] {
    return this.ledger.guarded(() =>
      (
        this.ledger
          .stmt(
            `SELECT public_key FROM bus_users WHERE agent_row = ? AND kind = '${UPLINK_USER_KIND}'
             AND revoked_at IS NULL AND public_key != ?`,
          )
          .all(agentRow, keep) as Array<{ public_key: string }>
      ).map((r) => r.public_key),
    );
  }

  markUsersRevoked(publicKeys: readonly string[], now: number): void {
    this.ledger.guarded(() => {
      const stmt = this.ledger.stmt('UPDATE bus_users SET revoked_at = ? WHERE public_key = ? AND revoked_at IS NULL');
      for (const key of publicKeys) stmt.run(now, key);
    });
  }
}
