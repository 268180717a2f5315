import { randomUUID } from 'node:crypto';
import { AgentRefParams, PROFILE_LIMITS, ReportAccepted, ReportRequest, SvcError } from '@svc/shared';
import type { RoutePlugin } from '../../http/scopes.js';
import { targetAgent } from '../../services/profiles.js';

export const agentReportRoutes: RoutePlugin = async (app, { ctx }) => {
  app.post(
    '/api/v1/agents/:agent/report',
    {
      schema: {
        summary: 'Report an agent of the same tenant for abuse; stored for the operator',
        params: AgentRefParams,
        body: ReportRequest,
        response: { 202: ReportAccepted },
      },
    },
    async (request, reply) => {
      const { row } = request.agent;
      const reason = request.body.reason.trim();
      // characters, not UTF-16 units (SQLite's length() counts the same way)
      const length = [...reason].length;
      if (length < PROFILE_LIMITS.reportReasonMin || length > PROFILE_LIMITS.reportReasonMax) {
        throw new SvcError(
          'invalid_report_reason',
          `The report reason has ${length} characters after trimming; give ${PROFILE_LIMITS.reportReasonMin} to ${PROFILE_LIMITS.reportReasonMax}.`,
        );
      }
      const target = await targetAgent(ctx, row, request.params.agent);
      if (target.agent_id === row.agent_id) throw new SvcError('cannot_target_self', 'An agent cannot report itself.');
      const now = ctx.now();
      const id = `rpt_${randomUUID()}`;
      await ctx.stores.reports.insert({
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
};
