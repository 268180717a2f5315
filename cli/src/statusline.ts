/**
 * The status line a coding assistant shows (`svc statusline`, installed by
 * `svc claude install-statusline`): the agent, its unread count and relay state in one
 * short line. Loaded by bin/svc.ts before the command tree, so it starts with nothing
 * but the daemon client; one socket call with a short deadline; a daemon that is down or
 * slow is a line saying so, never a failure of the host.
 */
import { DaemonClient, type DaemonSummary } from '@svc/daemon/client';

/** The whole status line must not keep the host waiting longer than this. */
export const STATUSLINE_TIMEOUT_MS = 300;

const SESSION_MARK: Record<string, string> = { connected: '●', connecting: '◌', offline: '○' };

export function statusText(summary: DaemonSummary, wanted?: string): string {
  const agents = wanted ? summary.agents.filter((a) => a.name === wanted || a.agent_number === wanted) : summary.agents;
  if (agents.length === 0) return wanted ? `svc: no agent ${wanted}` : 'svc: no agent';
  return `svc ${agents
    .map(
      (a) => `${a.name} ${SESSION_MARK[a.session] ?? '?'} ${a.session}${a.unread > 0 ? ` · ${a.unread} unread` : ''}`,
    )
    .join(' | ')}`;
}

/** Prints the line; always exits 0. */
export async function statusLine(env: NodeJS.ProcessEnv, out: { write(s: string): unknown }): Promise<number> {
  const client = new DaemonClient({
    ...(env.SVC_HOME ? { home: env.SVC_HOME } : {}),
    timeoutMs: STATUSLINE_TIMEOUT_MS,
  });
  let line: string;
  try {
    line = statusText(await client.summary(), env.SVC_AGENT?.trim() || undefined);
  } catch (err) {
    const code = (err as { code?: string }).code;
    line = code === 'daemon_unavailable' ? 'svc: daemon down (svc start)' : `svc: ${code ?? 'unavailable'}`;
  }
  out.write(`${line}\n`);
  return 0;
}
