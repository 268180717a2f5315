import type { Database } from 'better-sqlite3';

/** One schema step. Applied in order inside a transaction; `user_version` records the last. */
export interface Migration {
  version: number;
  name: string;
  up(db: Database): void;
}
