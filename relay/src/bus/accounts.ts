import { readFile } from 'node:fs/promises';
import type { KeyPair } from '@nats-io/nkeys';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { credsFile, tenantAccountJwt, type UserClaims, userJwt } from './jwts.js';
import { loadOrCreateSeed, writeSecretFile } from './keys.js';
import { type NatsLayout, tenantFiles } from './layout.js';
import { listAccounts, lookupAccountJwt, pushAccountJwt } from './system-client.js';

export interface TenantKeys {
  account: KeyPair;
  accountPub: string;
  signing: KeyPair;
  relayUser: KeyPair;
}

/** What must survive a restart besides keys: revoked users stay revoked after re-issue. */
interface TenantState {
  revocations: Record<string, number>;
  /**
   * When the users minted with an expiry expire (unix seconds). A revocation is needed only
   * until then (the server refuses an expired JWT anyway), so the list is pruned by it and
   * does not grow with every rotation. A user without a recorded expiry stays revoked.
   */
  expires: Record<string, number>;
}

/** Drops what expired users no longer need; true when something was dropped. */
function pruneExpired(state: TenantState, nowSeconds: number): boolean {
  let pruned = false;
  for (const [key, exp] of Object.entries(state.expires)) {
    if (exp >= nowSeconds) continue;
    delete state.expires[key];
    delete state.revocations[key];
    pruned = true;
  }
  return pruned;
}

export interface TenantAccountsOptions {
  layout: NatsLayout;
  operatorSigning: KeyPair;
  system: () => NatsConnection;
  consumers: number;
  /** Bytes of file storage per tenant account; -1 = no limit. */
  diskStorage: number;
  requestTimeoutMs: number;
  logger: Logger;
  /** the clock of revocations and expiries (ms), default Date.now */
  now?: () => number;
  /**
   * Other relay instances push this account too (an external NATS): merge the revocations
   * the server holds before each push and check ours stayed after it, so that no instance
   * un-revokes a user another one revoked (each keeps its own state file).
   */
  shared?: boolean;
}

/**
 * Tenant accounts: keys on disk, account JWTs issued with the operator signing key
 * and pushed to the full resolver, users signed locally with the account signing key.
 * Work on one tenant is serialized so that two revocations never overwrite each other.
 */
export class TenantAccounts {
  readonly #opts: TenantAccountsOptions;
  readonly #keys = new Map<string, Promise<TenantKeys>>();
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(opts: TenantAccountsOptions) {
    this.#opts = opts;
  }

