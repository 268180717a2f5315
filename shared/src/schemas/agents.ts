/**
 * Agent profiles, presence, block, mute, report and contacts: the bodies and answers of
 * the agent routes under /api/v1/agents and /api/v1/contacts.
 */
import { type Static, Type } from '@sinclair/typebox';
import { AgentNumber, Capability } from './common.js';

/** Bounds of the profile and social fields (the specification leaves most of them open). */
export const PROFILE_LIMITS = {
  displayName: 200,
  description: 2000,
  status: 64,
  statusText: 500,
  location: 200,
  timezone: 64,
  endpointUrl: 2048,
  alias: 200,
  notes: 2000,
  reportReasonMin: 10,
  reportReasonMax: 2000,
} as const;

/** An agent seen (heartbeat) within this window is `online`. */
export const PRESENCE_WINDOW_SECONDS = 120;

export const VISIBILITIES = ['private', 'org', 'public'] as const;
export const Visibility = Type.Union([Type.Literal('private'), Type.Literal('org'), Type.Literal('public')], {
  description: 'private, org or public (used by hosted discovery; the relay stores and shows it)',
});
export type Visibility = Static<typeof Visibility>;

export const Presence = Type.Union([Type.Literal('online'), Type.Literal('offline')], {
  description: `online when the agent sent a heartbeat within the last ${PRESENCE_WINDOW_SECONDS} seconds`,
});
export type Presence = Static<typeof Presence>;

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const NullableText = (maxLength: number, description?: string) =>
  Nullable(Type.String({ maxLength, ...(description ? { description } : {}) }));

/** Path parameter naming another agent of the caller's tenant: its agent number or its agent id. */
export const AgentRefParams = Type.Object(
  { agent: Type.String({ minLength: 1, maxLength: 256, description: 'agent number or agent id, same tenant' }) },
  { additionalProperties: false },
);
export type AgentRefParams = Static<typeof AgentRefParams>;

const PresenceFields = {
  presence: Presence,
  status: Nullable(Type.String({ description: 'free-form presence status' })),
  status_text: Nullable(Type.String()),
  last_seen_at: Nullable(Type.String({ format: 'date-time' })),
};

/** What any agent of the same tenant may see. */
/** The profile fields every view of a profile carries, in their output order. */
const ProfileFields = {
  display_name: Nullable(Type.String()),
  description: Nullable(Type.String()),
  discoverable: Type.Boolean(),
  location: Nullable(Type.String()),
  timezone: Nullable(Type.String()),
  visibility: Visibility,
  ...PresenceFields,
};

export const PublicProfile = Type.Object({
  agent_id: Type.String(),
  agent_number: Type.String(),
  ...ProfileFields,
});
export type PublicProfile = Static<typeof PublicProfile>;

/** The caller's own profile (GET/PATCH /api/v1/agents/me). */
export const OwnProfile = Type.Object({
  agent_id: Type.String(),
  agent_number: Type.String(),
  tenant_id: Type.String(),
  deployment_id: Type.String(),
  capabilities: Type.Array(Capability),
  ...ProfileFields,
  endpoint_url: Nullable(Type.String()),
  webhook_secret_set: Type.Boolean(),
  webhook_secret: Type.Optional(
    Type.String({
      pattern: '^[0-9a-f]{64}$',
      description: 'present only in the PATCH answer that generated it; shown once, never again',
    }),
  ),
  enrolled_at: Type.String({ format: 'date-time' }),
});
export type OwnProfile = Static<typeof OwnProfile>;

/**
 * PATCH /api/v1/agents/me: any subset. Free-form text is trimmed; an empty string (or
 * null) clears it. endpoint_url null or blank clears the URL and the webhook secret.
 */
