/** What every view gets from the shell: the agent it shows, revision counters the live
 * stream bumps, navigation and a toast. */
import { createContext, useContext } from 'react';

export interface Revisions {
  /** a message, receipt or outbox change */
  messages: number;
  /** a peer key changed or was accepted */
  keys: number;
  /** a session connected or dropped */
  sessions: number;
}

export interface Shell {
  agent: string;
  rev: Revisions;
  go: (path: string) => void;
  toast: (text: string, tone?: 'ok' | 'bad') => void;
  /** after a change made here (ack, accept), reload what depends on it */
  bump: (what: keyof Revisions) => void;
}

export const ShellContext = createContext<Shell | null>(null);

export function useShell(): Shell {
  const s = useContext(ShellContext);
  if (!s) throw new Error('useShell outside the shell');
  return s;
}
