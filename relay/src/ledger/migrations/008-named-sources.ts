import type { Migration } from './types.js';

/**
 * Named sources: an agent that an edge machine (a `nats-relay` identity) streams through
 * its leaf uplink, one durable consumer each. A released row stays for the record; only
 * one active row per agent number of a tenant (the consumer's name derives from it).
 * Leaf uplink users go into the existing bus_users table (kind `relay-uplink`).
 * Depends only on 001.
 */
export const migration008: Migration = {
  version: 8,
  name: 'named-sources',
  up: `
    CREATE TABLE named_sources (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      agent_row TEXT NOT NULL REFERENCES agents(id),
      edge_row TEXT NOT NULL REFERENCES agents(id),
      durable TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      released_at INTEGER
    ) STRICT;
    CREATE UNIQUE INDEX named_sources_active ON named_sources (tenant_id, durable) WHERE released_at IS NULL;
    CREATE INDEX named_sources_edge ON named_sources (edge_row) WHERE released_at IS NULL;
    CREATE INDEX named_sources_agent ON named_sources (agent_row) WHERE released_at IS NULL;
  `,
  // PostgreSQL: BIGINT for millisecond times and sizes, no STRICT; the same constraints.
  postgres: `
    CREATE TABLE named_sources (
      id TEXT PRIMARY KEY,
      tenant_id TEXT NOT NULL,
      agent_row TEXT NOT NULL REFERENCES agents(id),
      edge_row TEXT NOT NULL REFERENCES agents(id),
      durable TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      released_at BIGINT
    );
    CREATE UNIQUE INDEX named_sources_active ON named_sources (tenant_id, durable) WHERE released_at IS NULL;
    CREATE INDEX named_sources_edge ON named_sources (edge_row) WHERE released_at IS NULL;
    CREATE INDEX named_sources_agent ON named_sources (agent_row) WHERE released_at IS NULL;
  `,
};