export const ProfileUpdate = Type.Object(
  {
    display_name: Type.Optional(NullableText(PROFILE_LIMITS.displayName)),
    description: Type.Optional(NullableText(PROFILE_LIMITS.description)),
    discoverable: Type.Optional(Type.Boolean()),
    status: Type.Optional(NullableText(PROFILE_LIMITS.status, 'free-form presence status')),
    status_text: Type.Optional(NullableText(PROFILE_LIMITS.statusText)),
    location: Type.Optional(NullableText(PROFILE_LIMITS.location)),
    timezone: Type.Optional(NullableText(PROFILE_LIMITS.timezone, 'IANA time zone name')),
    visibility: Type.Optional(Visibility),
    endpoint_url: Type.Optional(
      Type.Union([Type.String(), Type.Null()], {
        description: 'absolute https URL (at most 2048 characters); null or blank clears it and the webhook secret',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ProfileUpdate = Static<typeof ProfileUpdate>;

/** POST /api/v1/agents/me/heartbeat: the body is optional. */
export const HeartbeatRequest = Type.Object(
  {
    status: Type.Optional(NullableText(PROFILE_LIMITS.status, 'free-form presence status')),
    status_text: Type.Optional(NullableText(PROFILE_LIMITS.statusText)),
  },
  { additionalProperties: false },
);
export type HeartbeatRequest = Static<typeof HeartbeatRequest>;

export const HeartbeatResponse = Type.Object({ ...PresenceFields });
export type HeartbeatResponse = Static<typeof HeartbeatResponse>;

/** One blocked or muted agent. */
export const RelationEntry = Type.Object({
  agent_id: Type.String(),
  agent_number: Type.String(),
  display_name: Nullable(Type.String()),
  since: Type.String({ format: 'date-time' }),
});
export type RelationEntry = Static<typeof RelationEntry>;

export const BlockedList = Type.Object({ blocked: Type.Array(RelationEntry) });
export type BlockedList = Static<typeof BlockedList>;
export const MutedList = Type.Object({ muted: Type.Array(RelationEntry) });
export type MutedList = Static<typeof MutedList>;

export const ReportRequest = Type.Object(
  {
    reason: Type.String({
      description: `${PROFILE_LIMITS.reportReasonMin} to ${PROFILE_LIMITS.reportReasonMax} characters after trimming`,
    }),
  },
  { additionalProperties: false },
);
export type ReportRequest = Static<typeof ReportRequest>;

export const ReportAccepted = Type.Object({
  report_id: Type.String(),
  received_at: Type.String({ format: 'date-time' }),
});
export type ReportAccepted = Static<typeof ReportAccepted>;

export const ContactRequest = Type.Object(
  {
    agent_number: AgentNumber,
    alias: Type.Optional(NullableText(PROFILE_LIMITS.alias)),
    notes: Type.Optional(NullableText(PROFILE_LIMITS.notes)),
  },
  { additionalProperties: false },
);
export type ContactRequest = Static<typeof ContactRequest>;

export const Contact = Type.Object({
  agent_id: Type.String(),
  agent_number: Type.String(),
  display_name: Nullable(Type.String()),
  alias: Nullable(Type.String()),
  notes: Nullable(Type.String()),
  added_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});
export type Contact = Static<typeof Contact>;

export const ContactList = Type.Object({ contacts: Type.Array(Contact) });
export type ContactList = Static<typeof ContactList>;

export const ContactNumberParams = Type.Object(
  { contact_number: Type.String({ minLength: 1, maxLength: 256 }) },
  { additionalProperties: false },
);
export type ContactNumberParams = Static<typeof ContactNumberParams>;

/** POST /api/v1/agents/me/revoke: the caller revoked its own credentials (deregistration). */
export const SelfRevoked = Type.Object({
  agent_id: Type.String(),
  agent_number: AgentNumber,
  tenant_id: Type.String(),
  revoked_at: Type.String({ format: 'date-time' }),
  cleanup_pending: Type.Boolean({
    description: 'true when the bus cleanup (NATS users, undelivered envelopes) finishes later',
  }),
});
export type SelfRevoked = Static<typeof SelfRevoked>;
