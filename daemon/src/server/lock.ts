/**
 * One daemon per SVC_HOME. The pid file (pid-file.ts) is created exclusively; when it
 * exists, the daemon it names must be alive AND answer on the socket for a refusal — a dead
 * or reused pid or a socket nobody answers is stale and is cleaned up (after a crash or kill -9).
 */
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { connect } from 'node:net';
import { livePid, parsePidFile, pidFileLine } from '../client/pid-file.js';
import { DaemonError } from '../errors.js';

export function socketAnswers(path: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    if (!existsSync(path)) {
      resolve(false);
      return;
    }
    const s = connect(path);
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

export interface InstanceLock {
  release(): void;
}

export async function acquireInstanceLock(lockFile: string, socket: string): Promise<InstanceLock> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(lockFile, 'wx', 0o600);
      writeSync(fd, pidFileLine());
      closeSync(fd);
      // we own the home now: a socket file left behind is stale
      if (existsSync(socket)) {
        if (await socketAnswers(socket)) {
          rmSync(lockFile, { force: true });
          throw new DaemonError('daemon_already_running', `A daemon already answers on ${socket}.`);
        }
        rmSync(socket, { force: true });
      }
      return {
        release() {
          try {
            if (parsePidFile(readFileSync(lockFile, 'utf8'))?.pid === process.pid) rmSync(lockFile, { force: true });
          } catch {
            // already gone
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = livePid(readFileSync(lockFile, 'utf8'));
    const owner = pid !== undefined;
    if (owner && (await socketAnswers(socket))) {
      throw new DaemonError('daemon_already_running', `A daemon (pid ${pid}) already runs for this SVC_HOME.`);
    }
    if (owner && pid !== process.pid && attempt === 0) {
      // alive but not answering yet: it may be starting; give it 3 s before calling it stale
      for (let i = 0; i < 30; i++) {
        await new Promise((r) => setTimeout(r, 100));
        if (await socketAnswers(socket)) {
          throw new DaemonError('daemon_already_running', `A daemon (pid ${pid}) already runs for this SVC_HOME.`);
        }
      }
    }
    rmSync(lockFile, { force: true });
  }
  throw new DaemonError('daemon_already_running', 'Could not take the daemon lock; another daemon is starting.');
}
