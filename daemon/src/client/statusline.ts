/**
 * The status line's text, shared by the daemon (which keeps it in $SVC_HOME/run/statusline
 * for the shell script a coding assistant runs) and `svc statusline` (which asks the socket).
 */
import type { DaemonSummary } from './api.js';

const SESSION_MARK: Record<string, string> = {
  connected: '●',
  connecting: '◌',
  offline: '○',
  refused: '✕',
  unusable: '✕',
};

/** One line: every agent, or the one named by `wanted` (its name or agent number). */
export function statusText(summary: DaemonSummary, wanted?: string): string {
  const agents = wanted ? summary.agents.filter((a) => a.name === wanted || a.agent_number === wanted) : summary.agents;
  if (agents.length === 0) return wanted ? `svc: no agent ${wanted}` : 'svc: no agent';
  return `svc ${agents
    .map(
      (a) => `${a.name} ${SESSION_MARK[a.session] ?? '?'} ${a.session}${a.unread > 0 ? ` · ${a.unread} unread` : ''}`,
    )
    .join(' | ')}`;
}

/** The key of the combined line in the status-line file. */
export const ALL_AGENTS_KEY = '*';

/**
 * The status-line file: `KEY<TAB>LINE` rows, the combined line first (key `*`), then one
 * row per agent under its name and one under its number, so a shell can pick the row for
 * SVC_AGENT with `read` alone. Names and numbers hold no tab or newline.
 */
export function statusFileText(summary: DaemonSummary): string {
  const rows = [`${ALL_AGENTS_KEY}\t${statusText(summary)}`];
  for (const a of summary.agents) {
    const line = statusText({ agents: [a] });
    rows.push(`${a.name}\t${line}`);
    if (a.agent_number !== undefined && a.agent_number !== a.name) rows.push(`${a.agent_number}\t${line}`);
  }
  return `${rows.join('\n')}\n`;
}
