/**
 * An agent's contacts: other agents of its tenant with an optional alias and notes, keyed
 * by tenant + agent id on both sides (they survive a re-enrollment).
 */
import type { Ledger } from './ledger.js';
import type { AgentRef } from './relations.js';

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

export class ContactStore {
  constructor(private readonly ledger: Ledger) {}

  /**
   * Adds a contact, or updates the alias and notes of an existing one (`undefined` keeps
   * a field, `null` clears it). Returns the row and whether it was created.
   */
  upsert(
    tenantId: string,
    agentId: string,
    contact: AgentRef,
    fields: { alias?: string | null | undefined; notes?: string | null | undefined },
    now: number,
  ): Promise<{ contact: ContactRow; created: boolean }> {
    return this.ledger.sql.transaction(async (tx) => {
      const existing = await tx.get<{ alias: string | null; notes: string | null }>(
        `SELECT alias, notes FROM contacts WHERE tenant_id = ? AND agent_id = ? AND contact_agent_id = ?${this.ledger.forUpdate}`,
        [tenantId, agentId, contact.agent_id],
      );
      const alias = fields.alias === undefined ? (existing?.alias ?? null) : fields.alias;
      const notes = fields.notes === undefined ? (existing?.notes ?? null) : fields.notes;
      await tx.run(
        `INSERT INTO contacts (tenant_id, agent_id, contact_agent_id, contact_agent_number, alias, notes, created_at, updated_at)
         VALUES (@tenant_id, @agent_id, @contact_agent_id, @contact_agent_number, @alias, @notes, @now, @now)
         ON CONFLICT (tenant_id, agent_id, contact_agent_id) DO UPDATE SET
           contact_agent_number = @contact_agent_number, alias = @alias, notes = @notes, updated_at = @now`,
        {
          tenant_id: tenantId,
          agent_id: agentId,
          contact_agent_id: contact.agent_id,
          contact_agent_number: contact.agent_number,
          alias,
          notes,
          now,
        },
      );
      const row = (await tx.get<ContactRow>(
        `${CONTACT_SELECT} WHERE c.tenant_id = ? AND c.agent_id = ? AND c.contact_agent_id = ?`,
        [tenantId, agentId, contact.agent_id],
      )) as ContactRow;
      return { contact: row, created: existing === undefined };
    });
  }

  list(tenantId: string, agentId: string): Promise<ContactRow[]> {
    return this.ledger.sql.all<ContactRow>(
      `${CONTACT_SELECT} WHERE c.tenant_id = ? AND c.agent_id = ? ORDER BY c.created_at, c.contact_agent_id`,
      [tenantId, agentId],
    );
  }

  /**
   * Removes the contact named by its agent number (current or as recorded), else by its
   * agent id. False when the caller has no such contact.
   */
  remove(tenantId: string, agentId: string, ref: string): Promise<boolean> {
    return this.ledger.sql.transaction(async (tx): Promise<boolean> => {
      const row = await tx.get<{ id: string }>(
        `SELECT c.contact_agent_id AS id FROM contacts c
         LEFT JOIN agents a ON a.tenant_id = c.tenant_id AND a.agent_id = c.contact_agent_id AND a.revoked_at IS NULL
         WHERE c.tenant_id = ? AND c.agent_id = ?
           AND (a.agent_number = ? OR c.contact_agent_number = ? OR c.contact_agent_id = ?)
         ORDER BY CASE WHEN a.agent_number = ? THEN 1 ELSE 0 END DESC, CASE WHEN c.contact_agent_number = ? THEN 1 ELSE 0 END DESC
         LIMIT 1`,
        [tenantId, agentId, ref, ref, ref, ref, ref],
      );
      if (!row) return false;
      await tx.run('DELETE FROM contacts WHERE tenant_id = ? AND agent_id = ? AND contact_agent_id = ?', [
        tenantId,
        agentId,
        row.id,
      ]);
      return true;
    });
  }
}
