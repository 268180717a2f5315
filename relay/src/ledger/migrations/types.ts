export interface Migration {
  version: number;
  name: string;
  /** SQL run inside the migration's transaction. */
  up: string;
}
