/** The conversation list: each conversation with its peer, size, unread count and last message. */
import type { Archive } from '../archive/archive.js';
import type { ConversationSummary } from '../client/api.js';

export function listConversations(archive: Archive, limit: number): ConversationSummary[] {
  const rows = archive.db
    .prepare(
      `SELECT c.conversation_id, c.conversation_type,
         -- the archive's row keeps a group's first sender there; only a direct conversation has a peer
         CASE WHEN c.conversation_type = 'direct' THEN c.peer END AS peer, c.last_message_at, c.message_count,
         (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id
            AND m.direction = 'inbound' AND m.acked_at IS NULL AND m.muted = 0) AS unread
       FROM conversations c ORDER BY c.last_message_at DESC, c.conversation_id LIMIT ?`,
    )
    .all(limit) as Array<Omit<ConversationSummary, 'last_message'>>;
  return rows.map((r) => {
    const [last] = archive.conversation(r.conversation_id, { last: 1 });
    return { ...r, ...(last ? { last_message: last } : {}) };
  });
}

/** Inbound messages not acknowledged and not muted. */
export function unreadCount(archive: Archive): number {
  return (
    archive.db
      .prepare("SELECT COUNT(*) AS n FROM messages WHERE direction = 'inbound' AND acked_at IS NULL AND muted = 0")
      .get() as { n: number }
  ).n;
}
