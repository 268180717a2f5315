import { describe, expect, it } from 'vitest';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate, openDatabase } from '../database.js';
import { SqliteDatabase } from '../sqlite.js';
import { migration001 } from './001-initial.js';

describe('migration 001-initial', async () => {
  const db = openDatabase(':memory:');
  await migrate(new SqliteDatabase(db), [migration001]);
  const grant = (id: string) => insertGrant(db, id);
  const agent = (id: string, grantId: string, revoked: number | null = null, tenant = 't') =>
    insertAgent(db, id, { grant: grantId, revokedAt: revoked, tenant });

  it('records itself and is not applied twice', async () => {
    expect(db.prepare('SELECT version, name FROM schema_migrations').all()).toEqual([{ version: 1, name: 'initial' }]);
    expect(await migrate(new SqliteDatabase(db), [migration001])).toEqual([]);
  });

  it('allows one active incarnation per agent id and number, any number of revoked ones, per tenant', async () => {
    grant('g1');
    agent('r1', 'g1', 5);
    agent('r2', 'g1', 6);
    agent('a1', 'g1');
    expect(() => agent('a2', 'g1')).toThrow(/UNIQUE/);
    agent('other-tenant', 'g1', null, 'u');
  });

  it('enforces strict types and references', async () => {
    expect(() => agent('x', 'no-such-grant', 1)).toThrow(/FOREIGN KEY/);
    expect(() =>
      db.prepare("INSERT INTO api_keys (hash, agent_row, created_at, expires_at) VALUES ('h', 'a1', 'soon', 1)").run(),
    ).toThrow(/cannot store TEXT value in INTEGER column/);
  });

  it('refuses a ledger newer than the code', async () => {
    const newer = openDatabase(':memory:');
    await migrate(new SqliteDatabase(newer), [migration001, { version: 2, name: 'future', up: 'SELECT 1' }]);
    await expect(migrate(new SqliteDatabase(newer), [migration001])).rejects.toThrow(/newer than this relay knows/);
  });
});
