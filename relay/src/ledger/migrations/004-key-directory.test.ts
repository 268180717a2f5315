import { describe, expect, it } from 'vitest';
import { insertAgent, insertGrant } from '../../../test/helpers/ledger-rows.js';
import { migrate, openDatabase } from '../database.js';
import { SqliteDatabase } from '../sqlite.js';
import { migration001 } from './001-initial.js';
import { migration004 } from './004-key-directory.js';

const KEY_A = 'A'.repeat(43);
const KEY_B = 'B'.repeat(43);

describe('migration 004-key-directory', async () => {
  // Only 001 before it: 004 must not depend on 002 or 003.
  const db = openDatabase(':memory:');
  await migrate(new SqliteDatabase(db), [migration001, migration004]);
  insertGrant(db);
  insertAgent(db, 'row');
  const record = (r: {
    agent_row?: string;
    version: number | string;
    signing?: string;
    encryption?: string;
    signature?: string | null;
    previous?: string | null;
  }) =>
    db
      .prepare(
        `INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at, signature, previous_signature, recorded_at)
         VALUES (?, ?, ?, ?, '2025-01-01T00:00:00.000Z', ?, ?, 0)`,
      )
      .run(
        r.agent_row ?? 'row',
        r.version,
        r.signing ?? KEY_A,
        r.encryption ?? KEY_B,
        r.signature ?? null,
        r.previous ?? null,
      );

  it('records itself after 001 alone and is not applied twice', async () => {
    expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 1, name: 'initial' },
      { version: 4, name: 'key-directory' },
    ]);
    expect(await migrate(new SqliteDatabase(db), [migration001, migration004])).toEqual([]);
  });

  it('keeps one record per incarnation and version; version 1 unsigned, later versions signed', async () => {
    record({ version: 1 });
    expect(() => record({ version: 1 })).toThrow(/UNIQUE|PRIMARY KEY/);
    expect(() => record({ version: 2 })).toThrow(/CHECK/);
    record({ version: 2, signature: 'sig' });
    record({ version: 3, signature: 'sig', previous: 'prev' });
    expect(() => record({ version: 0, signature: 'sig' })).toThrow(/CHECK/);
    expect(() => record({ version: 4, signature: 'sig', signing: 'short' })).toThrow(/CHECK/);
    expect(() =>
      db
        .prepare(
          "INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at, signature, previous_signature, recorded_at) VALUES ('row', 1, ?, ?, 'x', NULL, 'p', 0)",
        )
        .run(KEY_A, KEY_B),
    ).toThrow(/CHECK/);
  });

  it('enforces strict types and the incarnation reference', async () => {
    expect(() => record({ version: 'two', signature: 'sig' })).toThrow(/cannot store TEXT value in INTEGER column/);
    expect(() => record({ agent_row: 'no-such-row', version: 1 })).toThrow(/FOREIGN KEY/);
  });

  it('is append-only', async () => {
    expect(() =>
      db.prepare('UPDATE agent_key_records SET signing_public_key = ? WHERE version = 1').run(KEY_B),
    ).toThrow(/append-only/);
  });
});
