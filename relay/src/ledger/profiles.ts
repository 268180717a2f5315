/**
 * Agent profiles in the ledger: presence, free-form status, location, time zone,
 * visibility and the webhook endpoint with its secret (one profile per incarnation).
 * display_name, description and discoverable live on the agents row.
 * The webhook secret is stored as-is because the relay must HMAC webhook bodies with it;
 * it is never logged and never read back to a client.
 */
import type { Visibility } from '@svc/shared';
import type { AgentRow, Ledger } from './ledger.js';

export interface ProfileRow {
  agent_row: string;
  presence_status: string | null;
  status_text: string | null;
  location: string | null;
  timezone: string | null;
  visibility: Visibility;
  endpoint_url: string | null;
  webhook_secret_set: boolean;
  last_seen_at: number | null;
}

const DEFAULT_VISIBILITY: Visibility = 'org';

type RawProfile = Omit<ProfileRow, 'webhook_secret_set'> & { webhook_secret_set: number };

const PROFILE_COLUMNS = `agent_row, presence_status, status_text, location, timezone, visibility, endpoint_url,
  (webhook_secret IS NOT NULL) AS webhook_secret_set, last_seen_at`;

const emptyProfile = (agentRow: string): ProfileRow => ({
  agent_row: agentRow,
  presence_status: null,
  status_text: null,
  location: null,
  timezone: null,
  visibility: DEFAULT_VISIBILITY,
  endpoint_url: null,
  webhook_secret_set: false,
  last_seen_at: null,
});

function readProfile(ledger: Ledger, agentRow: string): ProfileRow {
  const r = ledger.stmt(`SELECT ${PROFILE_COLUMNS} FROM agent_profiles WHERE agent_row = ?`).get(agentRow) as
    | RawProfile
    | undefined;
  return r ? { ...r, webhook_secret_set: r.webhook_secret_set === 1 } : emptyProfile(agentRow);
}

/** A validated profile change: `undefined` leaves a field alone, `null` clears it. */
export interface ProfileChanges {
  display_name?: string | null;
  description?: string | null;
  discoverable?: boolean;
  presence_status?: string | null;
  status_text?: string | null;
  location?: string | null;
  timezone?: string | null;
  visibility?: Visibility;
  /** a checked URL, or null to clear the endpoint and its secret */
  endpoint_url?: string | null;
}

export interface ProfileUpdateResult {
  profile: ProfileRow;
  /** set only when this update generated a new webhook secret (shown once) */
  newWebhookSecret?: string;
}

const PROFILE_FIELDS = ['presence_status', 'status_text', 'location', 'timezone', 'visibility'] as const;

export class ProfileStore {
  constructor(private readonly ledger: Ledger) {}

  /** The profile of an incarnation; an incarnation that never set anything has the defaults. */
  get(agentRow: string): ProfileRow {
    return this.ledger.guarded(() => readProfile(this.ledger, agentRow));
  }

  /**
   * The active incarnation in the tenant named by `ref`: its agent number first, else its
   * agent id. Other tenants and revoked incarnations are never found.
   */
  findActiveAgent(tenantId: string, ref: string): AgentRow | undefined {
    const ledger = this.ledger;
    const id = ledger.guarded(() => {
      const byNumber = ledger
        .stmt('SELECT id FROM agents WHERE tenant_id = ? AND agent_number = ? AND revoked_at IS NULL')
        .get(tenantId, ref) as { id: string } | undefined;
      if (byNumber) return byNumber.id;
      const byId = ledger
        .stmt('SELECT id FROM agents WHERE tenant_id = ? AND agent_id = ? AND revoked_at IS NULL')
        .get(tenantId, ref) as { id: string } | undefined;
      return byId?.id;
    });
    return id === undefined ? undefined : ledger.agentByRow(id);
  }

