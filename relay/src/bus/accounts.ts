import { readFile } from 'node:fs/promises';
import type { KeyPair } from '@nats-io/nkeys';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { credsFile, tenantAccountJwt, type UserClaims, userJwt } from './jwts.js';
import { loadOrCreateSeed, writeSecretFile } from './keys.js';
import { type NatsLayout, tenantFiles } from './layout.js';
import { pushAccountJwt } from './system-client.js';

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
