/** Human output (aligned tables, key/value blocks) and JSON output with stable snake_case fields. */
import { printable } from '@svc/shared';

export interface Writer {
  write(text: string): void;
}

export type Cell = string | number | boolean | null | undefined;

/** A warning on stderr: one line whatever the text holds (a file's content, a peer's words). */
export function warn(stderr: Writer, text: string): void {
  stderr.write(`svc: warning: ${printable(text)}\n`);
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
