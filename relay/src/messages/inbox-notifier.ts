/** Wakes long-polls and event streams of a recipient when envelopes arrive for it. */
type Listener = () => void;

export class InboxNotifier {
  readonly #listeners = new Map<string, Set<Listener>>();

  notify(recipientRow: string): void {
    const set = this.#listeners.get(recipientRow);
    if (set) for (const l of [...set]) l();
  }

  subscribe(recipientRow: string, listener: Listener): () => void {
    let set = this.#listeners.get(recipientRow);
    if (!set) {
      set = new Set();
      this.#listeners.set(recipientRow, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#listeners.delete(recipientRow);
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
}
