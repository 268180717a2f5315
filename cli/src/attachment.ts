/**
 * A saved attachment as the CLI shows it. (A message's attachment in a table: the daemon
 * client's messageText; scripts get the descriptor itself in --json.)
 */
import type { SavedAttachment } from '@svc/daemon/client';
import { printable } from '@svc/shared';

/** `saved DIR/report.pdf (1204 bytes, application/pdf)`: the path and type are the peer's words, printed as text. */
export function savedText(f: Pick<SavedAttachment, 'already_saved' | 'path' | 'size' | 'media_type'>): string {
  return `${f.already_saved ? 'already saved' : 'saved'} ${printable(f.path)} (${f.size} bytes, ${printable(f.media_type)})\n`;
}
