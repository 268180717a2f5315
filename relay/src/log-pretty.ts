/**
 * Readable log lines for a person at a terminal (`--log-format pretty`, the default on a
 * TTY): pino writes its JSON lines here, and each becomes
 * `12:04:05.123 INFO  relay:http request completed method=GET status=200`. Redaction has
 * already happened in pino, so nothing secret reaches this formatter.
 */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLORS: Record<string, string> = { WARN: '\x1b[33m', ERROR: '\x1b[31m', FATAL: '\x1b[31m', DEBUG: '\x1b[90m' };
const OMIT = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'subsystem', 'v']);

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

function time(ms: unknown): string {
  const d = new Date(typeof ms === 'number' ? ms : Date.now());
  return d.toISOString().slice(11, 23);
}

/** One pino JSON line as one readable line (plus an error's stack); other text as it is. */
export function prettyLine(line: string, color = false): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  if (rec === null || typeof rec !== 'object') return `${line}\n`;
  const level = LEVELS[rec.level as number] ?? String(rec.level);
  const paint = color && COLORS[level] ? (s: string) => `${COLORS[level]}${s}\x1b[0m` : (s: string) => s;
  const parts = [time(rec.time), paint(level.padEnd(5))];
  const msg = rec.msg === undefined ? undefined : String(rec.msg);
  // "relay:bus" before "bus: …" says it twice
  if (typeof rec.subsystem === 'string' && !msg?.startsWith(`${rec.subsystem.split(':').pop()}: `)) {
    parts.push(`${rec.subsystem}:`);
  }
  if (msg !== undefined) parts.push(msg);
  let stack = '';
  for (const [k, v] of Object.entries(rec)) {
    if (OMIT.has(k)) continue;
    if (k === 'err' && v && typeof v === 'object') {
      const e = v as { type?: string; message?: string; stack?: string };
      parts.push(`err=${value(`${e.type ?? 'Error'}: ${e.message ?? ''}`)}`);
      if (typeof e.stack === 'string') stack = `${e.stack.replace(/^/gm, '    ')}\n`;
      continue;
    }
    parts.push(`${k}=${value(v)}`);
  }
  return `${parts.join(' ')}\n${stack}`;
}

/** A pino destination that writes readable lines to `out`. */
export function prettyDestination(out: NodeJS.WritableStream & { isTTY?: boolean }): { write(chunk: string): boolean } {
  const color = out.isTTY === true && !process.env.NO_COLOR;
  let pending = '';
  return {
    write(chunk: string): boolean {
      pending += chunk;
      let nl = pending.indexOf('\n');
      let ok = true;
      while (nl >= 0) {
        ok = out.write(prettyLine(pending.slice(0, nl), color)) && ok;
        pending = pending.slice(nl + 1);
        nl = pending.indexOf('\n');
      }
      return ok;
    },
  };
}
