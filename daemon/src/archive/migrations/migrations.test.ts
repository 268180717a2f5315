/** Each migration applied on its own, on an archive at the previous version with data in it. */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS, migrate } from './index.js';

const at = (version: number) => {
  const db = new Database(':memory:');
  migrate(db, version);
  return db;
};
const tables = (db: Database.Database) =>
  (
    db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table','trigger') ORDER BY name").all() as Array<{
      name: string;
    }>
  ).map((r) => r.name);
const insertMessage = (db: Database.Database, id: string, content: string, direction = 'inbound') =>
  db
    .prepare(
      `INSERT INTO messages (message_id, conversation_id, conversation_type, direction, sender, recipient,
         content_type, content, sent_at) VALUES (?, 'dm:a:b', 'direct', ?, 'a', 'b', 'text', ?, ?)`,
    )
    .run(id, direction, content, new Date().toISOString());

describe('archive migrations', () => {
  it('are numbered 1..n without gaps', () => {
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
  });

  it('001 messages: message_id is unique', () => {
    const db = at(1);
    expect(db.pragma('user_version', { simple: true })).toBe(1);
    insertMessage(db, 'm1', 'hello');
    expect(() => insertMessage(db, 'm1', 'again')).toThrow(/UNIQUE/);
  });

  it('002 conversations: backfills existing messages and follows new ones', () => {
    const db = at(1);
    insertMessage(db, 'm1', 'one');
    migrate(db, 2);
    expect(db.prepare('SELECT peer, message_count FROM conversations').get()).toEqual({ peer: 'a', message_count: 1 });
    insertMessage(db, 'm2', 'two', 'outbound');
    expect(db.prepare('SELECT message_count FROM conversations').get()).toEqual({ message_count: 2 });
  });

  it('003 peer keys and held envelopes', () => {
    const db = at(2);
    migrate(db, 3);
    expect(tables(db)).toEqual(expect.arrayContaining(['peer_keys', 'held_envelopes']));
    db.prepare(
      "INSERT INTO peer_keys (agent_number, signing_public_key, encryption_public_key, pinned_at) VALUES ('a','s','e','t')",
    ).run();
    expect(db.prepare('SELECT changed_signing_public_key FROM peer_keys').get()).toEqual({
      changed_signing_public_key: null,
    });
  });

  it('004 receipts and rejected envelopes', () => {
    const db = at(3);
    migrate(db, 4);
    expect(tables(db)).toEqual(expect.arrayContaining(['receipts', 'rejected_envelopes']));
  });

  it('005 sync cursors', () => {
    const db = at(4);
    migrate(db, 5);
    db.prepare("INSERT INTO sync_cursors (name, value, updated_at) VALUES ('stream', 7, 't')").run();
    expect(db.prepare('SELECT value FROM sync_cursors').get()).toEqual({ value: 7 });
  });

  it('006 search: indexes existing and new messages', () => {
    const db = at(5);
    insertMessage(db, 'm1', 'the quick brown fox');
    migrate(db, 6);
    insertMessage(db, 'm2', 'lazy dogs sleep');
    const find = (q: string) =>
      (db.prepare('SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?').all(q) as unknown[]).length;
    expect(find('fox')).toBe(1);
    expect(find('dogs')).toBe(1);
    expect(find('cat')).toBe(0);
    expect(db.pragma('user_version', { simple: true })).toBe(6);
  });

  it('007 delivered: outbound messages take the time of a receipt already recorded', () => {
    const db = at(6);
    insertMessage(db, 'out-1', 'acked by the peer', 'outbound');
    insertMessage(db, 'out-2', 'not yet', 'outbound');
    insertMessage(db, 'in-1', 'inbound has no receipt', 'inbound');
    db.prepare("INSERT INTO receipts (message_id, recipient, status, at) VALUES ('out-1', 'b', 'acked', 'T1')").run();
    migrate(db, 7);
    expect(db.prepare('SELECT message_id, delivered_at FROM messages ORDER BY message_id').all()).toEqual([
      { message_id: 'in-1', delivered_at: null },
      { message_id: 'out-1', delivered_at: 'T1' },
      { message_id: 'out-2', delivered_at: null },
    ]);
  });

  it('008 canonical conversations: a message filed under a conversation its sender chose moves to its own', () => {
    const db = at(7);
    const put = (
      id: string,
      conversation: string,
      type: string,
      direction: string,
      sender: string,
      recipient: string,
    ) =>
      db
        .prepare(
          `INSERT INTO messages (message_id, conversation_id, conversation_type, direction, sender, recipient,
             content_type, content, sent_at) VALUES (?, ?, ?, ?, ?, ?, 'text', ?, ?)`,
        )
        .run(id, conversation, type, direction, sender, recipient, `text of ${id}`, `2026-01-01T00:00:0${id.at(-1)}Z`);
    // dmn3's archive: a real conversation with dmn4, and fz1 writing into it and into a made-up one
    put('m1', 'dm:dmn3:dmn4', 'direct', 'inbound', 'dmn4', 'dmn3');
    put('m2', 'dm:dmn3:dmn4', 'direct', 'inbound', 'fz1', 'dmn3');
    put('m3', 'dm:alice:dmn3', 'direct', 'inbound', 'fz1', 'dmn3');
    put('m4', 'team', 'group', 'inbound', 'fz1', 'dmn3');
    put('m5', 'dm:dmn3:dmn4', 'direct', 'outbound', 'dmn3', 'dmn4');
    migrate(db, 8);
    expect(
      db.prepare('SELECT message_id, conversation_id, conversation_type FROM messages ORDER BY message_id').all(),
    ).toEqual([
      { message_id: 'm1', conversation_id: 'dm:dmn3:dmn4', conversation_type: 'direct' },
      { message_id: 'm2', conversation_id: 'dm:dmn3:fz1', conversation_type: 'direct' },
      { message_id: 'm3', conversation_id: 'dm:dmn3:fz1', conversation_type: 'direct' },
      { message_id: 'm4', conversation_id: 'dm:dmn3:fz1', conversation_type: 'direct' },
      { message_id: 'm5', conversation_id: 'dm:dmn3:dmn4', conversation_type: 'direct' },
    ]);
    expect(db.prepare('SELECT conversation_id, peer, message_count FROM conversations ORDER BY 1').all()).toEqual([
      { conversation_id: 'dm:dmn3:dmn4', peer: 'dmn4', message_count: 2 },
      { conversation_id: 'dm:dmn3:fz1', peer: 'fz1', message_count: 3 },
    ]);
    // the search index follows: fz1's messages are found under its conversation only
    const found = (q: string) =>
      (db.prepare('SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?').all(q) as unknown[]).length;
    expect(found('conversation_id:fz1')).toBe(3);
    expect(found('conversation_id:dmn4')).toBe(2);
    expect(db.pragma('user_version', { simple: true })).toBe(8);
  });

  it('009 outbox: messages sent before it are sent; queued ones are found; nothing is muted', () => {
    const db = at(7);
    insertMessage(db, 'out-1', 'sent long ago', 'outbound');
    insertMessage(db, 'in-1', 'inbound', 'inbound');
    migrate(db, 9);
    expect(db.prepare('SELECT message_id, send_state, muted FROM messages ORDER BY message_id').all()).toEqual([
      { message_id: 'in-1', send_state: null, muted: 0 },
      { message_id: 'out-1', send_state: 'sent', muted: 0 },
    ]);
    expect(() => db.prepare("UPDATE messages SET send_state = 'lost' WHERE message_id = 'out-1'").run()).toThrow(
      /CHECK/,
    );
    expect(db.pragma('user_version', { simple: true })).toBe(9);
  });

  it('010 sender key: earlier messages have none; a new one keeps the key it verified under', () => {
    const db = at(9);
    insertMessage(db, 'in-old', 'before');
    migrate(db, 10);
    insertMessage(db, 'in-new', 'after');
    db.prepare("UPDATE messages SET sender_key = 'KEY' WHERE message_id = 'in-new'").run();
    expect(db.prepare('SELECT message_id, sender_key FROM messages ORDER BY message_id').all()).toEqual([
      { message_id: 'in-new', sender_key: 'KEY' },
      { message_id: 'in-old', sender_key: null },
    ]);
  });

  it('011 group sequences: numbers and notes are empty for old messages; counters count', () => {
    const db = at(10);
    insertMessage(db, 'in-1', 'before groups');
    migrate(db, 11);
    expect(db.prepare('SELECT conv_seq, seq_note FROM messages').get()).toEqual({ conv_seq: null, seq_note: null });
    const next = db.prepare(
      `INSERT INTO conversation_counters (conversation_id, next_seq) VALUES ('grp:a:x', 2)
       ON CONFLICT (conversation_id) DO UPDATE SET next_seq = next_seq + 1 RETURNING next_seq`,
    );
    expect([next.get(), next.get()]).toEqual([{ next_seq: 2 }, { next_seq: 3 }]);
    expect(db.pragma('user_version', { simple: true })).toBe(11);
  });

  it('migrate is idempotent', () => {
    const last = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;
    const db = at(last);
    expect(migrate(db)).toBe(last);
  });
});
