/**
 * Who may use the dashboard. Each `svc dashboard` launch mints a one-time token that
 * travels in the link it opens; the page's first request trades it for a random session
 * id held in an HttpOnly, SameSite=Strict cookie, so the token leaves the address bar at
 * once and script never holds a credential. Both live only in this daemon's memory (a
 * daemon restart signs every browser out) and are stored hashed: a lookup by hash does not
 * compare the secret byte by byte.
 */
import { createHash, randomBytes } from 'node:crypto';

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
  readonly #sessions = new Map<string, number>(); // hash → last use
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

  /** Redeems a launch token once; answers the new session id, or undefined. */
  redeem(token: string | undefined): string | undefined {
    if (!token || token.length > 256) return undefined;
    const key = hash(token);
    const expiry = this.#tokens.get(key);
    this.#tokens.delete(key);
    if (expiry === undefined || expiry < this.#now()) return undefined;
    const session = randomBytes(32).toString('base64url');
    this.#sessions.set(hash(session), this.#now());
    return session;
  }

  /** Whether this cookie value is a live session (and marks it used). */
  valid(session: string | undefined): boolean {
    if (!session || session.length > 256) return false;
    const key = hash(session);
    const last = this.#sessions.get(key);
    if (last === undefined) return false;
    if (last + this.#sessionIdleMs < this.#now()) {
      this.#sessions.delete(key);
      return false;
    }
    this.#sessions.set(key, this.#now());
    return true;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [k, expiry] of this.#tokens) if (expiry < now) this.#tokens.delete(k);
    for (const [k, last] of this.#sessions) if (last + this.#sessionIdleMs < now) this.#sessions.delete(k);
  }
}
