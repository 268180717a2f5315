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

  get #sql() {
    return this.ledger.sql;
  }

  async insert(row: Omit<SourceRow, 'released_at'>): Promise<void> {
    await this.#sql.run(
      `INSERT INTO named_sources (id, tenant_id, agent_row, edge_row, durable, created_at)
       VALUES (@id, @tenant_id, @agent_row, @edge_row, @durable, @created_at)`,
      { ...row },
    );
  }

  activeByDurable(tenantId: string, durable: string): Promise<SourceRow | undefined> {
    return this.#sql.get<SourceRow>(
      'SELECT * FROM named_sources WHERE tenant_id = ? AND durable = ? AND released_at IS NULL',
      [tenantId, durable],
    );
  }

  async countForTenant(tenantId: string): Promise<number> {
    const r = await this.#sql.get<{ n: number }>(
      'SELECT count(*) AS n FROM named_sources WHERE tenant_id = ? AND released_at IS NULL',
      [tenantId],
    );
    return r?.n ?? 0;
  }

  async countForEdge(edgeRow: string): Promise<number> {
    const r = await this.#sql.get<{ n: number }>(
      'SELECT count(*) AS n FROM named_sources WHERE edge_row = ? AND released_at IS NULL',
      [edgeRow],
    );
    return r?.n ?? 0;
  }

  /** Active sources the edge streams, by consumer name. */
  async durablesOfEdge(edgeRow: string): Promise<string[]> {
    const rows = await this.#sql.all<{ durable: string }>(
      'SELECT durable FROM named_sources WHERE edge_row = ? AND released_at IS NULL ORDER BY durable',
      [edgeRow],
    );
    return rows.map((r) => r.durable);
  }

  /** Active sources an incarnation is part of, as the streamed agent or as the edge. */
  activeOfIncarnation(agentRow: string): Promise<SourceRow[]> {
    return this.#sql.all<SourceRow>(
      'SELECT * FROM named_sources WHERE (agent_row = ? OR edge_row = ?) AND released_at IS NULL ORDER BY durable',
      [agentRow, agentRow],
    );
  }

  listForTenant(tenantId: string): Promise<SourceListing[]> {
    return this.#sql.all<SourceListing>(
      `SELECT s.*, a.agent_id AS agent_id, e.agent_id AS edge_agent_id FROM named_sources s
       JOIN agents a ON a.id = s.agent_row JOIN agents e ON e.id = s.edge_row
       WHERE s.tenant_id = ? AND s.released_at IS NULL ORDER BY s.durable`,
      [tenantId],
    );
  }

  async release(id: string, now: number): Promise<void> {
    await this.#sql.run('UPDATE named_sources SET released_at = ? WHERE id = ? AND released_at IS NULL', [now, id]);
  }

  // leaf uplink users (bus_users of kind relay-uplink)

  async addUplinkUser(u: {
    public_key: string;
    tenant_id: string;
    agent_row: string;
    created_at: number;
  }): Promise<void> {
    await this.#sql.run(
      `INSERT INTO bus_users (public_key, tenant_id, agent_row, kind, created_at)
       VALUES (@public_key, @tenant_id, @agent_row, '${UPLINK_USER_KIND}', @created_at)`,
      { ...u },
    );
  }

  /** The edge's uplink users still live, except `keep`. */
  async liveUplinkUsers(agentRow: string, keep: string): Promise<string[]> {
    const rows = await this.#sql.all<{ public_key: string }>(
      `SELECT public_key FROM bus_users WHERE agent_row = ? AND kind = '${UPLINK_USER_KIND}'
       AND revoked_at IS NULL AND public_key != ?`,
      [agentRow, keep],
    );
    return rows.map((r) => r.public_key);
  }

  /** Every uplink user still live, with its tenant and edge. */
  liveUplinkUsersOfAll(): Promise<Array<{ public_key: string; tenant_id: string; agent_row: string }>> {
    return this.#sql.all(
      `SELECT public_key, tenant_id, agent_row FROM bus_users WHERE kind = '${UPLINK_USER_KIND}' AND revoked_at IS NULL`,
    );
  }

  async markUsersRevoked(publicKeys: readonly string[], now: number): Promise<void> {
    for (const key of publicKeys) {
      await this.#sql.run('UPDATE bus_users SET revoked_at = ? WHERE public_key = ? AND revoked_at IS NULL', [
        now,
        key,
      ]);
    }
  }
}
