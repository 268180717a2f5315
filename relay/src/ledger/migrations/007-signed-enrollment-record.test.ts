import { describe, expect, it } from 'vitest';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate, openDatabase } from '../database.js';
import { SqliteDatabase } from '../sqlite.js';
import { migration001 } from './001-initial.js';
import { migration004 } from './004-key-directory.js';
import { migration007 } from './007-signed-enrollment-record.js';

const KEY_A = 'A'.repeat(43);
const KEY_B = 'B'.repeat(43);

describe('migration 007-signed-enrollment-record', async () => {
  // 001 and 004 only: 007 must not depend on anything else.
  const db = openDatabase(':memory:');
  await migrate(new SqliteDatabase(db), [migration001, migration004]);
  insertGrant(db);
  insertAgent(db, 'old');
  insertAgent(db, 'new', { agentId: 'b' });
  const record = (r: { agent_row: string; version: number; signature?: string | null; previous?: string | null }) =>
    db
      .prepare(
        `INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at, signature, previous_signature, recorded_at)
         VALUES (?, ?, ?, ?, '2025-01-01T00:00:00.000Z', ?, ?, 7)`,
      )
      .run(r.agent_row, r.version, KEY_A, KEY_B, r.signature ?? null, r.previous ?? null);
  // a history written before: unsigned version 1, signed version 2
  record({ agent_row: 'old', version: 1 });
  record({ agent_row: 'old', version: 2, signature: 'sig2' });
  expect(() => record({ agent_row: 'new', version: 1, signature: 'sig1' })).toThrow(/CHECK/);
  await migrate(new SqliteDatabase(db), [migration001, migration004, migration007]);

  it('records itself and is not applied twice', async () => {
    expect(db.prepare('SELECT version FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 1 },
      { version: 4 },
      { version: 7 },
    ]);
    expect(await migrate(new SqliteDatabase(db), [migration001, migration004, migration007])).toEqual([]);
  });

  it('keeps the rows written before it', async () => {
    expect(
      db.prepare('SELECT agent_row, version, signature, recorded_at FROM agent_key_records ORDER BY version').all(),
    ).toEqual([
      { agent_row: 'old', version: 1, signature: null, recorded_at: 7 },
      { agent_row: 'old', version: 2, signature: 'sig2', recorded_at: 7 },
    ]);
  });

  it('lets version 1 carry its own signature, never a previous one; later versions stay signed', async () => {
    expect(() => record({ agent_row: 'new', version: 1, signature: 's', previous: 'p' })).toThrow(/CHECK/);
    record({ agent_row: 'new', version: 1, signature: 'sig1' });
    expect(() => record({ agent_row: 'new', version: 2 })).toThrow(/CHECK/);
    expect(() => record({ agent_row: 'no-such-row', version: 1 })).toThrow(/FOREIGN KEY/);
  });

  it('stays append-only', async () => {
    expect(() => db.prepare("UPDATE agent_key_records SET signature = 'x' WHERE version = 1").run()).toThrow(
      /append-only/,
    );
  });
});
