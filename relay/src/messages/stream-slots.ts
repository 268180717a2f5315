/**
 * Open message event streams per agent on this relay instance. Each stream holds a page of
 * envelopes, a socket and a ledger reader while it lives, so one agent may not open them
 * without end (SVC_RELAY_STREAMS_PER_AGENT; 0 = no limit). Kept in memory: a stream lives
 * in one process, and a crashed process frees its slots with its connections.
 */
import { SvcError } from '@svc/shared';

export class StreamSlots {
  readonly #max: number;
  readonly #open = new Map<string, number>();

  constructor(max: number) {
    this.#max = max;
  }

  /** Streams `agent` holds open now. */
  count(agent: string): number {
    return this.#open.get(agent) ?? 0;
  }

  /**
   * Takes one of `agent`'s slots, or throws 429 too_many_streams. The returned function gives
   * it back; calling it again does nothing, so a slot is never freed twice.
   */
  take(agent: string): () => void {
    const open = this.count(agent);
    if (this.#max > 0 && open >= this.#max) {
      throw new SvcError('too_many_streams', undefined, { detail: `${open} message streams open` });
    }
    this.#open.set(agent, open + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = this.count(agent) - 1;
      if (left > 0) this.#open.set(agent, left);
      else this.#open.delete(agent);
    };
  }
}
