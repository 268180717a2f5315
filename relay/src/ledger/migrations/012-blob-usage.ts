import type { Migration } from './types.js';

/**
 * Each agent's share of its tenant's attachment store: one row per blob it uploaded that
 * may still be stored (a blob leaves the stream when every recipient acknowledged it, or
 * at the stream's max age). An upload is admitted only while the uploader's rows younger
 * than that age, with it, stay within SVC_RELAY_AGENT_MAX_BLOB_BYTES, so one agent cannot
 * fill the store for the whole tenant. Blobs uploaded before this migration are not
 * counted (the stream alone knows them).
 */
export const migration012: Migration = {
  version: 12,
  name: 'blob-usage',
  up: `
    CREATE TABLE blob_usage (
      blob_id TEXT PRIMARY KEY,
      owner_row TEXT NOT NULL,
      size INTEGER NOT NULL,
      created_at INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX blob_usage_owner ON blob_usage(owner_row, created_at);
  `,
  postgres: `
    CREATE TABLE blob_usage (
      blob_id TEXT PRIMARY KEY,
      owner_row TEXT NOT NULL,
      size BIGINT NOT NULL,
      created_at BIGINT NOT NULL
    );
    CREATE INDEX blob_usage_owner ON blob_usage(owner_row, created_at);
  `,
};
