import { migration001 } from './001-initial.js';
import { migration002 } from './002-agent-profiles.js';
import { migration003 } from './003-messages.js';
import { migration004 } from './004-key-directory.js';
import { migration005 } from './005-webhook-deliveries.js';
import { migration006 } from './006-challenge-bounds.js';
import { migration007 } from './007-signed-enrollment-record.js';
import { migration008 } from './008-named-sources.js';
import { migration009 } from './009-envelope-agent-keys.js';
import { migration010 } from './010-pending-totals.js';
import { migration011 } from './011-sqlite-envelope-agent-keys.js';
import { migration012 } from './012-blob-usage.js';
import { migration013 } from './013-envelope-batches.js';
import { migration014 } from './014-ledger-deployment.js';
import type { Migration } from './types.js';

/** Ordered; a version is never edited once released, only followed by a new one. */
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
  migration012,
  migration013,
  migration014,
];
export type { Migration } from './types.js';
