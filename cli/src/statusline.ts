/**
 * `svc statusline`: the agent, its unread count and relay state in one short line. A
 * coding assistant runs cli/bin/svc-statusline instead (`svc claude install-statusline`),
 * which reads the line the daemon keeps in $SVC_HOME/run/statusline without starting Node;
 * this command reads that file too, and asks the socket (short deadline) when the file is
 * missing. Loaded by bin/svc.ts before the command tree; a daemon that is down or slow is
 * a line saying so, never a failure of the host.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALL_AGENTS_KEY, DaemonClient, defaultHome, livePid, statusText } from '@svc/daemon/client';

export { statusText };

/** The whole status line must not keep the host waiting longer than this. */
export const STATUSLINE_TIMEOUT_MS = 300;

/** The daemon's rendered row for `wanted` (or all agents); undefined when there is no live one. */
export function statusFromFile(home: string, wanted?: string): string | undefined {
  try {
    if (livePid(readFileSync(join(home, 'run', 'daemon.pid'), 'utf8')) === undefined) return undefined;
    const key = wanted ?? ALL_AGENTS_KEY;
    for (const row of readFileSync(join(home, 'run', 'statusline'), 'utf8').split('\n')) {
      const tab = row.indexOf('\t');
      if (tab > 0 && row.slice(0, tab) === key) return row.slice(tab + 1);
    }
    return `svc: no agent ${key}`;
  } catch {
    return undefined;
  }
}

/** Prints the line; always exits 0. */
export async function statusLine(env: NodeJS.ProcessEnv, out: { write(s: string): unknown }): Promise<number> {
  const home = defaultHome(env);
  const wanted = env.SVC_AGENT?.trim() || undefined;
  let line = statusFromFile(home, wanted);
  if (line === undefined) {
    const client = new DaemonClient({ home, timeoutMs: STATUSLINE_TIMEOUT_MS });
    try {
      line = statusText(await client.summary(), wanted);
    } catch (err) {
      const code = (err as { code?: string }).code;
      line = code === 'daemon_unavailable' ? 'svc: daemon down (svc start)' : `svc: ${code ?? 'unavailable'}`;
    }
  }
  out.write(`${line}\n`);
  return 0;
}
