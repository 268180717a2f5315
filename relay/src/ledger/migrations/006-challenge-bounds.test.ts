import { describe, expect, it } from 'vitest';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate, openDatabase } from '../database.js';
import { SqliteDatabase } from '../sqlite.js';
import { migration001 } from './001-initial.js';
import { migration006 } from './006-challenge-bounds.js';

describe('migration 006-challenge-bounds', async () => {
  // Only 001 before it: 006 must not depend on 002 to 005.
  const db = openDatabase(':memory:');
  await migrate(new SqliteDatabase(db), [migration001, migration006]);
  insertGrant(db);
  insertAgent(db, 'row');

  it('records itself after 001 alone and is not applied twice', async () => {
    expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 1, name: 'initial' },
      { version: 6, name: 'challenge-bounds' },
    ]);
    expect(await migrate(new SqliteDatabase(db), [migration001, migration006])).toEqual([]);
  });

  it('prunes by expiry and counts an agent’s rows through its indexes', async () => {
    const insert = db.prepare(
      "INSERT INTO challenges (id, agent_row, nonce, created_at, expires_at) VALUES (?, 'row', 'n', ?, ?)",
    );
    for (let i = 0; i < 5; i++) insert.run(`c${i}`, i, i + 60);
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join(' ');
    expect(plan('DELETE FROM challenges WHERE expires_at <= 62')).toMatch(/challenges_expiry/);
    expect(plan("SELECT id FROM challenges WHERE agent_row = 'row' ORDER BY created_at DESC")).toMatch(
      /challenges_agent/,
    );
    db.prepare('DELETE FROM challenges WHERE expires_at <= 62').run();
    expect(db.prepare('SELECT id FROM challenges ORDER BY id').all()).toEqual([{ id: 'c3' }, { id: 'c4' }]);
  });
});
