import type { Migration } from './types.js';

/**
 * The deployment a ledger belongs to, written by the first relay (or operator command) that
 * opens it after this migration. A second deployment given the same PostgreSQL DSN would
 * otherwise share its agents: its operator could revoke the first one's, and its relay
 * would serve them under a deployment they never enrolled with.
 */
export const migration014: Migration = {
  version: 14,
  name: 'ledger-deployment',
  up: `
    CREATE TABLE ledger_deployment (
      singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
      deployment_id TEXT NOT NULL
    ) STRICT;
  `,
  postgres: `
    CREATE TABLE ledger_deployment (
      singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
      deployment_id TEXT NOT NULL
    );
  `,
};
