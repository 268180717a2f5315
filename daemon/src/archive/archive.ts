/**
 * The per-agent archive ($SVC_HOME/agents/<name>/archive.db, WAL): the source of truth
 * for reading. Only verified and decrypted messages enter `messages`; inserts are
 * idempotent on message_id so redelivery after a crash or reconnect never duplicates.
 */
import Database, { type Database as Db } from 'better-sqlite3';
import type { ArchivedMessage, MessageState, PeerKey } from '../client/api.js';
import type { ControlBody, ControlMessage } from '../conversations/roster.js';
import type { SequenceNote } from '../conversations/sequence.js';
import { AgentFileUnusableError, LOOKED_AT_AGAIN, RESTART_DAEMON } from '../errors.js';
import { ensurePrivateFile, restrictExisting } from '../private-file.js';
import { MIGRATIONS, migrate } from './migrations/index.js';

/**
 * An archive file this svc cannot use (written by a newer svc, damaged, or not openable):
 * `archive_unusable`, naming the file, with what to do (`hint`). The file is left as it is.
 */
export class ArchiveUnusableError extends AgentFileUnusableError {
  /**
   * `unchanged`: whether the failure came before anything could have written to the file
   * (only then does the message say it was not changed).
   */
  constructor(file: string, problem: string, hint: string, cause?: unknown, unchanged = true) {
    const what = unchanged ? 'it was not changed' : 'it was not repaired or replaced';
    super('archive_unusable', `The archive ${file} ${problem}; ${what}: ${hint}.`, file, hint, cause);
    this.name = 'ArchiveUnusableError';
  }

  /**
   * Any failure to open the archive at `file` (permissions, the disk, a busy lock…), as
   * this error. It may be passing, and it may have come after the file was opened for
   * writing, so the message does not claim the file is untouched.
   */
  static of(file: string, err: unknown): ArchiveUnusableError {
    if (err instanceof ArchiveUnusableError) return err;
    return new ArchiveUnusableError(
      file,
      `could not be opened (${(err as Error).message})`,
      `check the file, its directory and the disk (permissions, free space); ${LOOKED_AT_AGAIN}`,
      err,
      false,
    );
  }
}

export type SendState = 'queued' | 'sent' | 'failed';

export interface NewMessage extends Omit<ArchivedMessage, 'state' | 'muted' | 'send_error'> {
  envelope?: string;
  /** outbound only; default sent */
  send_state?: SendState;
  muted?: boolean;
  /** group and broadcast messages: the sender's number, and what the receiver saw on arrival */
  conv_seq?: number;
  seq_note?: SequenceNote;
}

/** A messages row: the archived message under its column names, with its sequence. */
type MessageRow = Omit<ArchivedMessage, 'from' | 'to' | 'state' | 'muted' | 'send_error'> & {
  seq: number;
  sender: string;
  recipient: string;
  send_state: SendState | null;
  send_error: string | null;
  muted: number;
  conv_seq: number | null;
  seq_note: string | null;
};

/** A queued outbound message: the sealed envelope to post again, as it was first sealed. */
export interface OutboxEntry {
  message_id: string;
  recipient: string;
  envelope: string;
}

function stateOf(r: MessageRow): MessageState {
  if (r.direction === 'inbound') return r.acked_at === null ? 'received' : 'read';
  // a group message refused after some members got it: a receipt of one does not hide that
  if (r.send_state === 'failed') return 'failed';
  if (r.delivered_at !== null) return 'delivered';
  return r.send_state ?? 'sent';
}

interface PeerRow {
  agent_number: string;
  agent_id: string | null;
  signing_public_key: string;
  encryption_public_key: string;
  key_version: number | null;
  pinned_at: string;
  changed_signing_public_key: string | null;
  changed_encryption_public_key: string | null;
  changed_seen_at: string | null;
}

export interface PeerPin extends PeerKey {
  agent_id: string | null;
  key_version: number | null;
}

