/**
 * WAL checkpoints off the event loop. SQLite checkpoints automatically inside the commit that
 * takes the write-ahead log past 1,000 pages, on the connection that commits: the relay's
 * only one, on its event loop, where copying the pages back into the database file and the
 * fsyncs took more than half of a send's commit time (bench:relay). A worker thread with a
 * connection of its own checkpoints instead, passively (it never waits for, nor blocks,
 * readers and writers), every few hundred milliseconds.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The worker, as CommonJS source: the relay runs from a bundle, where a worker file has no place of its own. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    parentPort.postMessage(String((err && err.message) || err));
  }
}, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

/** How long stop() waits for the worker to close its connection before ending it. */
const STOP_WAIT_MS = 5_000;

export interface Checkpointer {
  /** Stops checkpointing and closes the worker's connection. */
  stop(): Promise<void>;
}

/**
 * Checkpoints `file` every `everyMs` from a worker thread. `onFailure` is called once if
 * the worker fails (the caller turns SQLite's own checkpoints back on).
 */
export function startCheckpointer(file: string, everyMs: number, onFailure: (reason: string) => void): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER, { eval: true, workerData: { driver, file, everyMs } });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  let stopping = false;
  let failed = false;
  const fail = (reason: string) => {
    if (failed || stopping) return;
    failed = true;
    void worker.terminate();
    onFailure(reason);
  };
  worker.on('message', (m: string) => fail(m));
  worker.on('error', (err) => fail(err.message));
  worker.on('exit', (code) => fail(`the checkpoint worker exited (${code})`));
  // a relay that closes without stopping it still exits
  worker.unref();
  return {
    async stop() {
      if (!stopping) {
        stopping = true;
        worker.postMessage('stop'); // a no-op if it has exited already
      }
      // Waited for, it holds the process open again: otherwise a process with nothing else
      // left (a command, a bench) would end here, mid-close, with code 13. A worker that
      // does not close within STOP_WAIT_MS (stuck in a checkpoint) is ended instead.
      worker.ref();
      const timer = setTimeout(() => void worker.terminate(), STOP_WAIT_MS);
      try {
        await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
