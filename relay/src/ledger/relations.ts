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
  add(relation: Relation, tenantId: string, agentId: string, target: AgentRef, now: number): number {
    const table = TABLE[relation];
    const ledger = this.ledger;
    return ledger.guarded(() =>
      ledger.db.transaction((): number => {
        ledger
          .stmt(
            `INSERT INTO ${table} (tenant_id, agent_id, target_agent_id, target_agent_number, created_at)
             VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (tenant_id, agent_id, target_agent_id) DO UPDATE SET target_agent_number = excluded.target_agent_number`,
          )
          .run(tenantId, agentId, target.agent_id, target.agent_number, now);
        const row = ledger
          .stmt(`SELECT created_at FROM ${table} WHERE tenant_id = ? AND agent_id = ? AND target_agent_id = ?`)
          .get(tenantId, agentId, target.agent_id) as { created_at: number };
        return row.created_at;
      })(),
    );
  }

  /** Lifts a block or mute; true when one existed. */
  remove(relation: Relation, tenantId: string, agentId: string, targetAgentId: string): boolean {
    return this.ledger.guarded(
      () =>
        this.ledger
          .stmt(`DELETE FROM ${TABLE[relation]} WHERE tenant_id = ? AND agent_id = ? AND target_agent_id = ?`)
          .run(tenantId, agentId, targetAgentId).changes > 0,
    );
  }

  /**
   * The agent id an existing row names by `ref` (its agent id, or the agent number
   * recorded with it), for lifting one whose target is no longer enrolled.
   */
  targetByRef(relation: Relation, tenantId: string, agentId: string, ref: string): string | undefined {
    return this.ledger.guarded(() => {
      const r = this.ledger
        .stmt(
          `SELECT target_agent_id FROM ${TABLE[relation]} WHERE tenant_id = ? AND agent_id = ?
           AND (target_agent_number = ? OR target_agent_id = ?) ORDER BY target_agent_number = ? DESC LIMIT 1`,
        )
        .get(tenantId, agentId, ref, ref, ref) as { target_agent_id: string } | undefined;
      return r?.target_agent_id;
    });
  }

  /** The agents `agentId` blocked or muted, oldest first; number and name of the current incarnation when enrolled. */
  list(relation: Relation, tenantId: string, agentId: string): RelationRow[] {
    return this.ledger.guarded(
      () =>
        this.ledger
          .stmt(
            `SELECT r.target_agent_id AS agent_id, COALESCE(a.agent_number, r.target_agent_number) AS agent_number,
               a.display_name AS display_name, r.created_at AS since
             FROM ${TABLE[relation]} r
             LEFT JOIN agents a ON a.tenant_id = r.tenant_id AND a.agent_id = r.target_agent_id AND a.revoked_at IS NULL
             WHERE r.tenant_id = ? AND r.agent_id = ?
             ORDER BY r.created_at, r.target_agent_id`,
          )
          .all(tenantId, agentId) as RelationRow[],
    );
  }

  /**
   * True when `agentId` (the recipient) blocked or muted `targetAgentId` (the sender).
   * Messaging refuses blocked sends; the webhook dispatcher skips muted ones.
   */
  has(relation: Relation, tenantId: string, agentId: string, targetAgentId: string): boolean {
    return this.ledger.guarded(
      () => this.ledger.stmt(HAS_SQL[relation]).get(tenantId, agentId, targetAgentId) !== undefined,
    );
  }
}
