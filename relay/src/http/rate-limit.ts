/**
 * A small token-bucket limiter keyed by string (a source address, an agent). Each key's
 * bucket holds up to `capacity` tokens and refills at `perSecond`; a request takes `cost`
 * tokens or is refused with the seconds to wait. The clock is injected, so tests need no
 * sleeps. The number of keys is bounded: past `maxKeys` the least recently used go first
 * (a forgotten bucket comes back full, which only ever errs towards letting one through).
 */
import { SvcError } from '@svc/shared';

/** 429 rate_limited; the error handler turns `retryAfterSeconds` into a Retry-After header. */
export class RateLimitedError extends SvcError {
  readonly retryAfterSeconds: number;

  constructor(retryAfterSeconds: number, message?: string, detail?: string) {
    super('rate_limited', message, { detail });
    this.name = 'RateLimitedError';
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export interface TokenBucketOptions {
  capacity: number;
  perSecond: number;
  now: () => number;
  maxKeys?: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class TokenBuckets {
  readonly #buckets = new Map<string, Bucket>();
  readonly #opts: Required<TokenBucketOptions>;

  constructor(opts: TokenBucketOptions) {
    this.#opts = { maxKeys: 100_000, ...opts };
  }

  /** False when a capacity or rate of 0 turned the limit off. */
  get enabled(): boolean {
    return this.#opts.capacity > 0 && this.#opts.perSecond > 0;
  }

  /**
   * Takes `cost` tokens for `key`: 0 when allowed, else the whole seconds until it would be.
   * A cost larger than the bucket passes once the bucket is full (and leaves it in debt),
   * so a large request is slowed, never refused for ever.
   */
  take(key: string, cost = 1): number {
    if (!this.enabled) return 0;
    const { capacity, perSecond, now } = this.#opts;
    const t = now();
    const had = this.#buckets.get(key);
    const tokens = had ? Math.min(capacity, had.tokens + ((t - had.at) / 1000) * perSecond) : capacity;
    const need = Math.min(cost, capacity);
    if (tokens < need) {
      this.#touch(key, { tokens, at: t });
      return Math.max(1, Math.ceil((need - tokens) / perSecond));
    }
    this.#touch(key, { tokens: tokens - cost, at: t });
    return 0;
  }

  /** Gives tokens back (a request refused for another reason after it was counted). */
  refund(key: string, cost = 1): void {
    const b = this.#buckets.get(key);
    if (b) b.tokens = Math.min(this.#opts.capacity, b.tokens + cost);
  }

  get size(): number {
    return this.#buckets.size;
  }

  #touch(key: string, bucket: Bucket): void {
    this.#buckets.delete(key); // re-inserted last: the map's order is least recently used first
    this.#buckets.set(key, bucket);
    while (this.#buckets.size > this.#opts.maxKeys) {
      const oldest = this.#buckets.keys().next().value as string;
      this.#buckets.delete(oldest);
    }
  }
}
