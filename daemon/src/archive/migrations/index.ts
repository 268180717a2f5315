/** Every archive migration, in order. A new one gets the next number and its own test. */
import type { Database } from 'better-sqlite3';
import { migration001 } from './001-messages.js';
import { migration002 } from './002-conversations.js';
import { migration003 } from './003-peer-keys.js';
import { migration004 } from './004-receipts.js';
import { migration005 } from './005-sync-cursors.js';
import { migration006 } from './006-search.js';
import { migration007 } from './007-delivered.js';
import { migration008 } from './008-canonical-conversations.js';
import { migration009 } from './009-outbox.js';
import { migration010 } from './010-sender-key.js';
import { migration011 } from './011-group-sequences.js';
import type { Migration } from './types.js';

export type { Migration } from './types.js';
export const MIGRATIONS: readonly Migration[] = [
  migration001,
  migration002,
  migration003,
  migration004,
  migration005,
  migration006,
  migration007,
  migration008,
  migration009,
  migration010,
  migration011,
];

/** Applies the migrations above `user_version`, up to `target` (tests stop early). */
export function migrate(db: Database, target = Number.POSITIVE_INFINITY): number {
  const current = db.pragma('user_version', { simple: true }) as number;
  for (const m of MIGRATIONS) {
    if (m.version <= current || m.version > target) continue;
    db.transaction(() => {
      m.up(db);
      db.pragma(`user_version = ${m.version}`);
    })();
  }
  return db.pragma('user_version', { simple: true }) as number;
}
