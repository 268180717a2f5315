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

  insert(report: NewReport): void {
    this.ledger.guarded(() =>
      this.ledger
        .stmt(
          `INSERT INTO agent_reports (id, tenant_id, reporter_agent_id, reporter_row, target_agent_id, target_row, reason, created_at)
           VALUES (@id, @tenant_id, @reporter_agent_id, @reporter_row, @target_agent_id, @target_row, @reason, @created_at)`,
        )
        .run(report),
    );
  }

  /** Reports about an agent id, newest first (for operators). */
  about(tenantId: string, targetAgentId: string): NewReport[] {
    return this.ledger.guarded(
      () =>
        this.ledger
          .stmt('SELECT * FROM agent_reports WHERE tenant_id = ? AND target_agent_id = ? ORDER BY created_at DESC')
          .all(tenantId, targetAgentId) as NewReport[],
    );
  }
}
