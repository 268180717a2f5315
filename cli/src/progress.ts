/**
 * A progress bar on a terminal for attachment transfers. The daemon moves the bytes and
 * reports them on its event stream (`transfer`); this draws them on stderr while a
 * command waits, and draws nothing when stderr is not a terminal or output is JSON.
 */
import { printable } from '@svc/shared';
import type { Run } from './app.js';
import { eventsUntil } from './daemon-link.js';

const MIB = 1024 * 1024;

export function progressLine(
  name: string,
  direction: 'upload' | 'download',
  done: number,
  total: number,
  width = 30,
): string {
  const share = total === 0 ? 1 : Math.min(1, done / total);
  const filled = Math.round(share * width);
  const size = (n: number) => (n / MIB).toFixed(1);
  return `${direction === 'upload' ? '↑' : '↓'} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(share * 100)).padStart(3)}% ${size(done)}/${size(total)} MiB ${printable(name)}`;
}

/** Runs `fn` while drawing the agent's transfers on a terminal's stderr. */
export async function withProgress<T>(run: Run, agent: string, fn: () => Promise<T>): Promise<T> {
  const stderr = run.app.io.stderr as { isTTY?: boolean; write(s: string): void };
  if (!stderr.isTTY || run.json) return fn();
  const link = await run.link();
  const stop = new AbortController();
  let drawn = false;
  const drawing = (async () => {
    try {
      for await (const e of eventsUntil(link, agent, stop.signal)) {
        if (e.type !== 'transfer') continue;
        stderr.write(`\r${progressLine(e.name, e.direction, e.done, e.total)}`);
        drawn = true;
      }
    } catch {
      // the bar is a courtesy: a stream that ends or fails takes nothing with it
    }
  })();
  try {
    return await fn();
  } finally {
    stop.abort();
    await drawing;
    if (drawn) stderr.write('\n');
  }
}
