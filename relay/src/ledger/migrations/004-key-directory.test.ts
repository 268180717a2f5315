import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { migration001 } from './001-initial.js';
import { migration004 } from './004-key-directory.js';

const KEY_A = 'A'.repeat(43);
const KEY_B = 'B'.repeat(43);

describe('migration 004-key-directory', () => {
  // Only 001 before it: 004 must not depend on 002 or 003.
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;
    const record = (r: {
      agent_row?: string;
      version: number | string;
      signing?: string;
      encryption?: string;
      signature?: string | null;
      previous?: string | null;
    }) =>
      db.run(
        `INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at, signature, previous_signature, recorded_at)
         VALUES (?, ?, ?, ?, '2025-01-01T00:00:00.000Z', ?, ?, 0)`,
        [
          r.agent_row ?? 'row',
          r.version,
          r.signing ?? KEY_A,
          r.encryption ?? KEY_B,
          r.signature ?? null,
          r.previous ?? null,
        ],
      );

    it('records itself after 001 alone and is not applied twice', async () => {
      db = await fresh();
      await migrate(db, [migration001, migration004]);
      await insertGrant(db);
      await insertAgent(db, 'row');
      expect(await db.all('SELECT version, name FROM schema_migrations ORDER BY version')).toEqual([
        { version: 1, name: 'initial' },
        { version: 4, name: 'key-directory' },
      ]);
      expect(await migrate(db, [migration001, migration004])).toEqual([]);
    });

    it('keeps one record per incarnation and version; version 1 unsigned, later versions signed', async () => {
      await record({ version: 1 });
      await expect(record({ version: 1 })).rejects.toThrow(REFUSED.unique);
      await expect(record({ version: 2 })).rejects.toThrow(REFUSED.check);
      await record({ version: 2, signature: 'sig' });
      await record({ version: 3, signature: 'sig', previous: 'prev' });
      await expect(record({ version: 0, signature: 'sig' })).rejects.toThrow(REFUSED.check);
      await expect(record({ version: 4, signature: 'sig', signing: 'short' })).rejects.toThrow(REFUSED.check);
      await expect(
        db.run(
          "INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at, signature, previous_signature, recorded_at) VALUES ('row', 1, ?, ?, 'x', NULL, 'p', 0)",
          [KEY_A, KEY_B],
        ),
      ).rejects.toThrow(REFUSED.check);
    });

    it('enforces types and the incarnation reference', async () => {
      await expect(record({ version: 'two', signature: 'sig' })).rejects.toThrow(REFUSED.type);
      await expect(record({ agent_row: 'no-such-row', version: 1 })).rejects.toThrow(REFUSED.foreignKey);
    });

    it('is append-only', async () => {
      await expect(
        db.run('UPDATE agent_key_records SET signing_public_key = ? WHERE version = 1', [KEY_B]),
      ).rejects.toThrow(/append-only/);
    });
  });
});
