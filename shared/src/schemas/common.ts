import { type Static, Type } from '@sinclair/typebox';

export const AgentNumber = Type.String({
  pattern: '^[A-Za-z0-9_-]{1,128}$',
  description: 'Public agent number: letters, digits, _ and -, at most 128 characters.',
});
export const AgentId = Type.String({
  minLength: 1,
  maxLength: 256,
  pattern: '^[A-Za-z0-9_.:@-]+$',
  description: 'Internal agent identifier (may contain . and :).',
});
/** Tenant ids name bus accounts and directories: a letter or digit, then letters, digits, _ . -; at most 64. */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
export const TenantId = Type.String({ pattern: TENANT_ID_PATTERN.source });
export const DeploymentId = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.-]+$' });
export const Base64url = Type.String({ pattern: '^[A-Za-z0-9_-]*$' });
export const IsoTime = Type.String({ format: 'date-time' });

export const CAPABILITIES = ['http-relay', 'nats-relay'] as const;
export const Capability = Type.Union([Type.Literal('http-relay'), Type.Literal('nats-relay')], {
  description: 'http-relay: baseline; nats-relay: leaf uplink identity only.',
});
export type Capability = Static<typeof Capability>;

export const ErrorResponse = Type.Object(
  { error: Type.String(), message: Type.String() },
  { $id: 'ErrorResponse', description: 'Every error answer: a stable code and a one-line message.' },
);
