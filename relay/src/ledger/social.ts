/**
 * Blocks, mutes, abuse reports and contacts. Blocks, mutes and contacts are keyed by
 * tenant + agent id on both sides (they survive a re-enrollment); every query is bound
 * to one tenant.
 */
import type { Ledger } from './ledger.js';

export type Relation = 'block' | 'mute';
const TABLE: Record<Relation, string> = { block: 'agent_blocks', mute: 'agent_mutes' };

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

/**
 * Blocks or mutes `target` for `agentId`. Idempotent: a second call keeps the original
 * time and returns it.
 */
export function addRelation(
  ledger: Ledger,
  relation: Relation,
  tenantId: string,
  agentId: string,
  target: AgentRef,
  now: number,
): number {
  const table = TABLE[relation];
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
export function removeRelation(
  ledger: Ledger,
  relation: Relation,
  tenantId: string,
  agentId: string,
  targetAgentId: string,
): boolean {
  return ledger.guarded(
    () =>
      ledger
        .stmt(`DELETE FROM ${TABLE[relation]} WHERE tenant_id = ? AND agent_id = ? AND target_agent_id = ?`)
        .run(tenantId, agentId, targetAgentId).changes > 0,
  );
}

/**
 * The agent id an existing block or mute row names by `ref` (its agent id, or the agent
 * number recorded with it), for lifting one whose target is no longer enrolled.
 */
export function relationTargetByRef(
  ledger: Ledger,
  relation: Relation,
  tenantId: string,
  agentId: string,
  ref: string,
): string | undefined {
  return ledger.guarded(() => {
    const r = ledger
      .stmt(
        `SELECT target_agent_id FROM ${TABLE[relation]} WHERE tenant_id = ? AND agent_id = ?
         AND (target_agent_number = ? OR target_agent_id = ?) ORDER BY target_agent_number = ? DESC LIMIT 1`,
      )
      .get(tenantId, agentId, ref, ref, ref) as { target_agent_id: string } | undefined;
    return r?.target_agent_id;
  });
}

/** The agents `agentId` blocked or muted, oldest first; number and name of the current incarnation when enrolled. */
export function listRelations(ledger: Ledger, relation: Relation, tenantId: string, agentId: string): RelationRow[] {
  return ledger.guarded(
    () =>
      ledger
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

/** True when the recipient blocked the sender (both agent ids, same tenant). Messaging refuses such sends. */
export function isBlocked(ledger: Ledger, tenantId: string, recipientAgentId: string, senderAgentId: string): boolean {
  return ledger.guarded(
    () =>
      ledger
        .stmt('SELECT 1 FROM agent_blocks WHERE tenant_id = ? AND agent_id = ? AND target_agent_id = ?')
        .get(tenantId, recipientAgentId, senderAgentId) !== undefined,
  );
}

/** True when the recipient muted the sender: delivery may proceed, notifications should not. */
export function isMuted(ledger: Ledger, tenantId: string, recipientAgentId: string, senderAgentId: string): boolean {
  return ledger.guarded(
    () =>
      ledger
        .stmt('SELECT 1 FROM agent_mutes WHERE tenant_id = ? AND agent_id = ? AND target_agent_id = ?')
        .get(tenantId, recipientAgentId, senderAgentId) !== undefined,
  );
}

// reports

export interface NewReport {
  id: string;
  tenant_id: string;
  reporter_agent_id: string;
  reporter_row: string;
  target_agent_id: string;
  target_row: string;
  reason: string;
  created_at: number;
}

export function insertReport(ledger: Ledger, report: NewReport): void {
  ledger.guarded(() =>
    ledger
      .stmt(
        `INSERT INTO agent_reports (id, tenant_id, reporter_agent_id, reporter_row, target_agent_id, target_row, reason, created_at)
         VALUES (@id, @tenant_id, @reporter_agent_id, @reporter_row, @target_agent_id, @target_row, @reason, @created_at)`,
      )
      .run(report),
  );
}

/** Reports about an agent id, newest first (for operators). */
export function reportsAbout(ledger: Ledger, tenantId: string, targetAgentId: string): NewReport[] {
  return ledger.guarded(
    () =>
      ledger
        .stmt('SELECT * FROM agent_reports WHERE tenant_id = ? AND target_agent_id = ? ORDER BY created_at DESC')
        .all(tenantId, targetAgentId) as NewReport[],
  );
}

// contacts

export interface ContactRow {
  agent_id: string;
  agent_number: string;
  display_name: string | null;
  alias: string | null;
  notes: string | null;
  created_at: number;
  updated_at: number;
}

const CONTACT_SELECT = `SELECT c.contact_agent_id AS agent_id, COALESCE(a.agent_number, c.contact_agent_number) AS agent_number,
    a.display_name AS display_name, c.alias, c.notes, c.created_at, c.updated_at
  FROM contacts c
  LEFT JOIN agents a ON a.tenant_id = c.tenant_id AND a.agent_id = c.contact_agent_id AND a.revoked_at IS NULL`;

/**
 * Adds a contact, or updates the alias and notes of an existing one (`undefined` keeps
 * a field, `null` clears it). Returns the row and whether it was created.
 */
export function upsertContact(
  ledger: Ledger,
  tenantId: string,
  agentId: string,
  contact: AgentRef,
  fields: { alias?: string | null | undefined; notes?: string | null | undefined },
  now: number,
): { contact: ContactRow; created: boolean } {
  return ledger.guarded(() =>
    ledger.db.transaction(() => {
      const existing = ledger
        .stmt('SELECT alias, notes FROM contacts WHERE tenant_id = ? AND agent_id = ? AND contact_agent_id = ?')
        .get(tenantId, agentId, contact.agent_id) as { alias: string | null; notes: string | null } | undefined;
      const alias = fields.alias === undefined ? (existing?.alias ?? null) : fields.alias;
      const notes = fields.notes === undefined ? (existing?.notes ?? null) : fields.notes;
      ledger
        .stmt(
          `INSERT INTO contacts (tenant_id, agent_id, contact_agent_id, contact_agent_number, alias, notes, created_at, updated_at)
           VALUES (@tenant_id, @agent_id, @contact_agent_id, @contact_agent_number, @alias, @notes, @now, @now)
           ON CONFLICT (tenant_id, agent_id, contact_agent_id) DO UPDATE SET
             contact_agent_number = @contact_agent_number, alias = @alias, notes = @notes, updated_at = @now`,
        )
        .run({
          tenant_id: tenantId,
          agent_id: agentId,
          contact_agent_id: contact.agent_id,
          contact_agent_number: contact.agent_number,
          alias,
          notes,
          now,
        });
      const row = ledger
        .stmt(`${CONTACT_SELECT} WHERE c.tenant_id = ? AND c.agent_id = ? AND c.contact_agent_id = ?`)
        .get(tenantId, agentId, contact.agent_id) as ContactRow;
      return { contact: row, created: existing === undefined };
    })(),
  );
}

export function listContacts(ledger: Ledger, tenantId: string, agentId: string): ContactRow[] {
  return ledger.guarded(
    () =>
      ledger
        .stmt(`${CONTACT_SELECT} WHERE c.tenant_id = ? AND c.agent_id = ? ORDER BY c.created_at, c.contact_agent_id`)
        .all(tenantId, agentId) as ContactRow[],
  );
}

/**
 * Removes the contact named by its agent number (current or as recorded), else by its
 * agent id. False when the caller has no such contact.
 */
export function removeContact(ledger: Ledger, tenantId: string, agentId: string, ref: string): boolean {
  return ledger.guarded(() =>
    ledger.db.transaction((): boolean => {
      const row = ledger
        .stmt(
          `SELECT c.contact_agent_id AS id FROM contacts c
           LEFT JOIN agents a ON a.tenant_id = c.tenant_id AND a.agent_id = c.contact_agent_id AND a.revoked_at IS NULL
           WHERE c.tenant_id = ? AND c.agent_id = ?
             AND (a.agent_number = ? OR c.contact_agent_number = ? OR c.contact_agent_id = ?)
           ORDER BY (a.agent_number = ?) DESC, (c.contact_agent_number = ?) DESC LIMIT 1`,
        )
        .get(tenantId, agentId, ref, ref, ref, ref, ref) as { id: string } | undefined;
      if (!row) return false;
      ledger
        .stmt('DELETE FROM contacts WHERE tenant_id = ? AND agent_id = ? AND contact_agent_id = ?')
        .run(tenantId, agentId, row.id);
      return true;
    })(),
  );
}
