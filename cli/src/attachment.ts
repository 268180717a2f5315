/**
 * The attachment a `media` message carries, as the CLI shows it: people read its name,
 * size and caption; scripts get the descriptor itself in --json.
 */
import { type ArchivedMessage, attachmentText, parseDescriptor, type SavedAttachment } from '@svc/daemon/client';
import { printable } from '@svc/shared';

/** What a person reads as a message's content: the text, or its attachment described. */
export function contentText(m: Pick<ArchivedMessage, 'content_type' | 'content'>): string {
  const d = m.content_type === 'media' ? parseDescriptor(m.content) : undefined;
  return d ? attachmentText(d) : m.content;
}

/** `saved DIR/report.pdf (1204 bytes, application/pdf)`: the path and type are the peer's words, printed as text. */
export function savedText(f: Pick<SavedAttachment, 'already_saved' | 'path' | 'size' | 'media_type'>): string {
  return `${f.already_saved ? 'already saved' : 'saved'} ${printable(f.path)} (${f.size} bytes, ${printable(f.media_type)})\n`;
}
