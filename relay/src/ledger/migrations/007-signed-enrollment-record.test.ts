import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { migration001 } from './001-initial.js';
import { migration004 } from './004-key-directory.js';
import { migration007 } from './007-signed-enrollment-record.js';

const KEY_A = 'A'.repeat(43);
const KEY_B = 'B'.repeat(43);

describe('migration 007-signed-enrollment-record', () => {
  // 001 and 004 only: 007 must not depend on anything else.
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;
    const record = (r: { agent_row: string; version: number; signature?: string | null; previous?: string | null }) =>
      db.run(
        `INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at, signature, previous_signature, recorded_at)
         VALUES (?, ?, ?, ?, '2025-01-01T00:00:00.000Z', ?, ?, 7)`,
        [r.agent_row, r.version, KEY_A, KEY_B, r.signature ?? null, r.previous ?? null],
      );

    it('records itself and is not applied twice, over a history written before it', async () => {
      db = await fresh();
      await migrate(db, [migration001, migration004]);
      await insertGrant(db);
      await insertAgent(db, 'old');
      await insertAgent(db, 'new', { agentId: 'b' });
      // a history written before: unsigned version 1, signed version 2
      await record({ agent_row: 'old', version: 1 });
      await record({ agent_row: 'old', version: 2, signature: 'sig2' });
      await expect(record({ agent_row: 'new', version: 1, signature: 'sig1' })).rejects.toThrow(REFUSED.check);
      expect(await migrate(db, [migration001, migration004, migration007])).toEqual([7]);
      expect(await db.all('SELECT version FROM schema_migrations ORDER BY version')).toEqual([
        { version: 1 },
        { version: 4 },
        { version: 7 },
      ]);
      expect(await migrate(db, [migration001, migration004, migration007])).toEqual([]);
    });

    it('keeps the rows written before it', async () => {
      expect(
        await db.all('SELECT agent_row, version, signature, recorded_at FROM agent_key_records ORDER BY version'),
      ).toEqual([
        { agent_row: 'old', version: 1, signature: null, recorded_at: 7 },
        { agent_row: 'old', version: 2, signature: 'sig2', recorded_at: 7 },
      ]);
    });

    it('lets version 1 carry its own signature, never a previous one; later versions stay signed', async () => {
      await expect(record({ agent_row: 'new', version: 1, signature: 's', previous: 'p' })).rejects.toThrow(
        REFUSED.check,
      );
      await record({ agent_row: 'new', version: 1, signature: 'sig1' });
      await expect(record({ agent_row: 'new', version: 2 })).rejects.toThrow(REFUSED.check);
      await expect(record({ agent_row: 'no-such-row', version: 1 })).rejects.toThrow(REFUSED.foreignKey);
    });

    it('stays append-only', async () => {
      await expect(db.run("UPDATE agent_key_records SET signature = 'x' WHERE version = 1")).rejects.toThrow(
        /append-only/,
      );
    });
  });
});
