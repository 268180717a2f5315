/**
 * Who may use the dashboard. Each `svc dashboard` launch mints a one-time token that
 * travels in the link it opens; the page's first request trades it for a random session
 * id held in an HttpOnly, SameSite=Strict cookie, and a second secret, the page key, that
 * the page keeps in its origin's storage and sends with every API call. A cookie alone is
 * not enough: browsers send a loopback cookie to every port of 127.0.0.1, so any local
 * program the owner's browser visits gets it; the page key stays with the dashboard's own
 * origin (scheme, host and port). Both live only in this daemon's memory (a daemon restart
 * signs every browser out) and are stored hashed: a lookup by hash does not compare the
 * secret byte by byte.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const hash = (secret: string): string => createHash('sha256').update(secret).digest('hex');

export interface DashboardSessionsOptions {
  /** how long a launch token stays redeemable */
  tokenTtlMs?: number;
  /** how long a session lasts without use */
  sessionIdleMs?: number;
  now?: () => number;
}

export class DashboardSessions {
  readonly #tokens = new Map<string, number>(); // hash → expiry
  readonly #sessions = new Map<string, { last: number; key: Buffer }>(); // hash → last use, the page key's hash
  readonly #tokenTtlMs: number;
  readonly #sessionIdleMs: number;
  readonly #now: () => number;

  constructor(options: DashboardSessionsOptions = {}) {
    this.#tokenTtlMs = options.tokenTtlMs ?? 10 * 60_000;
    this.#sessionIdleMs = options.sessionIdleMs ?? 12 * 60 * 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** A fresh launch token (32 random bytes, base64url). */
  mintToken(): string {
    this.#sweep();
    const token = randomBytes(32).toString('base64url');
    this.#tokens.set(hash(token), this.#now() + this.#tokenTtlMs);
    return token;
  }

  /** Redeems a launch token once; answers the new session id and its page key, or undefined. */
  redeem(token: string | undefined): { session: string; pageKey: string } | undefined {
    if (!token || token.length > 256) return undefined;
    const key = hash(token);
    const expiry = this.#tokens.get(key);
    this.#tokens.delete(key);
    if (expiry === undefined || expiry < this.#now()) return undefined;
    const session = randomBytes(32).toString('base64url');
    const pageKey = randomBytes(32).toString('base64url');
    this.#sessions.set(hash(session), { last: this.#now(), key: Buffer.from(hash(pageKey), 'hex') });
    return { session, pageKey };
  }

  /** Whether this cookie value is a live session and the page key is its own (and marks it used). */
  valid(session: string | undefined, pageKey: string | undefined): boolean {
    if (!session || session.length > 256 || !pageKey || pageKey.length > 256) return false;
    const id = hash(session);
    const held = this.#sessions.get(id);
    if (held === undefined) return false;
    if (held.last + this.#sessionIdleMs < this.#now()) {
      this.#sessions.delete(id);
      return false;
    }
    if (!timingSafeEqual(held.key, Buffer.from(hash(pageKey), 'hex'))) return false;
    held.last = this.#now();
    return true;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [k, expiry] of this.#tokens) if (expiry < now) this.#tokens.delete(k);
    for (const [k, s] of this.#sessions) if (s.last + this.#sessionIdleMs < now) this.#sessions.delete(k);
  }
}
