import type { Migration } from './types.js';

/** Grants, agent incarnations, API keys, sign-in challenges, bus users. */
export const migration001: Migration = {
  version: 1,
  name: 'initial',
  up: `
    CREATE TABLE grants (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      agent_number TEXT NOT NULL,
      capabilities TEXT NOT NULL,
      secret_hash TEXT NOT NULL,
      created_by TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      consumed_at INTEGER,
      consumed_by TEXT,
      revoked_at INTEGER
    ) STRICT;

    -- One row per incarnation of an agent id: re-enrollment after revocation adds a row.
    CREATE TABLE agents (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      agent_number TEXT NOT NULL,
      capabilities TEXT NOT NULL,
      signing_public_key TEXT NOT NULL,
      encryption_public_key TEXT NOT NULL,
      display_name TEXT,
      description TEXT,
      discoverable INTEGER NOT NULL DEFAULT 1,
      grant_id TEXT NOT NULL REFERENCES grants(id),
      created_at INTEGER NOT NULL,
      revoked_at INTEGER,
      cleanup_pending INTEGER NOT NULL DEFAULT 0
    ) STRICT;
    CREATE UNIQUE INDEX agents_active_id ON agents(tenant_id, agent_id) WHERE revoked_at IS NULL;
    CREATE UNIQUE INDEX agents_active_number ON agents(tenant_id, agent_number) WHERE revoked_at IS NULL;
    CREATE INDEX agents_cleanup ON agents(cleanup_pending) WHERE cleanup_pending = 1;

    CREATE TABLE api_keys (
      hash TEXT PRIMARY KEY,
      agent_row TEXT NOT NULL REFERENCES agents(id),
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      revoked_at INTEGER
    ) STRICT;
    CREATE INDEX api_keys_agent ON api_keys(agent_row);

    CREATE TABLE challenges (
      id TEXT PRIMARY KEY,
      agent_row TEXT NOT NULL REFERENCES agents(id),
      nonce TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      consumed_at INTEGER
    ) STRICT;

    -- NATS users minted for an agent incarnation (leaf uplinks); revoked with the agent.
    CREATE TABLE bus_users (
      public_key TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      agent_row TEXT NOT NULL REFERENCES agents(id),
      kind TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      revoked_at INTEGER
    ) STRICT;
  `,
  // PostgreSQL: BIGINT for millisecond times and sizes, no STRICT; the same constraints.
  postgres: `
    CREATE TABLE grants (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      agent_number TEXT NOT NULL,
      capabilities TEXT NOT NULL,
      secret_hash TEXT NOT NULL,
      created_by TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      consumed_at BIGINT,
      consumed_by TEXT,
      revoked_at BIGINT
    );
    CREATE TABLE agents (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      agent_id TEXT NOT NULL,
      agent_number TEXT NOT NULL,
      capabilities TEXT NOT NULL,
      signing_public_key TEXT NOT NULL,
      encryption_public_key TEXT NOT NULL,
      display_name TEXT,
      description TEXT,
      discoverable INTEGER NOT NULL DEFAULT 1,
      grant_id TEXT NOT NULL REFERENCES grants(id),
      created_at BIGINT NOT NULL,
      revoked_at BIGINT,
      cleanup_pending INTEGER NOT NULL DEFAULT 0
    );
    CREATE UNIQUE INDEX agents_active_id ON agents(tenant_id, agent_id) WHERE revoked_at IS NULL;
    CREATE UNIQUE INDEX agents_active_number ON agents(tenant_id, agent_number) WHERE revoked_at IS NULL;
    CREATE INDEX agents_cleanup ON agents(cleanup_pending) WHERE cleanup_pending = 1;
    CREATE TABLE api_keys (
      hash TEXT PRIMARY KEY,
      agent_row TEXT NOT NULL REFERENCES agents(id),
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      revoked_at BIGINT
    );
    CREATE INDEX api_keys_agent ON api_keys(agent_row);
    CREATE TABLE challenges (
      id TEXT PRIMARY KEY,
      agent_row TEXT NOT NULL REFERENCES agents(id),
      nonce TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      expires_at BIGINT NOT NULL,
      consumed_at BIGINT
    );
    CREATE TABLE bus_users (
      public_key TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      agent_row TEXT NOT NULL REFERENCES agents(id),
      kind TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      revoked_at BIGINT
    );
  `,
};