const toMessage = (r: MessageRow): ArchivedMessage => ({
  message_id: r.message_id,
  conversation_id: r.conversation_id,
  conversation_type: r.conversation_type,
  direction: r.direction,
  from: r.sender,
  to: r.recipient,
  content_type: r.content_type,
  content: r.content,
  sent_at: r.sent_at,
  received_at: r.received_at,
  acked_at: r.acked_at,
  delivered_at: r.delivered_at,
  state: stateOf(r),
  muted: r.muted === 1,
  sort_key: `${r.sent_at}~${r.message_id}`,
  ...(r.send_error !== null && r.send_state === 'failed' ? { send_error: r.send_error } : {}),
  ...(r.conv_seq !== null ? { seq: r.conv_seq } : {}),
  ...(r.seq_note !== null ? { sequence: JSON.parse(r.seq_note) as SequenceNote } : {}),
});

const toPeer = (r: PeerRow): PeerPin => ({
  agent_number: r.agent_number,
  agent_id: r.agent_id,
  key_version: r.key_version,
  signing_public_key: r.signing_public_key,
  encryption_public_key: r.encryption_public_key,
  pinned_at: r.pinned_at,
  ...(r.changed_signing_public_key !== null && r.changed_encryption_public_key !== null
    ? {
        changed: {
          signing_public_key: r.changed_signing_public_key,
          encryption_public_key: r.changed_encryption_public_key,
          seen_at: r.changed_seen_at ?? '',
        },
      }
    : {}),
});

/**
 * User text → an FTS5 query of quoted terms (all must match), so no input is a syntax error.
 * Control characters separate terms: a NUL inside a quoted term ends SQLite's string.
 */
