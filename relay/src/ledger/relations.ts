/**
 * Blocks and mutes: one implementation over the two tables (agent_blocks, agent_mutes),
 * which have the same shape. Keyed by tenant + agent id on both sides, so they survive a
 * re-enrollment; every query is bound to one tenant.
 */
import type { Ledger } from './ledger.js';

export type Relation = 'block' | 'mute';

/** Table names are fixed here, never taken from input. */
const TABLE: Record<Relation, string> = { block: 'agent_blocks', mute: 'agent_mutes' };

/** The send path asks this for every recipient: its SQL text is built once. */
const HAS_SQL: Record<Relation, string> = {
  block: 'SELECT 1 FROM agent_blocks WHERE tenant_id = ? AND agent_id = ? AND target_agent_id = ?',
  mute: 'SELECT 1 FROM agent_mutes WHERE tenant_id = ? AND agent_id = ? AND target_agent_id = ?',
};

export interface RelationRow {
  agent_id: string;
  agent_number: string;
  display_name: string | null;
  since: number;
}

export interface AgentRef {
  agent_id: string;
  agent_number: string;
}

export class RelationStore {
  constructor(private readonly ledger: Ledger) {}

  /** Blocks or mutes `target` for `agentId`. Idempotent: a second call keeps the original time and returns it. */
  add(relation: Relation, tenantId: string, agentId: string, target: AgentRef, now: number): Promise<number> {
    const table = TABLE[relation];
    return this.ledger.sql.transaction(async (tx): Promise<number> => {
      await tx.run(
        `INSERT INTO ${table} (tenant_id, agent_id, target_agent_id, target_agent_number, created_at)
         VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (tenant_id, agent_id, target_agent_id) DO UPDATE SET target_agent_number = excluded.target_agent_number`,
        [tenantId, agentId, target.agent_id, target.agent_number, now],
      );
      const row = await tx.get<{ created_at: number }>(
        `SELECT created_at FROM ${table} WHERE tenant_id = ? AND agent_id = ? AND target_agent_id = ?`,
        [tenantId, agentId, target.agent_id],
      );
      return row?.created_at ?? now;
    });
  }

  /** Lifts a block or mute; true when one existed. */
  async remove(relation: Relation, tenantId: string, agentId: string, targetAgentId: string): Promise<boolean> {
    return (
      (await this.ledger.sql.run(
        `DELETE FROM ${TABLE[relation]} WHERE tenant_id = ? AND agent_id = ? AND target_agent_id = ?`,
        [tenantId, agentId, targetAgentId],
      )) > 0
    );
  }

  /**
   * The agent id an existing row names by `ref` (its agent id, or the agent number
   * recorded with it), for lifting one whose target is no longer enrolled.
   */
  async targetByRef(relation: Relation, tenantId: string, agentId: string, ref: string): Promise<string | undefined> {
    const r = await this.ledger.sql.get<{ target_agent_id: string }>(
      `SELECT target_agent_id FROM ${TABLE[relation]} WHERE tenant_id = ? AND agent_id = ?
       AND (target_agent_number = ? OR target_agent_id = ?) ORDER BY target_agent_number = ? DESC LIMIT 1`,
      [tenantId, agentId, ref, ref, ref],
    );
    return r?.target_agent_id;
  }

  /** The agents `agentId` blocked or muted, oldest first; number and name of the current incarnation when enrolled. */
  list(relation: Relation, tenantId: string, agentId: string): Promise<RelationRow[]> {
    return this.ledger.sql.all<RelationRow>(
      `SELECT r.target_agent_id AS agent_id, COALESCE(a.agent_number, r.target_agent_number) AS agent_number,
         a.display_name AS display_name, r.created_at AS since
       FROM ${TABLE[relation]} r
       LEFT JOIN agents a ON a.tenant_id = r.tenant_id AND a.agent_id = r.target_agent_id AND a.revoked_at IS NULL
       WHERE r.tenant_id = ? AND r.agent_id = ?
       ORDER BY r.created_at, r.target_agent_id`,
      [tenantId, agentId],
    );
  }

  /**
   * True when `agentId` (the recipient) blocked or muted `targetAgentId` (the sender).
   * Messaging refuses blocked sends; the webhook dispatcher skips muted ones.
   */
  async has(relation: Relation, tenantId: string, agentId: string, targetAgentId: string): Promise<boolean> {
    return (await this.ledger.sql.get(HAS_SQL[relation], [tenantId, agentId, targetAgentId])) !== undefined;
  }
}
