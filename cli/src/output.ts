/** Human output (aligned tables, key/value blocks) and JSON output with stable snake_case fields. */

export interface Writer {
  write(text: string): void;
}

export type Cell = string | number | boolean | null | undefined;

/** C0 and C1 controls, and the marks that make text read in another order than stored. */
const UNPRINTABLE = /[\p{Cc}\p{Bidi_Control}]/gu;
const KEPT_IN_LINES = new Set(['\n', '\t']);

/**
 * `text` with each control character written as an escape (`\x1b`, `\u202e`): what a
 * peer or the relay wrote (a message, a display name) reaches the terminal as text, never as
 * a command to it (clear the screen, set the title, write the clipboard, hide a line).
 * `lines` keeps line breaks and tabs.
 */
export function printable(text: string, lines = false): string {
  return text.replace(UNPRINTABLE, (c) => {
    if (lines && KEPT_IN_LINES.has(c)) return c;
    const code = c.codePointAt(0) as number;
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

function cellText(value: Cell): string {
  if (value === null || value === undefined || value === '') return '-';
  return printable(String(value).replace(/\s*\n\s*/g, ' '));
}

/** An aligned table with an upper-case header; `empty` is printed instead when there are no rows. */
export function table(
  columns: ReadonlyArray<[header: string, key: string]>,
  rows: ReadonlyArray<object>,
  empty: string,
) {
  if (rows.length === 0) return `${empty}\n`;
  const cells = rows.map((row) => columns.map(([, key]) => cellText((row as Record<string, Cell>)[key])));
  const headers = columns.map(([header]) => header.toUpperCase());
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return `${[line(headers), ...cells.map(line)].join('\n')}\n`;
}

/** `key: value` lines, aligned; undefined values are left out. */
export function keyValues(entries: ReadonlyArray<[label: string, value: Cell | string[]]>): string {
  const shown = entries.filter(([, v]) => v !== undefined);
  const width = Math.max(0, ...shown.map(([k]) => k.length));
  return `${shown
    .map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${Array.isArray(v) ? cellText(v.join(', ')) : cellText(v)}`)
    .join('\n')}\n`;
}

export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** One JSON object per line (NDJSON / JSONL). */
export function jsonLine(value: unknown): string {
  return `${JSON.stringify(value)}\n`;
}
