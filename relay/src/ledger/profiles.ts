/**
 * Agent profiles in the ledger: presence, free-form status, location, time zone,
 * visibility and the webhook endpoint with its secret (one profile per incarnation).
 * display_name, description and discoverable live on the agents row.
 * The webhook secret is stored as-is because the relay must HMAC webhook bodies with it;
 * it is never logged and never read back to a client.
 */
import type { Visibility } from '@svc/shared';
import type { AgentRow, Ledger } from './ledger.js';
import type { Sql } from './sql.js';

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
  CASE WHEN webhook_secret IS NOT NULL THEN 1 ELSE 0 END AS webhook_secret_set, last_seen_at`;

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

async function readProfile(q: Sql, agentRow: string): Promise<ProfileRow> {
  const r = await q.get<RawProfile>(`SELECT ${PROFILE_COLUMNS} FROM agent_profiles WHERE agent_row = ?`, [agentRow]);
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
  get(agentRow: string): Promise<ProfileRow> {
    return readProfile(this.ledger.sql, agentRow);
  }

  /**
   * The active incarnation in the tenant named by `ref`: its agent number first, else its
   * agent id. Other tenants and revoked incarnations are never found.
   */
  async findActiveAgent(tenantId: string, ref: string): Promise<AgentRow | undefined> {
    const sql = this.ledger.sql;
    const byNumber = await sql.get<{ id: string }>(
      'SELECT id FROM agents WHERE tenant_id = ? AND agent_number = ? AND revoked_at IS NULL',
      [tenantId, ref],
    );
    const id =
      byNumber?.id ??
      (
        await sql.get<{ id: string }>(
          'SELECT id FROM agents WHERE tenant_id = ? AND agent_id = ? AND revoked_at IS NULL',
          [tenantId, ref],
        )
      )?.id;
    return id === undefined ? undefined : this.ledger.agentByRow(id);
  }

  /**
   * Applies the change in one transaction. Webhook secret lifecycle:
   * no endpoint + URL → new secret (returned once); endpoint set + other URL → the URL
   * changes, the secret stays; null → URL and secret cleared; a later URL → a new secret.
   * `secretSource` is called only when a secret must be generated. The agents row is
   * locked first, so two instances changing one profile take turns.
   */
  update(
    agentRow: string,
    changes: ProfileChanges,
    now: number,
    secretSource: () => string,
  ): Promise<ProfileUpdateResult> {
    const ledger = this.ledger;
    return ledger.sql.transaction(async (tx): Promise<ProfileUpdateResult> => {
      await tx.get(`SELECT id FROM agents WHERE id = ?${ledger.forUpdate}`, [agentRow]);
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
        await tx.run(`UPDATE agents SET ${agentSets.join(', ')} WHERE id = @id`, agentValues);
      }

      const current = await readProfile(tx, agentRow);
      const stored = await tx.get<{ webhook_secret: string | null; webhook_secret_created_at: number | null }>(
        'SELECT webhook_secret, webhook_secret_created_at FROM agent_profiles WHERE agent_row = ?',
        [agentRow],
      );
      const next = {
        presence_status: current.presence_status,
        status_text: current.status_text,
        location: current.location,
        timezone: current.timezone,
        visibility: current.visibility as string,
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
      await tx.run(
        `INSERT INTO agent_profiles (agent_row, presence_status, status_text, location, timezone, visibility,
           endpoint_url, webhook_secret, webhook_secret_created_at, updated_at)
         VALUES (@agent_row, @presence_status, @status_text, @location, @timezone, @visibility,
           @endpoint_url, @webhook_secret, @webhook_secret_created_at, @now)
         ON CONFLICT (agent_row) DO UPDATE SET presence_status = @presence_status, status_text = @status_text,
           location = @location, timezone = @timezone, visibility = @visibility, endpoint_url = @endpoint_url,
           webhook_secret = @webhook_secret, webhook_secret_created_at = @webhook_secret_created_at, updated_at = @now`,
        { agent_row: agentRow, ...next, now },
      );
      const profile = await readProfile(tx, agentRow);
      return newWebhookSecret === undefined ? { profile } : { profile, newWebhookSecret };
    });
  }

  /** Records a heartbeat (last_seen_at) and, when given, the presence status and status text. */
  recordHeartbeat(
    agentRow: string,
    now: number,
    changes: { presence_status?: string | null; status_text?: string | null } = {},
  ): Promise<ProfileRow> {
    return this.ledger.sql.transaction(async (tx): Promise<ProfileRow> => {
      const current = await readProfile(tx, agentRow);
      const row = {
        agent_row: agentRow,
        presence_status: changes.presence_status === undefined ? current.presence_status : changes.presence_status,
        status_text: changes.status_text === undefined ? current.status_text : changes.status_text,
        visibility: current.visibility as string,
        now,
      };
      await tx.run(
        `INSERT INTO agent_profiles (agent_row, presence_status, status_text, visibility, last_seen_at, updated_at)
         VALUES (@agent_row, @presence_status, @status_text, @visibility, @now, @now)
         ON CONFLICT (agent_row) DO UPDATE SET presence_status = @presence_status, status_text = @status_text,
           last_seen_at = @now, updated_at = @now`,
        row,
      );
      return readProfile(tx, agentRow);
    });
  }

  /**
   * Where and how to deliver webhooks for the active incarnation of an agent: its endpoint
   * and the secret to HMAC the body with, or undefined when it has no endpoint.
   * For the webhook sender only; never put the secret in a log or an answer.
   */
  webhookTarget(
    tenantId: string,
    agentId: string,
  ): Promise<{ endpoint_url: string; webhook_secret: string } | undefined> {
    return this.ledger.sql.get(
      `SELECT p.endpoint_url, p.webhook_secret FROM agent_profiles p JOIN agents a ON a.id = p.agent_row
       WHERE a.tenant_id = ? AND a.agent_id = ? AND a.revoked_at IS NULL AND p.webhook_secret IS NOT NULL`,
      [tenantId, agentId],
    );
  }
}
