import type { Migration } from './types.js';

/**
 * Agent profiles (presence, webhook endpoint and secret), blocks, mutes, abuse reports, contacts.
 *
 * Keying. The profile belongs to one incarnation (agents.id): an agent id that is revoked
 * and enrolled again starts with an empty profile, so it inherits neither the old webhook
 * secret nor old presence (its keys are per incarnation already). A trigger erases the
 * endpoint and secret the moment an incarnation is revoked. display_name, description
 * and discoverable stay on the agents row (set at enrollment, updated by PATCH).
 * Blocks, mutes and contacts are the agent's own choices about other agents and are
 * keyed by tenant + agent id on both sides, so they survive a re-enrollment of either
 * side. Reports are an audit record and name both incarnations as well as both ids.
 */
export const migration002: Migration = {
  version: 2,
  name: 'agent-profiles',
  up: `
    CREATE TABLE agent_profiles (
      agent_row TEXT PRIMARY KEY REFERENCES agents(id),
      presence_status TEXT,
      status_text TEXT,
      location TEXT,
      timezone TEXT,
      visibility TEXT NOT NULL DEFAULT 'org' CHECK (visibility IN ('private', 'org', 'public')),
      endpoint_url TEXT,
      -- kept as-is: the relay must HMAC webhook bodies with it; never logged, never shown after creation
      webhook_secret TEXT,
      webhook_secret_created_at INTEGER,
      last_seen_at INTEGER,
      updated_at INTEGER NOT NULL,
      CHECK ((endpoint_url IS NULL) = (webhook_secret IS NULL)),
      CHECK ((webhook_secret IS NULL) = (webhook_secret_created_at IS NULL)),
      CHECK (webhook_secret IS NULL OR (length(webhook_secret) = 64 AND webhook_secret NOT GLOB '*[^0-9a-f]*'))
    ) STRICT;

    CREATE TRIGGER agent_profiles_forget_endpoint_on_revoke
    AFTER UPDATE OF revoked_at ON agents
    WHEN NEW.revoked_at IS NOT NULL
    BEGIN
      UPDATE agent_profiles
        SET endpoint_url = NULL, webhook_secret = NULL, webhook_secret_created_at = NULL
        WHERE agent_row = NEW.id;
    END;

    -- agent_id blocks target_agent_id (its messages are refused for agent_id)
    CREATE TABLE agent_blocks (
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      target_agent_id TEXT NOT NULL,
      target_agent_number TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (tenant_id, agent_id, target_agent_id),
      CHECK (agent_id <> target_agent_id)
    ) STRICT;

    CREATE TABLE agent_mutes (
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      target_agent_id TEXT NOT NULL,
      target_agent_number TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (tenant_id, agent_id, target_agent_id),
      CHECK (agent_id <> target_agent_id)
    ) STRICT;

    CREATE TABLE agent_reports (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      reporter_agent_id TEXT NOT NULL,
      reporter_row TEXT NOT NULL REFERENCES agents(id),
      target_agent_id TEXT NOT NULL,
      target_row TEXT NOT NULL REFERENCES agents(id),
      reason TEXT NOT NULL CHECK (length(reason) BETWEEN 10 AND 2000),
      created_at INTEGER NOT NULL,
      CHECK (reporter_agent_id <> target_agent_id)
    ) STRICT;
    CREATE INDEX agent_reports_target ON agent_reports(tenant_id, target_agent_id, created_at);

    CREATE TABLE contacts (
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      contact_agent_id TEXT NOT NULL,
      contact_agent_number TEXT NOT NULL,
      alias TEXT,
      notes TEXT,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (tenant_id, agent_id, contact_agent_id)
    ) STRICT;
  `,
  // PostgreSQL: BIGINT for millisecond times and sizes, no STRICT; the same constraints.
  postgres: `
    CREATE TABLE agent_profiles (
      agent_row TEXT PRIMARY KEY REFERENCES agents(id),
      presence_status TEXT,
      status_text TEXT,
      location TEXT,
      timezone TEXT,
      visibility TEXT NOT NULL DEFAULT 'org' CHECK (visibility IN ('private', 'org', 'public')),
      endpoint_url TEXT,
      webhook_secret TEXT,
      webhook_secret_created_at BIGINT,
      last_seen_at BIGINT,
      updated_at BIGINT NOT NULL,
      CHECK ((endpoint_url IS NULL) = (webhook_secret IS NULL)),
      CHECK ((webhook_secret IS NULL) = (webhook_secret_created_at IS NULL)),
      CHECK (webhook_secret IS NULL OR webhook_secret ~ '^[0-9a-f]{64}$')
    );
    CREATE FUNCTION agent_profiles_forget_endpoint() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      UPDATE agent_profiles
        SET endpoint_url = NULL, webhook_secret = NULL, webhook_secret_created_at = NULL
        WHERE agent_row = NEW.id;
      RETURN NEW;
    END;
    $fn$;
    CREATE TRIGGER agent_profiles_forget_endpoint_on_revoke
    AFTER UPDATE OF revoked_at ON agents
    FOR EACH ROW WHEN (NEW.revoked_at IS NOT NULL)
    EXECUTE FUNCTION agent_profiles_forget_endpoint();
    CREATE TABLE agent_blocks (
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      target_agent_id TEXT NOT NULL,
      target_agent_number TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      PRIMARY KEY (tenant_id, agent_id, target_agent_id),
      CHECK (agent_id <> target_agent_id)
    );
    CREATE TABLE agent_mutes (
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      target_agent_id TEXT NOT NULL,
      target_agent_number TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      PRIMARY KEY (tenant_id, agent_id, target_agent_id),
      CHECK (agent_id <> target_agent_id)
    );
    CREATE TABLE agent_reports (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      reporter_agent_id TEXT NOT NULL,
      reporter_row TEXT NOT NULL REFERENCES agents(id),
      target_agent_id TEXT NOT NULL,
      target_row TEXT NOT NULL REFERENCES agents(id),
      reason TEXT NOT NULL CHECK (char_length(reason) BETWEEN 10 AND 2000),
      created_at BIGINT NOT NULL,
      CHECK (reporter_agent_id <> target_agent_id)
    );
    CREATE INDEX agent_reports_target ON agent_reports(tenant_id, target_agent_id, created_at);
    CREATE TABLE contacts (
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      contact_agent_id TEXT NOT NULL,
      contact_agent_number TEXT NOT NULL,
      alias TEXT,
      notes TEXT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      PRIMARY KEY (tenant_id, agent_id, contact_agent_id)
    );
  `,
};
