/**
 * Text a peer or the relay wrote, made safe to write to a terminal: each control character
 * (C0, C1) and each mark that makes text read in another order than stored (bidirectional
 * embeddings, overrides, isolates) written as an escape (`\x1b`, `\u202e`), and so is each
 * character that shows as nothing or moves to another line (a zero-width space, a word
 * joiner, a byte order mark, the line and paragraph separators): `bob\u200b` must not read
 * as `bob`. Joiners that shape text (U+200C, U+200D: emoji sequences, many scripts) stay. A message then
 * reaches the screen as text, never as a command to the terminal (clear the screen, set the
 * title, write the clipboard with OSC 52, hide a line). The CLI's human output and the
 * terminal UI use it; JSON output keeps the exact text.
 */
const UNPRINTABLE = /[\p{Cc}\p{Bidi_Control}\u200b\u2028\u2029\u2060-\u2064\ufeff]/gu;
const KEPT_IN_LINES = new Set(['\n', '\t']);

/** `text` with its control characters escaped; `lines` keeps line breaks and tabs. */
export function printable(text: string, lines = false): string {
  return text.replace(UNPRINTABLE, (c) => {
    if (lines && KEPT_IN_LINES.has(c)) return c;
    const code = c.codePointAt(0) as number;
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** `text` cut to at most `max` characters, an ellipsis marking the cut. */
export function truncated(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
