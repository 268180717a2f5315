import { describe, expect, it } from 'vitest';
import { eachLedger, usesIndex } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { migration001 } from './001-initial.js';
import { migration006 } from './006-challenge-bounds.js';

describe('migration 006-challenge-bounds', () => {
  // Only 001 before it: 006 must not depend on 002 to 005.
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;

    it('records itself after 001 alone and is not applied twice', async () => {
      db = await fresh();
      await migrate(db, [migration001, migration006]);
      await insertGrant(db);
      await insertAgent(db, 'row');
      expect(await db.all('SELECT version, name FROM schema_migrations ORDER BY version')).toEqual([
        { version: 1, name: 'initial' },
        { version: 6, name: 'challenge-bounds' },
      ]);
      expect(await migrate(db, [migration001, migration006])).toEqual([]);
    });

    it('prunes by expiry and counts an agent’s rows through its indexes', async () => {
      for (let i = 0; i < 5; i++) {
        await db.run(
          "INSERT INTO challenges (id, agent_row, nonce, created_at, expires_at) VALUES (?, 'row', 'n', ?, ?)",
          [`c${i}`, i, i + 60],
        );
      }
      expect(await usesIndex(db, 'DELETE FROM challenges WHERE expires_at <= 62', 'challenges_expiry')).toBe(true);
      expect(
        await usesIndex(
          db,
          "SELECT id FROM challenges WHERE agent_row = 'row' ORDER BY created_at DESC",
          'challenges_agent',
        ),
      ).toBe(true);
      await db.run('DELETE FROM challenges WHERE expires_at <= 62');
      expect(await db.all('SELECT id FROM challenges ORDER BY id')).toEqual([{ id: 'c3' }, { id: 'c4' }]);
    });
  });
});
