/** Agent profiles: checking an update, applying it, and the views the routes answer with. */
import { randomBytes } from 'node:crypto';
import {
  type OwnProfile,
  PRESENCE_WINDOW_SECONDS,
  type Presence,
  type ProfileUpdate,
  type PublicProfile,
  SvcError,
} from '@svc/shared';
import type { RelayBase } from '../context.js';
import type { AgentRow } from '../ledger/ledger.js';
import type { ProfileChanges, ProfileRow } from '../ledger/profiles.js';
import { checkEndpointUrl, type EndpointPolicy } from './endpoint-url.js';

type ProfileContext = Pick<RelayBase, 'deployment' | 'ledger' | 'stores' | 'now'>;

/** Free-form text is trimmed; empty means cleared. */
export function cleanText(value: string | null | undefined): string | null | undefined {
  if (value === undefined || value === null) return value;
  const t = value.trim();
  return t === '' ? null : t;
}

/** An IANA time zone name, returned in the form the runtime's time zone data gives it. */
export function checkTimezone(value: string): string {
  const name = value.trim();
  // IANA names only: no offsets such as +01:00.
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(name)) {
    throw new SvcError('invalid_timezone', `timezone ${JSON.stringify(value)} is not an IANA time zone name`);
  }
  try {
    return new Intl.DateTimeFormat('en', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    throw new SvcError('invalid_timezone', `timezone ${JSON.stringify(value)} is not a known IANA time zone`);
  }
}

export const newWebhookSecret = (): string => randomBytes(32).toString('hex');

/** Checks every field first, so a refused update changes nothing. */
export async function checkProfileUpdate(
  body: ProfileUpdate,
  endpointPolicy: EndpointPolicy = {},
): Promise<ProfileChanges> {
  const changes: ProfileChanges = {};
  const text = (v: string | null | undefined) => cleanText(v);
  const display_name = text(body.display_name);
  if (display_name !== undefined) changes.display_name = display_name;
  const description = text(body.description);
  if (description !== undefined) changes.description = description;
  if (body.discoverable !== undefined) changes.discoverable = body.discoverable;
  const status = text(body.status);
  if (status !== undefined) changes.presence_status = status;
  const statusText = text(body.status_text);
  if (statusText !== undefined) changes.status_text = statusText;
  const location = text(body.location);
  if (location !== undefined) changes.location = location;
  const timezone = text(body.timezone);
  if (timezone !== undefined) changes.timezone = timezone === null ? null : checkTimezone(timezone);
  if (body.visibility !== undefined) changes.visibility = body.visibility;
  if (body.endpoint_url !== undefined) {
    const raw = body.endpoint_url;
    changes.endpoint_url = raw === null || raw.trim() === '' ? null : await checkEndpointUrl(raw, endpointPolicy);
  }
  return changes;
}

/** Applies a checked update; the new webhook secret, if one was generated, is in the answer once. */
export async function applyProfileUpdate(
  ctx: ProfileContext,
  row: AgentRow,
  changes: ProfileChanges,
): Promise<OwnProfile> {
  const result = await ctx.stores.profiles.update(row.id, changes, ctx.now(), newWebhookSecret);
  const agent = (await ctx.ledger.agentByRow(row.id)) ?? row;
  const view = ownProfileView(ctx, agent, result.profile);
  return result.newWebhookSecret === undefined ? view : { ...view, webhook_secret: result.newWebhookSecret };
}

export function presenceOf(profile: ProfileRow, now: number): Presence {
  return profile.last_seen_at !== null && now - profile.last_seen_at <= PRESENCE_WINDOW_SECONDS * 1000
    ? 'online'
    : 'offline';
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function presenceView(profile: ProfileRow, now: number) {
  return {
    presence: presenceOf(profile, now),
    status: profile.presence_status,
    status_text: profile.status_text,
    last_seen_at: iso(profile.last_seen_at),
  };
}

/** `profile`: the incarnation's profile (ProfileStore.get). */
export function publicProfileView(ctx: ProfileContext, row: AgentRow, profile: ProfileRow) {
  const view: PublicProfile = {
    agent_id: row.agent_id,
    agent_number: row.agent_number,
    display_name: row.display_name,
    description: row.description,
    discoverable: row.discoverable,
    location: profile.location,
    timezone: profile.timezone,
    visibility: profile.visibility,
    ...presenceView(profile, ctx.now()),
  };
  return view;
}

/** `profile`: the incarnation's profile (ProfileStore.get). */
export function ownProfileView(ctx: ProfileContext, row: AgentRow, profile: ProfileRow) {
  const view: OwnProfile = {
    ...publicProfileView(ctx, row, profile),
    tenant_id: row.tenant_id,
    deployment_id: ctx.deployment.deploymentId,
    capabilities: row.capabilities,
    endpoint_url: profile.endpoint_url,
    webhook_secret_set: profile.webhook_secret_set,
    enrolled_at: new Date(row.created_at).toISOString(),
  };
  return view;
}

/** Another active agent of the caller's tenant, by agent number or id; 404 not_found otherwise (other tenants included). */
export async function targetAgent(ctx: ProfileContext, caller: AgentRow, ref: string): Promise<AgentRow> {
  const target = await ctx.stores.profiles.findActiveAgent(caller.tenant_id, ref);
  if (!target) throw new SvcError('not_found', `No agent ${JSON.stringify(ref)} in your tenant.`);
  return target;
}
