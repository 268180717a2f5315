import { GrantRequest, GrantResponse, SvcError } from '@svc/shared';
import type { AdminRole } from '../../auth/admin-token.js';
import type { RoutePlugin } from '../../http/scopes.js';
import { mintGrant } from '../../services/grants.js';

export const GRANT_SCOPE = 'enrollment:grant';

/**
 * The roles that may mint grants (specification, "Roles"). Checked besides the scope: a
 * misconfigured authority that hands `enrollment:grant` to an auditor or member must
 * not let it mint.
 */
export const GRANT_ROLES: readonly AdminRole[] = ['admin', 'automation'];

export const enrollmentGrantRoutes: RoutePlugin = async (app, { ctx }) => {
  app.post(
    '/api/v1/admin/enrollment/grants',
    {
      schema: {
        summary: 'Mint a single-use enrollment grant',
        security: [{ oidc: [GRANT_SCOPE] }],
        body: GrantRequest,
        response: { 201: GrantResponse },
      },
    },
    async (request, reply) => {
      const admin = request.admin;
      const body = request.body;
      if (!admin.scopes.includes(GRANT_SCOPE)) throw new SvcError('insufficient_scope');
      if (!admin.roles.some((role) => GRANT_ROLES.includes(role))) {
        request.log.info({ sub: admin.subject, roles: admin.roles }, 'grant refused: no admin or automation role');
        throw new SvcError('insufficient_role');
      }
      if (body.deployment_id !== ctx.deployment.deploymentId || body.deployment_id !== admin.deploymentId) {
        throw new SvcError('binding_mismatch', 'deployment_id does not match this relay and the token');
      }
      if (body.tenant_id !== admin.tenantId || !ctx.config.tenants.includes(body.tenant_id)) {
        throw new SvcError('binding_mismatch', "tenant_id does not match the token's tenant");
      }
      const grant = await mintGrant(ctx, {
        tenantId: body.tenant_id,
        agentId: body.agent_id,
        agentNumber: body.agent_number,
        capabilities: body.capabilities,
        ttlSeconds: body.ttl_seconds,
        createdBy: `oidc:${admin.subject}`,
      });
      request.log.info({ grant_id: grant.grant_id, tenant_id: grant.tenant_id, by: admin.subject }, 'grant minted');
      return reply.status(201).send(grant);
    },
  );
};
