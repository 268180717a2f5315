/**
 * Keeps $SVC_HOME/run/statusline current for `cli/bin/svc-statusline`, the shell script a
 * coding assistant runs on every prompt: a Node start alone takes longer than the status
 * line's 50 ms budget, so the daemon renders the line ahead and the script only reads it.
 * Rewritten (0600, temp file + rename, so a reader never sees half a file) when the text
 * changes after an event or a mutating API call; removed on a clean shutdown, so a file
 * left behind means a daemon that died, which the script checks with the pid file.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { AgentManager } from './agents/manager.js';
import { statusFileText } from './client/statusline.js';
import type { EventBus } from './events.js';
import { PRIVATE_FILE_MODE } from './private-file.js';

export interface StatusLineFile {
  /** renders the summary again and rewrites the file if its text changed */
  refresh(): void;
  /** stops following events and removes the file */
  remove(): void;
}

export function keepStatusLineFile(opts: {
  path: string;
  agents: AgentManager;
  events: EventBus;
  log: Logger;
}): StatusLineFile {
  let written: string | undefined;
  let stopped = false;
  const refresh = () => {
    if (stopped) return;
    try {
      const text = statusFileText(opts.agents.summary());
      if (text === written) return;
      const tmp = `${opts.path}.${process.pid}.tmp`;
      writeFileSync(tmp, text, { mode: PRIVATE_FILE_MODE });
      renameSync(tmp, opts.path);
      written = text;
    } catch (err) {
      // a stale status line is not worth failing an event or a request for
      opts.log.warn({ err: (err as Error).message }, 'status line file not written');
    }
  };
  // transfers report progress many times a second and change nothing the line shows
  const unsubscribe = opts.events.subscribe((e) => {
    if (e.type !== 'transfer') refresh();
  });
  return {
    refresh,
    remove() {
      stopped = true;
      unsubscribe();
      rmSync(opts.path, { force: true });
    },
  };
}