  keys(tenantId: string): Promise<TenantKeys> {
    let p = this.#keys.get(tenantId);
    if (!p) {
      p = this.#loadKeys(tenantId);
      this.#keys.set(tenantId, p);
      p.catch(() => this.#keys.delete(tenantId));
    }
    return p;
  }

  async #loadKeys(tenantId: string): Promise<TenantKeys> {
    const files = tenantFiles(this.#opts.layout, tenantId);
    const account = await loadOrCreateSeed(files.accountSeedFile, 'account');
    const signing = await loadOrCreateSeed(files.signingSeedFile, 'account');
    const relayUser = await loadOrCreateSeed(files.relayUserSeedFile, 'user');
    return { account, accountPub: account.getPublicKey(), signing, relayUser };
  }

  #nowSeconds(): number {
    return Math.floor((this.#opts.now ?? Date.now)() / 1000);
  }

  async #writeState(tenantId: string, state: TenantState): Promise<void> {
    await writeSecretFile(tenantFiles(this.#opts.layout, tenantId).stateFile, `${JSON.stringify(state, null, 2)}\n`);
  }

  /** Issues the tenant's account JWT from its keys and saved state and pushes it. */
  publish(tenantId: string): Promise<void> {
    return this.#serialized(tenantId, async () => {
      const state = await this.#readState(tenantId);
      if (pruneExpired(state, this.#nowSeconds())) await this.#writeState(tenantId, state);
      await this.#push(tenantId, state);
    });
  }

  /** Adds users to the account's revocation list (persisted first, so a retry keeps them) and pushes it. */
  revoke(tenantId: string, userPublicKeys: string[]): Promise<void> {
    for (const key of userPublicKeys) {
      if (!/^U[A-Z2-7]{55}$/.test(key)) throw new Error(`not a NATS user public key: "${key}"`);
    }
    return this.#serialized(tenantId, async () => {
      const state = await this.#readState(tenantId);
      // A revocation covers user JWTs issued at or before this second.
      const now = this.#nowSeconds();
      for (const key of userPublicKeys) state.revocations[key] = now;
      // after adding: a user that expired already needs no revocation either
      pruneExpired(state, now);
      await this.#writeState(tenantId, state);
      await this.#push(tenantId, state);
      this.#opts.logger.info({ tenant: tenantId, users: userPublicKeys }, 'bus: users revoked');
    });
  }

  async mintUser(tenantId: string, user: KeyPair, claims: UserClaims): Promise<string> {
    const keys = await this.keys(tenantId);
    if (claims.expiresInSeconds === undefined) {
      return credsFile(await userJwt(user, keys.accountPub, keys.signing, claims), user);
    }
    const exp = this.#nowSeconds() + claims.expiresInSeconds;
    // its expiry is recorded before the creds exist, so a revocation of it can be pruned later
    await this.#serialized(tenantId, async () => {
      const state = await this.#readState(tenantId);
      state.expires[user.getPublicKey()] = exp;
      await this.#writeState(tenantId, state);
    });
    return credsFile(await userJwt(user, keys.accountPub, keys.signing, { ...claims, expiresAt: exp }), user);
  }

  async #push(tenantId: string, state: TenantState): Promise<void> {
    const keys = await this.keys(tenantId);
    for (let attempt = 1; ; attempt++) {
      if (this.#opts.shared) {
        const held = await this.#serverRevocations(keys.accountPub);
        if (mergeRevocations(state.revocations, held)) {
          await writeSecretFile(
            tenantFiles(this.#opts.layout, tenantId).stateFile,
            `${JSON.stringify(state, null, 2)}\n`,
          );
        }
      }
      const jwt = await tenantAccountJwt(
        {
          name: tenantId,
          accountPub: keys.accountPub,
          signingPub: keys.signing.getPublicKey(),
          consumers: this.#opts.consumers,
          diskStorage: this.#opts.diskStorage,
          revocations: state.revocations,
        },
        this.#opts.operatorSigning,
      );
      await pushAccountJwt(this.#opts.system(), jwt, `tenant ${tenantId}`, this.#opts.requestTimeoutMs);
      if (!this.#opts.shared || attempt >= PUSH_ATTEMPTS) return;
      // Another instance may have pushed its own list at the same moment: last push wins,
      // so check ours is there and push the union again if not.
      const after = await this.#serverRevocations(keys.accountPub);
      if (Object.entries(state.revocations).every(([k, at]) => (after[k] ?? -1) >= at)) return;
    }
  }

  /** The revocations of the account JWT the server holds; none when it holds none yet (a new tenant). */
  async #serverRevocations(accountPub: string): Promise<Record<string, number>> {
    let jwt: string | undefined;
    try {
      // a lookup of an account the server does not hold goes unanswered until the request
      // times out (2 s by default, at every first start of a fleet): ask the list first
      const held = await listAccounts(this.#opts.system(), this.#opts.requestTimeoutMs).catch(() => undefined);
      if (held !== undefined && !held.includes(accountPub)) return {};
      jwt = await lookupAccountJwt(this.#opts.system(), accountPub, this.#opts.requestTimeoutMs);
    } catch {
      return {}; // unknown to the server: nobody pushed it yet
    }
    return jwt ? revocationsOf(jwt) : {};
  }

  async #readState(tenantId: string): Promise<TenantState> {
    try {
      const parsed = JSON.parse(await readFile(tenantFiles(this.#opts.layout, tenantId).stateFile, 'utf8')) as
        | Partial<TenantState>
        | undefined;
      return { revocations: { ...(parsed?.revocations ?? {}) }, expires: { ...(parsed?.expires ?? {}) } };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { revocations: {}, expires: {} };
      throw err;
    }
  }

  #serialized<T>(tenantId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#queues.get(tenantId) ?? Promise.resolve();
    const next = prev.then(fn);
    const settled = next.catch(() => undefined);
    this.#queues.set(tenantId, settled);
    void settled.then(() => {
      if (this.#queues.get(tenantId) === settled) this.#queues.delete(tenantId);
    });
    return next;
  }
}

const PUSH_ATTEMPTS = 4;

/** Adds `from` into `into` (the later time wins: it covers more user JWTs); true when `into` changed. */
export function mergeRevocations(into: Record<string, number>, from: Record<string, number>): boolean {
  let changed = false;
  for (const [key, at] of Object.entries(from)) {
    if (!/^U[A-Z2-7]{55}$/.test(key) || !Number.isSafeInteger(at)) continue;
    if ((into[key] ?? -1) < at) {
      into[key] = at;
      changed = true;
    }
  }
  return changed;
}

/** The `nats.revocations` of an account JWT (its payload; the server verified the signature when it took it). */
export function revocationsOf(jwt: string): Record<string, number> {
  try {
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      nats?: { revocations?: Record<string, number> };
    };
    const r = payload.nats?.revocations;
    return r && typeof r === 'object' ? { ...r } : {};
  } catch {
    return {};
  }
}
