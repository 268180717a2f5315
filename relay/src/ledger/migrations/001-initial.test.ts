import { describe, expect, it } from 'vitest';
import { eachLedger, REFUSED } from '../../../test/helpers/ledger-kinds.js';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate } from '../database.js';
import type { SqlDatabase } from '../sql.js';
import { migration001 } from './001-initial.js';

describe('migration 001-initial', () => {
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;
    const grant = (id: string) => insertGrant(db, id);
    const agent = (id: string, grantId: string, revoked: number | null = null, tenant = 't') =>
      insertAgent(db, id, { grant: grantId, revokedAt: revoked, tenant });

    it('records itself and is not applied twice', async () => {
      db = await fresh();
      expect(await migrate(db, [migration001])).toEqual([1]);
      expect(await db.all('SELECT version, name FROM schema_migrations')).toEqual([{ version: 1, name: 'initial' }]);
      expect(await migrate(db, [migration001])).toEqual([]);
    });

    it('allows one active incarnation per agent id and number, any number of revoked ones, per tenant', async () => {
      await grant('g1');
      await agent('r1', 'g1', 5);
      await agent('r2', 'g1', 6);
      await agent('a1', 'g1');
      await expect(agent('a2', 'g1')).rejects.toThrow(REFUSED.unique);
      await agent('other-tenant', 'g1', null, 'u');
    });

    it('enforces types and references', async () => {
      await expect(agent('x', 'no-such-grant', 1)).rejects.toThrow(REFUSED.foreignKey);
      await expect(
        db.run("INSERT INTO api_keys (hash, agent_row, created_at, expires_at) VALUES ('h', 'a1', 'soon', 1)"),
      ).rejects.toThrow(REFUSED.type);
    });

    it('refuses a ledger newer than the code', async () => {
      const newer = await fresh();
      await migrate(newer, [migration001, { version: 2, name: 'future', up: 'SELECT 1' }]);
      await expect(migrate(newer, [migration001])).rejects.toThrow(/newer than this relay knows/);
    });
  });
});