  /**
   * Applies the change in one transaction. Webhook secret lifecycle:
   * no endpoint + URL → new secret (returned once); endpoint set + other URL → the URL
   * changes, the secret stays; null → URL and secret cleared; a later URL → a new secret.
   * `secretSource` is called only when a secret must be generated.
   */
  update(agentRow: string, changes: ProfileChanges, now: number, secretSource: () => string): ProfileUpdateResult {
    const ledger = this.ledger;
    return ledger.guarded(() =>
      ledger.db.transaction((): ProfileUpdateResult => {
        const agentSets: string[] = [];
        const agentValues: Record<string, string | number | null> = { id: agentRow };
        if (changes.display_name !== undefined) {
          agentSets.push('display_name = @display_name');
          agentValues.display_name = changes.display_name;
        }
        if (changes.description !== undefined) {
          agentSets.push('description = @description');
          agentValues.description = changes.description;
        }
        if (changes.discoverable !== undefined) {
          agentSets.push('discoverable = @discoverable');
          agentValues.discoverable = changes.discoverable ? 1 : 0;
        }
        if (agentSets.length > 0) {
          ledger.stmt(`UPDATE agents SET ${agentSets.join(', ')} WHERE id = @id`).run(agentValues);
        }

        const current = readProfile(ledger, agentRow);
        const stored = ledger
          .stmt('SELECT webhook_secret, webhook_secret_created_at FROM agent_profiles WHERE agent_row = ?')
          .get(agentRow) as { webhook_secret: string | null; webhook_secret_created_at: number | null } | undefined;
        const next = {
          presence_status: current.presence_status,
          status_text: current.status_text,
          location: current.location,
          timezone: current.timezone,
          visibility: current.visibility,
          endpoint_url: current.endpoint_url,
          webhook_secret: stored?.webhook_secret ?? null,
          webhook_secret_created_at: stored?.webhook_secret_created_at ?? null,
        };
        for (const f of PROFILE_FIELDS) {
          const v = changes[f];
          if (v !== undefined) (next as Record<string, unknown>)[f] = v;
        }
        let newWebhookSecret: string | undefined;
        if (changes.endpoint_url === null) {
          next.endpoint_url = null;
          next.webhook_secret = null;
          next.webhook_secret_created_at = null;
        } else if (changes.endpoint_url !== undefined) {
          next.endpoint_url = changes.endpoint_url;
          if (next.webhook_secret === null) {
            newWebhookSecret = secretSource();
            next.webhook_secret = newWebhookSecret;
            next.webhook_secret_created_at = now;
          }
        }
        ledger
          .stmt(
            `INSERT INTO agent_profiles (agent_row, presence_status, status_text, location, timezone, visibility,
             endpoint_url, webhook_secret, webhook_secret_created_at, updated_at)
           VALUES (@agent_row, @presence_status, @status_text, @location, @timezone, @visibility,
             @endpoint_url, @webhook_secret, @webhook_secret_created_at, @now)
           ON CONFLICT (agent_row) DO UPDATE SET presence_status = @presence_status, status_text = @status_text,
             location = @location, timezone = @timezone, visibility = @visibility, endpoint_url = @endpoint_url,
             webhook_secret = @webhook_secret, webhook_secret_created_at = @webhook_secret_created_at, updated_at = @now`,
          )
          .run({ agent_row: agentRow, ...next, now });
        return newWebhookSecret === undefined
          ? { profile: readProfile(ledger, agentRow) }
          : { profile: readProfile(ledger, agentRow), newWebhookSecret };
      })(),
    );
  }

  /** Records a heartbeat (last_seen_at) and, when given, the presence status and status text. */
  recordHeartbeat(
    agentRow: string,
    now: number,
    changes: { presence_status?: string | null; status_text?: string | null } = {},
  ): ProfileRow {
    const ledger = this.ledger;
    return ledger.guarded(() =>
      ledger.db.transaction((): ProfileRow => {
        const current = readProfile(ledger, agentRow);
        const row = {
          agent_row: agentRow,
          presence_status: changes.presence_status === undefined ? current.presence_status : changes.presence_status,
          status_text: changes.status_text === undefined ? current.status_text : changes.status_text,
          visibility: current.visibility,
          now,
        };
        ledger
          .stmt(
            `INSERT INTO agent_profiles (agent_row, presence_status, status_text, visibility, last_seen_at, updated_at)
           VALUES (@agent_row, @presence_status, @status_text, @visibility, @now, @now)
           ON CONFLICT (agent_row) DO UPDATE SET presence_status = @presence_status, status_text = @status_text,
             last_seen_at = @now, updated_at = @now`,
          )
          .run(row);
        return readProfile(ledger, agentRow);
      })(),
    );
  }

  /**
   * Where and how to deliver webhooks for the active incarnation of an agent: its endpoint
   * and the secret to HMAC the body with, or undefined when it has no endpoint.
   * For the webhook sender only; never put the secret in a log or an answer.
   */
  webhookTarget(tenantId: string, agentId: string): { endpoint_url: string; webhook_secret: string } | undefined {
    const ledger = this.ledger;
    return ledger.guarded(
      () =>
        ledger
          .stmt(
            `SELECT p.endpoint_url, p.webhook_secret FROM agent_profiles p JOIN agents a ON a.id = p.agent_row
           WHERE a.tenant_id = ? AND a.agent_id = ? AND a.revoked_at IS NULL AND p.webhook_secret IS NOT NULL`,
          )
          .get(tenantId, agentId) as { endpoint_url: string; webhook_secret: string } | undefined,
    );
  }
}
