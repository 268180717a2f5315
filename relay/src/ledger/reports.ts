/** Abuse reports about agents, kept for the operator. */
import type { Ledger } from './ledger.js';

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

export class ReportStore {
  constructor(private readonly ledger: Ledger) {}

  async insert(report: NewReport): Promise<void> {
    await this.ledger.sql.run(
      `INSERT INTO agent_reports (id, tenant_id, reporter_agent_id, reporter_row, target_agent_id, target_row, reason, created_at)
       VALUES (@id, @tenant_id, @reporter_agent_id, @reporter_row, @target_agent_id, @target_row, @reason, @created_at)`,
      { ...report },
    );
  }

  /** Reports about an agent id, newest first (for operators). */
  about(tenantId: string, targetAgentId: string): Promise<NewReport[]> {
    return this.ledger.sql.all<NewReport>(
      'SELECT * FROM agent_reports WHERE tenant_id = ? AND target_agent_id = ? ORDER BY created_at DESC',
      [tenantId, targetAgentId],
    );
  }
}
