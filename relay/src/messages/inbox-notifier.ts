/** Wakes long-polls and event streams of a recipient when envelopes arrive for it. */
type Listener = () => void;

/**
 * How long a recipient still counts as followed after its reader last read or stopped
 * waiting: a long-poll client asks again at once, and an event stream busy with a backlog
 * reads page after page without waiting, so a reader is seldom waiting at the very moment
 * an envelope is recorded.
 */
export const FOLLOW_GRACE_MS = 30_000;

/** Old reads are swept once there are this many more than after the last sweep. */
const SWEEP_SLACK = 1024;

export class InboxNotifier {
  readonly #listeners = new Map<string, Set<Listener>>();
  /** when each recipient with no listener now was last read or waited for */
  readonly #lastRead = new Map<string, number>();
  #sweepAt = SWEEP_SLACK;
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  notify(recipientRow: string): void {
    const set = this.#listeners.get(recipientRow);
    if (set) for (const l of [...set]) l();
  }

  /** Whether a reader of this relay waits for the recipient's envelopes now, or read or waited within FOLLOW_GRACE_MS. */
  followed(recipientRow: string): boolean {
    if (this.#listeners.has(recipientRow)) return true;
    const at = this.#lastRead.get(recipientRow);
    if (at === undefined) return false;
    if (this.#now() - at <= FOLLOW_GRACE_MS) return true;
    this.#lastRead.delete(recipientRow);
    return false;
  }

  /** A reader of this relay read the recipient's inbox just now. */
  read(recipientRow: string): void {
    if (!this.#listeners.has(recipientRow)) this.#stamp(recipientRow);
  }

  subscribe(recipientRow: string, listener: Listener): () => void {
    let set = this.#listeners.get(recipientRow);
    if (!set) {
      set = new Set();
      this.#listeners.set(recipientRow, set);
      this.#lastRead.delete(recipientRow);
    }
    set.add(listener);
    return () => {
      if (!set.delete(listener) || set.size > 0) return;
      this.#listeners.delete(recipientRow);
      this.#stamp(recipientRow);
    };
  }

  /** Resolves on the next notification for the recipient, or after ms, or on abort. */
  wait(recipientRow: string, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        off();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      const off = this.subscribe(recipientRow, done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Recipients with no listener now whose last read is remembered (bounded by the sweep). */
  get remembered(): number {
    return this.#lastRead.size;
  }

  #stamp(recipientRow: string): void {
    this.#lastRead.delete(recipientRow); // re-inserted last: the map stays in order of reads
    this.#lastRead.set(recipientRow, this.#now());
    if (this.#lastRead.size >= this.#sweepAt) this.#sweep();
  }

  /** Drops the reads older than the grace period (recipients nobody reads any more). */
  #sweep(): void {
    const now = this.#now();
    for (const [row, at] of this.#lastRead) {
      if (now - at <= FOLLOW_GRACE_MS) break; // in order of reads: the rest are newer
      this.#lastRead.delete(row);
    }
    this.#sweepAt = this.#lastRead.size + SWEEP_SLACK;
  }
}
