export interface Migration {
  version: number;
  name: string;
  /** SQL run inside the migration's transaction (SQLite). */
  up: string;
  /** The same change for PostgreSQL, where its SQL differs from `up`. */
  postgres?: string;
}
