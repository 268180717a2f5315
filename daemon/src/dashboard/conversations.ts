/** The conversation list the dashboard shows: one row per conversation, newest first. */
import type { Archive } from '../archive/archive.js';
import type { ConversationSummary } from '../client/api.js';

interface Row {
  conversation_id: string;
  conversation_type: 'direct' | 'group' | 'broadcast';
  peer: string | null;
  last_message_at: string;
  message_count: number;
  unread: number;
  last_content: string | null;
  last_direction: 'inbound' | 'outbound' | null;
}

export function listConversations(archive: Archive, limit = 200): ConversationSummary[] {
  const rows = archive.db
    .prepare(
      `SELECT c.conversation_id, c.conversation_type, c.peer, c.last_message_at, c.message_count,
         (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.conversation_id
            AND m.direction = 'inbound' AND m.acked_at IS NULL) AS unread,
         (SELECT content FROM messages m WHERE m.conversation_id = c.conversation_id
            ORDER BY m.sent_at DESC, m.seq DESC LIMIT 1) AS last_content,
         (SELECT direction FROM messages m WHERE m.conversation_id = c.conversation_id
            ORDER BY m.sent_at DESC, m.seq DESC LIMIT 1) AS last_direction
       FROM conversations c ORDER BY c.last_message_at DESC LIMIT ?`,
    )
    .all(limit) as Row[];
  return rows.map((r) => ({
    conversation_id: r.conversation_id,
    conversation_type: r.conversation_type,
    peer: r.peer,
    last_message_at: r.last_message_at,
    message_count: r.message_count,
    unread: r.unread,
    // a preview, not the message: the page shows one line of it
    last_preview: r.last_content === null ? null : r.last_content.slice(0, 200),
    last_direction: r.last_direction,
  }));
}
