/**
 * Refuses a message id already accepted from the same sender. Memory is bounded: each
 * sender keeps its most recent `maxPerSender` ids; when an id is evicted, the sender's
 * floor rises to that id's UUIDv7 timestamp and anything at or below the floor is refused
 * too (so an evicted id cannot be replayed; a genuinely new but much older message is
 * refused as well, which a time-ordered sender never produces). At most `maxSenders`
 * senders are tracked; the least recently seen is forgotten first.
 */
import { EnvelopeError } from './errors.js';
import { isMessageId, messageIdTimestamp } from './message-id.js';

export interface ReplayGuardOptions {
  /** Ids remembered per sender (default 4,096). */
  maxPerSender?: number;
  /** Senders remembered (default 10,000). */
  maxSenders?: number;
}

interface SenderState {
  ids: Set<string>;
  floorMs: number;
}

export class ReplayGuard {
  readonly #maxPerSender: number;
  readonly #maxSenders: number;
  readonly #senders = new Map<string, SenderState>();

  constructor(options: ReplayGuardOptions = {}) {
    this.#maxPerSender = options.maxPerSender ?? 4096;
    this.#maxSenders = options.maxSenders ?? 10_000;
    if (!(this.#maxPerSender >= 1 && this.#maxSenders >= 1)) throw new RangeError('ReplayGuard bounds must be >= 1');
  }

  /** True if `messageId` has been accepted from `sender` (or falls at or below its floor). */
  has(sender: string, messageId: string): boolean {
    const state = this.#senders.get(sender);
    if (!state) return false;
    return state.ids.has(messageId) || messageIdTimestamp(messageId) <= state.floorMs;
  }

  /** Records the id and returns true if it is new; returns false (records nothing) on a replay. */
  accept(sender: string, messageId: string): boolean {
    if (!isMessageId(messageId)) throw new EnvelopeError('envelope_malformed', 'message id is not a UUIDv7');
    let state = this.#senders.get(sender);
    if (state) {
      if (state.ids.has(messageId) || messageIdTimestamp(messageId) <= state.floorMs) return false;
      // Re-insert so the Map's order is least-recently-seen first.
      this.#senders.delete(sender);
    } else {
      state = { ids: new Set(), floorMs: -1 };
      if (this.#senders.size >= this.#maxSenders) {
        const oldest = this.#senders.keys().next().value;
        if (oldest !== undefined) this.#senders.delete(oldest);
      }
    }
    this.#senders.set(sender, state);
    state.ids.add(messageId);
    if (state.ids.size > this.#maxPerSender) {
      const evicted = state.ids.values().next().value as string;
      state.ids.delete(evicted);
      state.floorMs = Math.max(state.floorMs, messageIdTimestamp(evicted));
    }
    return true;
  }

  /** Like `accept`, but throws `EnvelopeError('envelope_replayed')` on a replay. */
  assertFresh(sender: string, messageId: string): void {
    if (!this.accept(sender, messageId)) throw new EnvelopeError('envelope_replayed');
  }

  get size(): number {
    return this.#senders.size;
  }
}
