import { type Static, Type } from '@sinclair/typebox';
import { AgentId, AgentNumber, Capability, DeploymentId, TenantId } from './common.js';

export const GRANT_SCHEMA_VERSION = 'svc.relay.admin-enrollment-grant/v1';
/** Bounds of ttl_seconds (the specification leaves them open): one minute to thirty days. */
export const GRANT_TTL = { min: 60, max: 30 * 24 * 3600, default: 24 * 3600 } as const;

export const GrantRequest = Type.Object(
  {
    schema_version: Type.Literal(GRANT_SCHEMA_VERSION),
    deployment_id: DeploymentId,
    tenant_id: TenantId,
    agent_id: AgentId,
    agent_number: Type.Optional(AgentNumber),
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: GRANT_TTL.min, maximum: GRANT_TTL.max, default: GRANT_TTL.default }),
    ),
    capabilities: Type.Array(Capability, { minItems: 1, maxItems: 2, uniqueItems: true }),
  },
  { additionalProperties: false },
);
export type GrantRequest = Static<typeof GrantRequest>;

export const GrantResponse = Type.Object({
  enrollment_code: Type.String(),
  capabilities: Type.Array(Capability),
  grant_id: Type.String(),
  agent_id: Type.String(),
  agent_number: Type.String(),
  tenant_id: Type.String(),
  expires_at: Type.String({ format: 'date-time' }),
});
export type GrantResponse = Static<typeof GrantResponse>;
