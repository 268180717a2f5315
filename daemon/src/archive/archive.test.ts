import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { Archive, ArchiveUnusableError, ftsQuery, HELD_KEPT_PER_SENDER, REJECTED_KEPT } from './archive.js';
import { MIGRATIONS } from './migrations/index.js';

let archive: Archive | undefined;
afterEach(() => archive?.close());

const msg = (
  id: string,
  content: string,
  direction: 'inbound' | 'outbound' = 'inbound',
  sent_at = new Date().toISOString(),
) => ({
  message_id: id,
  conversation_id: 'dm:alice:bob',
  conversation_type: 'direct' as const,
  direction,
  from: direction === 'inbound' ? 'alice' : 'bob',
  to: direction === 'inbound' ? 'bob' : 'alice',
  content_type: 'text',
  content,
  sent_at,
  received_at: direction === 'inbound' ? sent_at : null,
  acked_at: null,
  delivered_at: null,
});

describe('archive', () => {
  it('inserts idempotently, lists the inbox, acks, and searches with FTS5', () => {
    archive = Archive.open(join(mkdtempSync(join(tmpdir(), 'svc-archive-')), 'archive.db'));
    expect(archive.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(archive.insertMessage(msg('m1', 'Meeting about the quarterly budget'))).toBe(true);
    expect(archive.insertMessage(msg('m1', 'Meeting about the quarterly budget'))).toBe(false);
    archive.insertMessage(msg('m2', 'lunch? "quotes" AND NOT syntax', 'outbound'));
    expect(archive.inbox().map((m) => m.message_id)).toEqual(['m1']);
    expect(archive.search('budget').map((m) => m.message_id)).toEqual(['m1']);
    expect(archive.search('"quotes" AND NOT').map((m) => m.message_id)).toEqual(['m2']);
    expect(archive.search('   ')).toEqual([]);
    expect(archive.resolveConversation('alice')).toBe('dm:alice:bob');
    expect(archive.conversation('dm:alice:bob', { last: 1 }).map((m) => m.message_id)).toEqual(['m2']);
    const at = archive.ack('m1', new Date().toISOString());
    expect(at).toBeTruthy();
    expect(archive.inbox()).toEqual([]);
    expect(archive.ack('nope', 'x')).toBeUndefined();
    // a roster change is not something a person wrote: search leaves it out
    archive.insertMessage({
      ...msg('c1', '{"op":"create","kind":"group","name":"budget review"}'),
      conversation_id: 'grp:alice:x',
      conversation_type: 'group',
      content_type: 'control',
    });
    expect(archive.search('budget').map((m) => m.message_id)).toEqual(['m1']);
  });

  it('records a receipt once and marks the sent message delivered, even one archived after it', () => {
    archive = Archive.open(join(mkdtempSync(join(tmpdir(), 'svc-archive-')), 'archive.db'));
    const old = new Date(Date.now() - 30 * 24 * 3600 * 1000).toISOString();
    archive.insertMessage(msg('in', 'hello', 'inbound'));
    archive.insertMessage(msg('out', 'hi', 'outbound'));
    archive.insertMessage(msg('stale', 'long ago', 'outbound', old));
    const recent = new Date(Date.now() - 3600 * 1000).toISOString();
    expect(archive.awaitingReceipts(recent)).toBe(true);

    expect(archive.recordReceipt('out', 'alice', 'acked', 'T1')).toBe(true);
    expect(archive.recordReceipt('out', 'alice', 'acked', 'T2')).toBe(false);
    expect(archive.getMessage('out')?.delivered_at).toBe('T1');
    // an inbound message with the same id as a receipt is never marked
    expect(archive.recordReceipt('in', 'alice', 'acked', 'T3')).toBe(true);
    expect(archive.getMessage('in')?.delivered_at).toBeNull();
    // only a sent message newer than the horizon keeps the session asking
    expect(archive.awaitingReceipts(recent)).toBe(false);
    expect(archive.awaitingReceipts(new Date(0).toISOString())).toBe(true);

    // the receipt came first (sent from another client of the agent): archived delivered
    expect(archive.recordReceipt('later', 'alice', 'acked', 'T4')).toBe(true);
    archive.insertMessage(msg('later', 'sent elsewhere', 'outbound'));
    expect(archive.getMessage('later')?.delivered_at).toBe('T4');
  });

  it('keeps only the newest receipts of messages it has not archived (the relay names those ids)', () => {
    archive = Archive.open(join(mkdtempSync(join(tmpdir(), 'svc-archive-')), 'archive.db'));
    archive.insertMessage(msg('mine', 'hi', 'outbound'));
    archive.recordReceipt('mine', 'alice', 'acked', 'T0');
    for (let i = 0; i < 30; i++) archive.recordReceipt(`stray-${i}`, 'alice', 'acked', `T${i}`);
    expect(archive.pruneStrayReceipts(10)).toBe(20);
    const left = (
      archive.db.prepare('SELECT message_id FROM receipts ORDER BY rowid').all() as { message_id: string }[]
    ).map((r) => r.message_id);
    expect(left).toEqual(['mine', ...Array.from({ length: 10 }, (_, i) => `stray-${20 + i}`)]);
    // a kept one still marks its message delivered once that is archived
    archive.insertMessage(msg('stray-29', 'sent elsewhere', 'outbound'));
    expect(archive.getMessage('stray-29')?.delivered_at).toBe('T29');
    expect(archive.pruneStrayReceipts(10)).toBe(0);
  });

  it('holds the newest envelopes of a sender only, and leaves other senders alone', () => {
    archive = Archive.open(join(mkdtempSync(join(tmpdir(), 'svc-archive-')), 'archive.db'));
    archive.hold('bob-1', 'bob', '{}');
    let dropped = 0;
    for (let i = 0; i < HELD_KEPT_PER_SENDER + 3; i++) dropped += archive.hold(`m${i}`, 'mallory', '{}');
    expect(dropped).toBe(3);
    const held = archive.held('mallory').map((h) => h.message_id);
    expect(held.length).toBe(HELD_KEPT_PER_SENDER);
    expect(held[0]).toBe('m3');
    expect(archive.held('bob').map((h) => h.message_id)).toEqual(['bob-1']);
  });

  it('remembers the newest refused envelopes only', () => {
    archive = Archive.open(join(mkdtempSync(join(tmpdir(), 'svc-archive-')), 'archive.db'));
    for (let i = 0; i < REJECTED_KEPT + 5; i++) archive.recordRejected(`m${i}`, 'mallory', 'envelope_malformed');
    const rows = archive.db.prepare('SELECT message_id FROM rejected_envelopes ORDER BY rowid').all() as {
      message_id: string;
    }[];
    expect(rows.length).toBe(REJECTED_KEPT);
    expect(rows[0]?.message_id).toBe('m5');
    expect(rows.at(-1)?.message_id).toBe(`m${REJECTED_KEPT + 4}`);
  });

  it('takes back a message kept as queued whose first post was refused: gone from search and the conversation list', () => {
    archive = Archive.open(join(mkdtempSync(join(tmpdir(), 'svc-archive-')), 'archive.db'));
    const conversations = () =>
      archive?.db.prepare('SELECT conversation_id, message_count, last_message_at FROM conversations').all();
    archive.insertMessage({ ...msg('q1', 'refused at once', 'outbound'), send_state: 'queued' });
    archive.dropQueued('q1');
    expect(archive.search('refused')).toEqual([]);
    expect(conversations()).toEqual([]);
    // with another message there, the summary counts that one alone
    archive.insertMessage(msg('m1', 'hello', 'inbound', '2026-01-01T00:00:00.000Z'));
    archive.insertMessage({
      ...msg('q2', 'refused too', 'outbound', '2026-02-01T00:00:00.000Z'),
      send_state: 'queued',
    });
    archive.dropQueued('q2');
    expect(conversations()).toEqual([
      { conversation_id: 'dm:alice:bob', message_count: 1, last_message_at: '2026-01-01T00:00:00.000Z' },
    ]);
    // a message sent already is not taken back
    archive.insertMessage(msg('s1', 'sent', 'outbound'));
    archive.dropQueued('s1');
    expect(archive.conversation('dm:alice:bob', {}).map((m) => m.message_id)).toContain('s1');
  });

  it('quotes user text for FTS5; a control character separates terms (a NUL was a syntax error)', () => {
    expect(ftsQuery('a "b" c*')).toBe('"a" "b" "c*"');
    expect(ftsQuery('x\u0000y\u001b')).toBe('"x" "y"');
    archive = Archive.open(join(mkdtempSync(join(tmpdir(), 'svc-archive-')), 'archive.db'));
    archive.insertMessage(msg('n1', 'lunch at noon'));
    expect(archive.search('lunch\u0000noon').map((m) => m.message_id)).toEqual(['n1']);
    expect(archive.search('\u0000')).toEqual([]);
  });
});

describe('archive files it cannot use', () => {
  const dir = () => mkdtempSync(join(tmpdir(), 'svc-archive-'));

  it('refuses an archive of a newer schema (a later svc wrote it), and leaves the file as it was', () => {
    const path = join(dir(), 'archive.db');
    const newer = new Database(path);
    newer.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    newer.exec('CREATE TABLE messages (message_id TEXT PRIMARY KEY, later_column TEXT NOT NULL)');
    newer.close();
    const before = readFileSync(path);
    expect(() => {
      archive = Archive.open(path);
    }).toThrow(expect.objectContaining({ code: 'archive_unusable', message: expect.stringContaining(path) }));
    expect(() => Archive.open(path)).toThrow(/newer svc/);
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('a damaged archive file: an error that names it, and the file left as it was', () => {
    const path = join(dir(), 'archive.db');
    writeFileSync(path, 'not a database, just some bytes '.repeat(200));
    const before = readFileSync(path);
    expect(() => Archive.open(path)).toThrow(expect.objectContaining({ message: expect.stringContaining(path) }));
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('an archive that could not be opened for another reason is not said to be unchanged (the failure may come after a write)', () => {
    const path = join(dir(), 'archive.db');
    mkdirSync(path);
    let failure: unknown;
    try {
      Archive.open(path);
    } catch (err) {
      failure = err;
    }
    const error = ArchiveUnusableError.of(path, failure);
    expect(error.code).toBe('archive_unusable');
    expect(error.message).toMatch(
      new RegExp(`^The archive ${path} could not be opened \\(.+\\); it was not repaired or replaced: check the file`),
    );
    expect(error.message).not.toContain('not changed');
  });
});
