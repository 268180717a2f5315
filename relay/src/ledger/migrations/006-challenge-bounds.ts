import type { Migration } from './types.js';

/**
 * Indexes that keep the sign-in challenge table bounded cheaply: expired rows are pruned
 * by expiry at every new challenge, and each agent's live rows are counted and the oldest
 * replaced past the per-agent cap.
 */
export const migration006: Migration = {
  version: 6,
  name: 'challenge-bounds',
  up: `
    CREATE INDEX challenges_expiry ON challenges(expires_at);
    CREATE INDEX challenges_agent ON challenges(agent_row, created_at);
  `,
};
