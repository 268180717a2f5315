/**
 * Open message event streams per agent on this relay instance. Each stream holds a page of
 * envelopes, a socket and a ledger reader while it lives, so one agent may not open them
 * without end (SVC_RELAY_STREAMS_PER_AGENT; 0 = no limit). Each slot also carries how to
 * make its stream ask the ledger at once whether the agent may still read: a revocation (on
 * this instance, or announced by another) ends the agent's streams now rather than at their
 * next periodic check. Kept in memory: a stream lives in one process, and a crashed process
 * frees its slots with its connections.
 */
import { SvcError } from '@svc/shared';

export class StreamSlots {
  readonly #max: number;
  readonly #refusal: (open: number) => Error;
  /** per agent row: each open stream's recheck */
  readonly #open = new Map<string, Set<() => void>>();

  /** `refusal`: the error past the limit (429 too_many_streams unless given). */
  constructor(
    max: number,
    refusal: (open: number) => Error = (open) =>
      new SvcError('too_many_streams', undefined, { detail: `${open} message streams open` }),
  ) {
    this.#max = max;
    this.#refusal = refusal;
  }

  /** Streams `agent` holds open now. */
  count(agent: string): number {
    return this.#open.get(agent)?.size ?? 0;
  }

  /**
   * Takes one of `agent`'s slots, or throws the refusal. `recheck` is called when
   * the agent may have been revoked. The returned function gives the slot back; calling it
   * again does nothing, so a slot is never freed twice.
   */
  take(agent: string, recheck: () => void = () => undefined): () => void {
    const open = this.count(agent);
    if (this.#max > 0 && open >= this.#max) throw this.#refusal(open);
    // a slot of its own even when the same function is passed twice
    const slot = () => recheck();
    const streams = this.#open.get(agent) ?? new Set();
    streams.add(slot);
    this.#open.set(agent, streams);
    return () => {
      if (!streams.delete(slot)) return;
      if (streams.size === 0 && this.#open.get(agent) === streams) this.#open.delete(agent);
    };
  }

  /** Makes every open stream of `agent` check the ledger now. */
  recheck(agent: string): void {
    for (const slot of this.#open.get(agent) ?? []) slot();
  }
}
