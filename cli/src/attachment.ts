/**
 * The attachment a `media` message carries, as the CLI shows it: people read its name,
 * size and caption; scripts get the descriptor itself in --json.
 */
import { type ArchivedMessage, attachmentText, parseDescriptor } from '@svc/daemon/client';

/** What a person reads as a message's content: the text, or its attachment described. */
export function contentText(m: Pick<ArchivedMessage, 'content_type' | 'content'>): string {
  const d = m.content_type === 'media' ? parseDescriptor(m.content) : undefined;
  return d ? attachmentText(d) : m.content;
}
