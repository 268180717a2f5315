/**
 * What a person reads of a message and of a conversation in the CLI's tables, the TUI and
 * MCP's resource names (scripts get the content itself in --json). The dashboard shows the
 * same in its own markup (control-text.ts).
 */
import type { ArchivedMessage, ConversationSummary } from './api.js';
import { attachmentText, parseDescriptor } from './attachment.js';
import { controlText } from './control-text.js';

/** The text, an attachment described (`[file] report.pdf (…)`), or a roster change as a sentence. */
export function messageText(m: Pick<ArchivedMessage, 'content_type' | 'content' | 'from'>): string {
  if (m.content_type === 'media') {
    const d = parseDescriptor(m.content);
    return d ? attachmentText(d) : m.content;
  }
  return controlText(m) ?? m.content;
}

/**
 * Whom a message went to, as a person reads it: its recipient, or a group's or broadcast's
 * conversation (as the sender's copy says; a reply goes to all of it, not to this agent alone).
 */
export function addressee(m: Pick<ArchivedMessage, 'conversation_type' | 'conversation_id' | 'to'>): string {
  return m.conversation_type === 'direct' ? m.to : m.conversation_id;
}

/**
 * How a conversation is named: a direct one by its peer, a group or broadcast by its name
 * (from its roster), else by its id.
 */
export function conversationTitle(
  c: Pick<ConversationSummary, 'conversation_id' | 'conversation_type' | 'name'> & { peer?: string | null },
): string {
  if (c.conversation_type === 'direct') return c.peer ?? c.conversation_id;
  return c.name ?? c.conversation_id;
}

/** A conversation as a phrase: `conversation with alice`, `group team`, `broadcast news`. */
export function conversationLabel(c: Parameters<typeof conversationTitle>[0]): string {
  const title = conversationTitle(c);
  return c.conversation_type === 'direct' ? `conversation with ${title}` : `${c.conversation_type} ${title}`;
}
