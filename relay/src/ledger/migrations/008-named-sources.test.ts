import { describe, expect, it } from 'vitest';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate, openDatabase } from '../database.js';
import { SqliteDatabase } from '../sqlite.js';
import { migration001 } from './001-initial.js';
import { migration008 } from './008-named-sources.js';

describe('migration 008-named-sources', async () => {
  // 001 only: 008 must not depend on anything else.
  const db = openDatabase(':memory:');
  await migrate(new SqliteDatabase(db), [migration001, migration008]);
  insertGrant(db);
  insertAgent(db, 'agent');
  insertAgent(db, 'edge', { agentId: 'edge' });
  const source = (id: string, released: number | null = null, agentRow = 'agent') =>
    db
      .prepare(
        `INSERT INTO named_sources (id, tenant_id, agent_row, edge_row, durable, created_at, released_at)
         VALUES (?, 't', ?, 'edge', 'src_a', 1, ?)`,
      )
      .run(id, agentRow, released);

  it('records itself and is not applied twice', async () => {
    expect(db.prepare('SELECT version FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 1 },
      { version: 8 },
    ]);
    expect(await migrate(new SqliteDatabase(db), [migration001, migration008])).toEqual([]);
  });

  it('holds one active source per consumer name, and any number released ones', async () => {
    source('s1', 5);
    source('s2', 6);
    source('s3');
    expect(() => source('s4')).toThrow(/UNIQUE/);
    expect(() => source('s5', 7, 'no-such-row')).toThrow(/FOREIGN KEY/);
  });
});
