export interface Migration {
  version: number;
  name: string;
  /** SQL run inside the migration's transaction (SQLite). */
  up: string;
  /** The same change for PostgreSQL, where its SQL differs from `up`. */
  postgres?: string;
  /**
   * SQLite: run with foreign key enforcement off, as SQLite's procedure for rebuilding a
   * table asks (dropping a table that others refer to would otherwise cascade); every
   * foreign key is checked before the migration commits, and enforcement is turned back on.
   */
  withoutForeignKeys?: boolean;
}