export function ftsQuery(text: string): string {
  const terms = text
    .split(/[\s\p{Cc}]+/u)
    .map((t) => t.replace(/"/g, '').trim())
    .filter((t) => t.length > 0);
  return terms.map((t) => `"${t}"`).join(' ');
}

/** How many envelopes of one sender are held at most, unopened, for a changed key (the newest). */
export const HELD_KEPT_PER_SENDER = 1000;

/** How many refused envelopes the archive remembers (the newest). */
export const REJECTED_KEPT = 1000;

export class Archive {
  readonly db: Db;

  constructor(db: Db) {
    this.db = db;
  }

  static open(path: string): Archive {
    // created owner-only before SQLite opens it; SQLite gives -wal and -shm the same mode
    ensurePrivateFile(path);
    restrictExisting(`${path}-wal`, `${path}-shm`);
    const db = new Database(path);
    // until the switch to WAL, nothing has written to the file
    let unchanged = true;
    try {
      // before anything writes to it: a file this svc cannot read right is left as it is
      const version = db.pragma('user_version', { simple: true }) as number;
      const known = MIGRATIONS.length;
      if (version > known) {
        throw new ArchiveUnusableError(
          path,
          `was written by a newer svc (schema ${version}; this one knows ${known})`,
          `upgrade svc to a version that reads schema ${version}, then ${RESTART_DAEMON}`,
        );
      }
      unchanged = false;
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.pragma('foreign_keys = ON');
      db.pragma('busy_timeout = 5000');
      migrate(db);
    } catch (err) {
      db.close();
      const code = (err as { code?: unknown }).code;
      if (code !== 'SQLITE_NOTADB' && code !== 'SQLITE_CORRUPT') throw err;
      throw new ArchiveUnusableError(
        path,
        `is damaged (${(err as Error).message})`,
        `restore it from a backup, or move it away (a new, empty archive is made in its place); ${LOOKED_AT_AGAIN}`,
        err,
        unchanged,
      );
    }
    return new Archive(db);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** Inserts once; false when the message id is already archived. */
  insertMessage(m: NewMessage): boolean {
    const r = this.db
      .prepare(
        `INSERT INTO messages (message_id, conversation_id, conversation_type, direction, sender, recipient,
           content_type, content, sent_at, received_at, acked_at, envelope, send_state, muted, conv_seq, seq_note,
           delivered_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
           -- a receipt can come before its message is archived (another client of the agent)
           CASE WHEN ? = 'outbound' THEN (SELECT at FROM receipts WHERE message_id = ?) END)
         ON CONFLICT (message_id) DO NOTHING`,
      )
      .run(
        m.message_id,
        m.conversation_id,
        m.conversation_type,
        m.direction,
        m.from,
        m.to,
        m.content_type,
        m.content,
        m.sent_at,
        m.received_at,
        m.acked_at,
        m.envelope ?? null,
        m.direction === 'outbound' ? (m.send_state ?? 'sent') : null,
        m.muted === true ? 1 : 0,
        m.conv_seq ?? null,
        m.seq_note ? JSON.stringify(m.seq_note) : null,
        m.direction,
        m.message_id,
      );
    return r.changes === 1;
  }

  hasMessage(messageId: string): boolean {
    return this.db.prepare('SELECT 1 FROM messages WHERE message_id = ?').get(messageId) !== undefined;
  }

  getMessage(messageId: string): ArchivedMessage | undefined {
    const r = this.db.prepare('SELECT * FROM messages WHERE message_id = ?').get(messageId) as MessageRow | undefined;
    return r && toMessage(r);
  }

  /** Unacknowledged inbound messages, oldest first. */
  inbox(limit = 500): ArchivedMessage[] {
    const rows = this.db
      .prepare(`SELECT * FROM messages WHERE direction = 'inbound' AND acked_at IS NULL ORDER BY sent_at, seq LIMIT ?`)
      .all(limit) as MessageRow[];
    return rows.map(toMessage);
  }

  /** The conversation id for `ref`: a known conversation id, else the direct conversation with that peer. */
  resolveConversation(ref: string): string | undefined {
    const direct = this.db.prepare('SELECT conversation_id FROM conversations WHERE conversation_id = ?').get(ref) as
      | { conversation_id: string }
      | undefined;
    if (direct) return direct.conversation_id;
    const byPeer = this.db
      .prepare(
        `SELECT conversation_id FROM conversations WHERE peer = ? AND conversation_type = 'direct'
         ORDER BY last_message_at DESC LIMIT 1`,
      )
      .get(ref) as { conversation_id: string } | undefined;
    return byPeer?.conversation_id;
  }

  /**
   * Messages of a conversation in time order; `last` keeps the N most recent; `before` (a
   * message id) keeps those that come before that message in this order.
   */
  conversation(
    conversationId: string,
    opts: { last?: number; since?: string; before?: string } = {},
  ): ArchivedMessage[] {
    const since = opts.since ?? '';
    const mark =
      opts.before === undefined
        ? undefined
        : (this.db.prepare('SELECT sent_at, seq FROM messages WHERE message_id = ?').get(opts.before) as
            | { sent_at: string; seq: number }
            | undefined);
    // past every message when there is no mark: (sent_at, seq) < ('~', 0) holds for each
    const [at, seq] = mark ? [mark.sent_at, mark.seq] : ['~', 0];
    const where = 'conversation_id = ? AND sent_at >= ? AND (sent_at < ? OR (sent_at = ? AND seq < ?))';
    const rows = (
      opts.last !== undefined
        ? this.db
            .prepare(
              `SELECT * FROM (SELECT * FROM messages WHERE ${where}
                 ORDER BY sent_at DESC, seq DESC LIMIT ?) ORDER BY sent_at, seq`,
            )
            .all(conversationId, since, at, at, seq, opts.last)
        : this.db
            .prepare(`SELECT * FROM messages WHERE ${where} ORDER BY sent_at, seq`)
            .all(conversationId, since, at, at, seq)
    ) as MessageRow[];
    return rows.map(toMessage);
  }

  /** Inbound messages archived after local sequence `afterSeq`, with the highest sequence seen. */
  inboundAfter(afterSeq: number, limit = 500): { messages: ArchivedMessage[]; lastSeq: number } {
    const rows = this.db
      .prepare(`SELECT * FROM messages WHERE direction = 'inbound' AND seq > ? ORDER BY seq LIMIT ?`)
      .all(afterSeq, limit) as MessageRow[];
    return {
      messages: rows.map(toMessage),
      lastSeq: rows.length ? (rows[rows.length - 1] as MessageRow).seq : afterSeq,
    };
  }

  /** Marks a message acknowledged locally; returns the ack time, or undefined if unknown. */
  ack(messageId: string, at: string): string | undefined {
    // a received message only: the sender's own copy has nothing to acknowledge
    this.db
      .prepare("UPDATE messages SET acked_at = ? WHERE message_id = ? AND direction = 'inbound' AND acked_at IS NULL")
      .run(at, messageId);
    const r = this.db
      .prepare("SELECT acked_at FROM messages WHERE message_id = ? AND direction = 'inbound'")
      .get(messageId) as { acked_at: string | null } | undefined;
    return r?.acked_at ?? undefined;
  }

  /** Whether this agent sent the message (its own copy is archived). */
  sent(messageId: string): boolean {
    return (
      this.db.prepare("SELECT 1 FROM messages WHERE message_id = ? AND direction = 'outbound'").get(messageId) !==
      undefined
    );
  }

  /** Full-text search over what people wrote: roster changes (control messages) are not searched, as in searchMessages. */
  search(text: string, limit = 20): ArchivedMessage[] {
    const q = ftsQuery(text);
    if (q === '') return [];
    const rows = this.db
      .prepare(
        `SELECT m.* FROM messages_fts f JOIN messages m ON m.seq = f.rowid
         WHERE messages_fts MATCH ? AND m.content_type <> 'control' ORDER BY bm25(messages_fts), m.sent_at DESC LIMIT ?`,
      )
      .all(q, limit) as MessageRow[];
    return rows.map(toMessage);
  }

  /** The cursor, 0 when none is kept (or what is kept is no count: text, a fraction, a negative number). */
  getCursor(name: string): number {
    const r = this.db.prepare('SELECT value FROM sync_cursors WHERE name = ?').get(name) as
      | { value: unknown }
      | undefined;
    const value = r?.value;
    return Number.isSafeInteger(value) && (value as number) >= 0 ? (value as number) : 0;
  }

  setCursor(name: string, value: number): void {
    this.db
      .prepare(
        `INSERT INTO sync_cursors (name, value, updated_at) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      )
      .run(name, value, new Date().toISOString());
  }

  getPeer(agentNumber: string): PeerPin | undefined {
    const r = this.db.prepare('SELECT * FROM peer_keys WHERE agent_number = ?').get(agentNumber) as PeerRow | undefined;
    return r && toPeer(r);
  }

  /** The pin of the agent with this id under another number than `agentNumber`, if any. */
  peerWithIdElsewhere(agentId: string, agentNumber: string): PeerPin | undefined {
    const r = this.db
      .prepare('SELECT * FROM peer_keys WHERE agent_id = ? AND agent_number <> ? LIMIT 1')
      .get(agentId, agentNumber) as PeerRow | undefined;
    return r && toPeer(r);
  }

  listPeers(): PeerPin[] {
    return (this.db.prepare('SELECT * FROM peer_keys ORDER BY agent_number').all() as PeerRow[]).map(toPeer);
  }

  /** Pins a peer on first use, or updates the keys of an existing pin (same identity). */
  pinPeer(p: {
    agent_number: string;
    agent_id: string | null;
    signing_public_key: string;
    encryption_public_key: string;
    key_version: number | null;
  }): void {
    this.db
      .prepare(
        `INSERT INTO peer_keys (agent_number, agent_id, signing_public_key, encryption_public_key, key_version, pinned_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (agent_number) DO UPDATE SET agent_id = excluded.agent_id,
           signing_public_key = excluded.signing_public_key, encryption_public_key = excluded.encryption_public_key,
           key_version = excluded.key_version`,
      )
      .run(
        p.agent_number,
        p.agent_id,
        p.signing_public_key,
        p.encryption_public_key,
        p.key_version,
        new Date().toISOString(),
      );
  }

  markPeerChanged(agentNumber: string, signing: string, encryption: string): void {
    this.db
      .prepare(
        `UPDATE peer_keys SET changed_signing_public_key = ?, changed_encryption_public_key = ?, changed_seen_at = ?
         WHERE agent_number = ?`,
      )
      .run(signing, encryption, new Date().toISOString(), agentNumber);
  }

  /** Forgets a changed key the directory no longer serves; the pin stays as it is. */
  clearPeerChange(agentNumber: string): void {
    this.db
      .prepare(
        `UPDATE peer_keys SET changed_signing_public_key = NULL, changed_encryption_public_key = NULL,
           changed_seen_at = NULL WHERE agent_number = ?`,
      )
      .run(agentNumber);
  }

  /**
   * Replaces the pin with the changed key, if that is still the key recorded as changed, and
   * the encryption key of a record it signs (the caller checked it); returns the pin.
   */
  acceptPeerChange(
    agentNumber: string,
    record: { signing_public_key: string; encryption_public_key: string; version: number },
  ): PeerPin | undefined {
    this.db
      .prepare(
        `UPDATE peer_keys SET signing_public_key = changed_signing_public_key,
           encryption_public_key = ?, key_version = ?, pinned_at = ?,
           changed_signing_public_key = NULL, changed_encryption_public_key = NULL, changed_seen_at = NULL
         WHERE agent_number = ? AND changed_signing_public_key = ?`,
      )
      .run(
        record.encryption_public_key,
        record.version,
        new Date().toISOString(),
        agentNumber,
        record.signing_public_key,
      );
    return this.getPeer(agentNumber);
  }

  /**
   * Keeps an envelope signed by a sender's changed key until the owner accepts the key.
   * Only the newest HELD_KEPT_PER_SENDER of a sender are kept (they are unverified: the
   * relay can make a key change and sign envelopes with a key of its own); returns how many
   * older ones this dropped.
   */
  hold(messageId: string, sender: string, envelope: string): number {
    return this.db.transaction(() => {
      this.db
        .prepare(
          'INSERT INTO held_envelopes (message_id, sender, envelope, held_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
        )
        .run(messageId, sender, envelope, new Date().toISOString());
      return this.db
        .prepare(
          `DELETE FROM held_envelopes WHERE sender = ? AND rowid NOT IN (
             SELECT rowid FROM held_envelopes WHERE sender = ? ORDER BY rowid DESC LIMIT ?)`,
        )
        .run(sender, sender, HELD_KEPT_PER_SENDER).changes;
    })();
  }

  held(sender: string): Array<{ message_id: string; envelope: string }> {
    return this.db
      .prepare('SELECT message_id, envelope FROM held_envelopes WHERE sender = ? ORDER BY held_at, rowid')
      .all(sender) as Array<{ message_id: string; envelope: string }>;
  }

  releaseHeld(messageId: string): void {
    this.db.prepare('DELETE FROM held_envelopes WHERE message_id = ?').run(messageId);
  }

  /**
   * Notes a refused envelope (for the owner's eyes and support). The relay says what the
   * message id and sender are, so this keeps the newest REJECTED_KEPT only: a relay that
   * streams junk cannot fill the disk through it.
   */
  recordRejected(messageId: string, sender: string, reason: string): void {
    this.db.transaction(() => {
      this.db
        .prepare('INSERT INTO rejected_envelopes (message_id, sender, reason, rejected_at) VALUES (?, ?, ?, ?)')
        .run(messageId, sender, reason, new Date().toISOString());
      this.db
        .prepare('DELETE FROM rejected_envelopes WHERE rowid <= (SELECT max(rowid) FROM rejected_envelopes) - ?')
        .run(REJECTED_KEPT);
    })();
  }

  /**
   * Records the recipient's acknowledgement of a message this agent sent, and marks the
   * message delivered. True when it was new.
   */
  recordReceipt(messageId: string, recipient: string, status: string, at: string): boolean {
    return this.db.transaction(() => {
      const added = this.db
        .prepare('INSERT INTO receipts (message_id, recipient, status, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING')
        .run(messageId, recipient, status, at).changes;
      this.db
        .prepare(
          `UPDATE messages SET delivered_at = ? WHERE message_id = ? AND direction = 'outbound' AND delivered_at IS NULL`,
        )
        .run(at, messageId);
      return added === 1;
    })();
  }

  /**
   * A page of the relay's receipts in one transaction, with the cursor that follows it:
   * the receipts that were new, and how many name a message not archived here.
   */
  recordReceiptPage<R extends { message_id: string; recipient: string; acked_at: string }>(
    receipts: readonly R[],
    cursor: { name: string; value: number },
  ): { added: R[]; stray: number } {
    return this.db.transaction(() => {
      const added: R[] = [];
      let stray = 0;
      for (const r of receipts) {
        if (!this.hasMessage(r.message_id)) stray++;
        if (this.recordReceipt(r.message_id, r.recipient, 'acked', r.acked_at)) added.push(r);
      }
      this.setCursor(cursor.name, cursor.value);
      return { added, stray };
    })();
  }

  /**
   * Keeps the newest `keep` receipts of messages not archived here (sent by another client
   * of the agent, or yet to be archived: insertMessage picks them up) and drops the rest:
   * the relay names those ids, and a relay could otherwise fill the disk with receipts.
   */
  pruneStrayReceipts(keep: number): number {
    return this.db
      .prepare(
        `DELETE FROM receipts WHERE rowid IN (
           SELECT r.rowid FROM receipts r WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.message_id = r.message_id)
           ORDER BY r.rowid DESC LIMIT -1 OFFSET ?)`,
      )
      .run(keep).changes;
  }

  /** Queued outbound messages, oldest first: the outbox. */
  outbox(limit = 100): OutboxEntry[] {
    return this.db
      .prepare(
        `SELECT message_id, recipient, envelope FROM messages WHERE send_state = 'queued' AND envelope IS NOT NULL
         ORDER BY seq LIMIT ?`,
      )
      .all(limit) as OutboxEntry[];
  }

  /** Takes back an outbound message kept as queued while it was first posted: the relay refused it at once. */
  dropQueued(messageId: string): void {
    this.db.transaction(() => {
      const gone = this.db
        .prepare(
          `DELETE FROM messages WHERE message_id = ? AND direction = 'outbound' AND send_state = 'queued'
           RETURNING conversation_id`,
        )
        .get(messageId) as { conversation_id: string } | undefined;
      if (!gone) return;
      // the conversation's summary counted it when it was inserted: count again what is left
      const left = this.db
        .prepare('SELECT count(*) AS n, max(sent_at) AS at FROM messages WHERE conversation_id = ?')
        .get(gone.conversation_id) as { n: number; at: string | null };
      if (left.n === 0)
        this.db.prepare('DELETE FROM conversations WHERE conversation_id = ?').run(gone.conversation_id);
      else
        this.db
          .prepare('UPDATE conversations SET message_count = ?, last_message_at = ? WHERE conversation_id = ?')
          .run(left.n, left.at, gone.conversation_id);
    })();
  }

  /** Moves a queued message on: the relay accepted it (sent) or refused it for good (failed). */
  settleQueued(messageId: string, state: 'sent' | 'failed', error?: string): boolean {
    return (
      this.db
        .prepare(`UPDATE messages SET send_state = ?, send_error = ? WHERE message_id = ? AND send_state = 'queued'`)
        .run(state, error ?? null, messageId).changes === 1
    );
  }

  /** Whether a message sent since `since` (ISO time) still waits for its receipt. */
  awaitingReceipts(since: string): boolean {
    return (
      this.db
        .prepare(
          `SELECT 1 FROM messages WHERE direction = 'outbound' AND delivered_at IS NULL AND sent_at >= ? LIMIT 1`,
        )
        .get(since) !== undefined
    );
  }

  // --- groups and broadcasts

  /** The control messages of a conversation (either direction): what its roster is derived from. */
  controls(conversationId: string): ControlMessage[] {
    const rows = this.db
      .prepare(
        `SELECT message_id, sender, content FROM messages WHERE conversation_id = ? AND content_type = 'control'
         ORDER BY message_id`,
      )
      .all(conversationId) as Array<{ message_id: string; sender: string; content: string }>;
    return rows.map((r) => ({
      message_id: r.message_id,
      sender: r.sender,
      body: JSON.parse(r.content) as ControlBody,
    }));
  }

  /** This agent's next number in a conversation (1, 2, …); taken once, never reused. */
  nextConvSeq(conversationId: string): number {
    const r = this.db
      .prepare(
        `INSERT INTO conversation_counters (conversation_id, next_seq) VALUES (?, 2)
         ON CONFLICT (conversation_id) DO UPDATE SET next_seq = next_seq + 1 RETURNING next_seq`,
      )
      .get(conversationId) as { next_seq: number };
    return r.next_seq - 1;
  }

  /**
   * Gives back a number whose message never left (the relay refused it): receivers then
   * see no gap for it. Only the latest number, so one taken meanwhile is never reused.
   */
  releaseConvSeq(conversationId: string, seq: number): void {
    this.db
      .prepare('UPDATE conversation_counters SET next_seq = ? WHERE conversation_id = ? AND next_seq = ?')
      .run(seq, conversationId, seq + 1);
  }

  /** The numbers held from `sender` in a conversation. */
  heldSeqs(conversationId: string, sender: string): Set<number> {
    const rows = this.db
      .prepare('SELECT conv_seq FROM messages WHERE conversation_id = ? AND sender = ? AND conv_seq IS NOT NULL')
      .all(conversationId, sender) as Array<{ conv_seq: number }>;
    return new Set(rows.map((r) => r.conv_seq));
  }

  /** The highest number held from `sender` in a conversation, and whether `seq` is held (one arrival's check). */
  seqState(conversationId: string, sender: string, seq: number): { highest: number | undefined; held: boolean } {
    const r = this.db
      .prepare(
        `SELECT MAX(conv_seq) AS highest, MAX(conv_seq = ?) AS held FROM messages
         WHERE conversation_id = ? AND sender = ? AND conv_seq IS NOT NULL`,
      )
      .get(seq, conversationId, sender) as { highest: number | null; held: number | null };
    return { highest: r.highest ?? undefined, held: r.held === 1 };
  }

  /** Counts one more arrival of a held group message; its conversation, sender and number. */
  noteDuplicate(messageId: string): { conversation_id: string; sender: string; seq: number } | undefined {
    const r = this.db
      .prepare(
        'SELECT conversation_id, sender, conv_seq, seq_note FROM messages WHERE message_id = ? AND conv_seq IS NOT NULL',
      )
      .get(messageId) as
      | { conversation_id: string; sender: string; conv_seq: number; seq_note: string | null }
      | undefined;
    if (!r) return undefined;
    const note = (r.seq_note ? JSON.parse(r.seq_note) : {}) as SequenceNote;
    note.duplicates = (note.duplicates ?? 0) + 1;
    this.db.prepare('UPDATE messages SET seq_note = ? WHERE message_id = ?').run(JSON.stringify(note), messageId);
    return { conversation_id: r.conversation_id, sender: r.sender, seq: r.conv_seq };
  }

  /** Conversations, most recent first. */

  /**
   * A page of a conversation in sort-key order (sent time, then message id). Without
   * `since`, the `limit` most recent; with it, the `limit` that follow that sort key.
   */
  conversationPage(conversationId: string, limit: number, since?: string): ArchivedMessage[] {
    const rows = (
      since === undefined
        ? this.db
            .prepare(
              `SELECT * FROM (SELECT * FROM messages WHERE conversation_id = ?
                 ORDER BY sent_at DESC, message_id DESC LIMIT ?) ORDER BY sent_at, message_id`,
            )
            .all(conversationId, limit)
        : this.db
            .prepare(
              `SELECT * FROM messages WHERE conversation_id = ? AND (sent_at || '~' || message_id) > ?
               ORDER BY sent_at, message_id LIMIT ?`,
            )
            .all(conversationId, since, limit)
    ) as MessageRow[];
    return rows.map(toMessage);
  }

  /** Messages (never control) by participant, time window and content type. */
  searchMessages(f: {
    participant?: string;
    after?: string;
    before?: string;
    type?: string;
    sort: 'recent' | 'oldest';
    limit: number;
    offset: number;
  }): ArchivedMessage[] {
    const where = ["content_type <> 'control'"];
    const args: Array<string | number> = [];
    if (f.participant !== undefined) {
      where.push('(sender = ? OR recipient = ?)');
      args.push(f.participant, f.participant);
    }
    if (f.after !== undefined) {
      where.push('sent_at > ?');
      args.push(f.after);
    }
    if (f.before !== undefined) {
      where.push('sent_at < ?');
      args.push(f.before);
    }
    if (f.type !== undefined) {
      where.push('content_type = ?');
      args.push(f.type);
    }
    const order = f.sort === 'recent' ? 'DESC' : 'ASC';
    const rows = this.db
      .prepare(
        `SELECT * FROM messages WHERE ${where.join(' AND ')}
         ORDER BY sent_at ${order}, message_id ${order} LIMIT ? OFFSET ?`,
      )
      .all(...args, f.limit, f.offset) as MessageRow[];
    return rows.map(toMessage);
  }
}
