import { randomUUID } from 'node:crypto';
import { AgentRefParams, ErrorResponse, PROFILE_LIMITS, ReportAccepted, ReportRequest, SvcError } from '@svc/shared';
import type { RelayContext } from '../../context.js';
import { requireAgent } from '../../http/auth-hooks.js';
import { insertReport } from '../../ledger/social.js';
import { targetAgent } from '../../services/profiles.js';
import type { TypedApp } from '../types.js';

export function agentReportRoutes(app: TypedApp, ctx: RelayContext): void {
  app.post(
    '/api/v1/agents/:agent/report',
    {
      onRequest: requireAgent(ctx),
      schema: {
        summary: 'Report an agent of the same tenant for abuse; stored for the operator',
        security: [{ accessToken: [] }],
        params: AgentRefParams,
        body: ReportRequest,
        response: { 202: ReportAccepted, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request, reply) => {
      const { row } = request.agent as NonNullable<typeof request.agent>;
      const reason = request.body.reason.trim();
      // characters, not UTF-16 units (SQLite's length() counts the same way)
      const length = [...reason].length;
      if (length < PROFILE_LIMITS.reportReasonMin || length > PROFILE_LIMITS.reportReasonMax) {
        throw new SvcError(
          'invalid_report_reason',
          `The report reason has ${length} characters after trimming; give ${PROFILE_LIMITS.reportReasonMin} to ${PROFILE_LIMITS.reportReasonMax}.`,
        );
      }
      const target = targetAgent(ctx, row, request.params.agent);
      if (target.agent_id === row.agent_id) throw new SvcError('cannot_target_self', 'An agent cannot report itself.');
      const now = ctx.now();
      const id = `rpt_${randomUUID()}`;
      insertReport(ctx.ledger, {
        id,
        tenant_id: row.tenant_id,
        reporter_agent_id: row.agent_id,
        reporter_row: row.id,
        target_agent_id: target.agent_id,
        target_row: target.id,
        reason,
        created_at: now,
      });
      request.log.info({ report_id: id, reporter: row.agent_id, target: target.agent_id }, 'abuse report received');
      return reply.status(202).send({ report_id: id, received_at: new Date(now).toISOString() });
    },
  );
}
