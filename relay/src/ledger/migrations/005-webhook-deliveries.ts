import type { Migration } from './types.js';

/**
 * The webhook delivery queue: one row per accepted envelope whose recipient had an
 * endpoint when the envelope was recorded, written in the same transaction as the
 * envelope row, so a restart loses no delivery.
 *
 * `id` is the event id (`evt_…`), the same on every attempt. `attempts` counts attempts
 * started: a row is claimed (attempts + 1, next_attempt_at pushed past the request
 * timeout) before its POST, so a relay killed mid-request retries it after the lease
 * and never exceeds the attempt limit. A row is due while `pending` and
 * next_attempt_at <= now; the final states (`delivered`, `gave_up`, `cancelled`) have no
 * next_attempt_at. Whatever the outcome, the envelope stays pending for pull delivery
 * until the agent acknowledges it. Depends on 001 (agents) and 003 (envelopes); the
 * row goes with its envelope when the envelope index of an incarnation is dropped.
 */
export const migration005: Migration = {
  version: 5,
  name: 'webhook-deliveries',
  up: `
    CREATE TABLE webhook_deliveries (
      id TEXT PRIMARY KEY CHECK (id GLOB 'evt_*'),
      recipient_row TEXT NOT NULL REFERENCES agents(id),
      message_id TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'gave_up', 'cancelled')),
      attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      -- relay clock, ms; set exactly while pending
      next_attempt_at INTEGER,
      last_attempt_at INTEGER,
      -- HTTP status of the last answer, if any; last_error says why an attempt failed
      last_status INTEGER,
      last_error TEXT,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL,
      UNIQUE (recipient_row, message_id),
      FOREIGN KEY (recipient_row, message_id) REFERENCES envelopes(recipient_row, message_id) ON DELETE CASCADE,
      CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL))
    ) STRICT;
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE state = 'pending';
  `,
  // PostgreSQL: BIGINT for millisecond times and sizes, no STRICT; the same constraints.
  postgres: `
    CREATE TABLE webhook_deliveries (
      id TEXT PRIMARY KEY CHECK (left(id, 4) = 'evt_'),
      recipient_row TEXT NOT NULL REFERENCES agents(id),
      message_id TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'gave_up', 'cancelled')),
      attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
      next_attempt_at BIGINT,
      last_attempt_at BIGINT,
      last_status INTEGER,
      last_error TEXT,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL,
      UNIQUE (recipient_row, message_id),
      FOREIGN KEY (recipient_row, message_id) REFERENCES envelopes(recipient_row, message_id) ON DELETE CASCADE,
      CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL))
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE state = 'pending';
  `,
};
