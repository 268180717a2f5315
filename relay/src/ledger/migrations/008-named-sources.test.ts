import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { migration001 } from './001-initial.js';
import { migration008 } from './008-named-sources.js';

describe('migration 008-named-sources', () => {
  // 001 only: 008 must not depend on anything else.
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;
    const source = (id: string, released: number | null = null, agentRow = 'agent') =>
      db.run(
        `INSERT INTO named_sources (id, tenant_id, agent_row, edge_row, durable, created_at, released_at)
         VALUES (?, 't', ?, 'edge', 'src_a', 1, ?)`,
        [id, agentRow, released],
      );

    it('records itself and is not applied twice', async () => {
      db = await fresh();
      await migrate(db, [migration001, migration008]);
      await insertGrant(db);
      await insertAgent(db, 'agent');
      await insertAgent(db, 'edge', { agentId: 'edge' });
      expect(await db.all('SELECT version FROM schema_migrations ORDER BY version')).toEqual([
        { version: 1 },
        { version: 8 },
      ]);
      expect(await migrate(db, [migration001, migration008])).toEqual([]);
    });

    it('holds one active source per consumer name, and any number released ones', async () => {
      await source('s1', 5);
      await source('s2', 6);
      await source('s3');
      await expect(source('s4')).rejects.toThrow(REFUSED.unique);
      await expect(source('s5', 7, 'no-such-row')).rejects.toThrow(REFUSED.foreignKey);
    });
  });
});
