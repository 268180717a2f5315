import { readFile } from 'node:fs/promises';
import type { KeyPair } from '@nats-io/nkeys';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { credsFile, tenantAccountJwt, type UserClaims, uplinkAccountJwt, userJwt } from './jwts.js';
import { deriveAccountKey, loadOrCreateSeed, writeSecretFile } from './keys.js';
import { type NatsLayout, tenantFiles, uplinkFiles } from './layout.js';
import { sourceExports, uplinkImports } from './sources.js';
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
 * One account the relay issues: where its state (revocations, expiries) lives and the keys
 * its users are signed with. The tenant's account, or an edge's uplink account.
 */
interface AccountRef {
  /** work on one account is serialized under this key */
  key: string;
  /** the account JWT's name */
  name: string;
  /** for errors and logs */
  label: string;
  stateFile: string;
  accountPub: string;
  signing: KeyPair;
}

/**
 * Tenant accounts: keys on disk, account JWTs issued with the operator signing key
 * and pushed to the full resolver, users signed locally with the account signing key.
 * Work on one account is serialized so that two revocations never overwrite each other.
 *
 * Each edge machine (an uplink identity) has an account of its own besides: its leaf node
 * connects there, and reaches its named sources through service imports from the tenant
 * account (see SOURCE_SERVICES). Its keys are derived from the tenant account's seed and
 * the edge's id, so every relay instance signs for the same one.
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

  async #tenantRef(tenantId: string): Promise<AccountRef> {
    const keys = await this.keys(tenantId);
    return {
      key: tenantId,
      name: tenantId,
      label: `tenant ${tenantId}`,
      stateFile: tenantFiles(this.#opts.layout, tenantId).stateFile,
      accountPub: keys.accountPub,
      signing: keys.signing,
    };
  }

  async #uplinkRef(tenantId: string, edgeId: string): Promise<AccountRef> {
    const files = uplinkFiles(this.#opts.layout, tenantId, edgeId);
    const tenant = await this.keys(tenantId);
    const account = deriveAccountKey(tenant.account, `uplink-account:${edgeId}`);
    return {
      key: `${tenantId}/uplink/${edgeId}`,
      name: `${tenantId}/uplink/${edgeId}`,
      label: `uplink ${edgeId} of tenant ${tenantId}`,
      stateFile: files.stateFile,
      accountPub: account.getPublicKey(),
      signing: deriveAccountKey(tenant.account, `uplink-signing:${edgeId}`),
    };
  }

  /** The public key of the edge's uplink account. */
  async uplinkAccount(tenantId: string, edgeId: string): Promise<string> {
    return (await this.#uplinkRef(tenantId, edgeId)).accountPub;
  }

  #nowSeconds(): number {
    return Math.floor((this.#opts.now ?? Date.now)() / 1000);
  }

  async #writeState(ref: AccountRef, state: TenantState): Promise<void> {
    await writeSecretFile(ref.stateFile, `${JSON.stringify(state, null, 2)}\n`);
  }

  /** Issues the tenant's account JWT from its keys and saved state and pushes it. */
  async publish(tenantId: string): Promise<void> {
    const ref = await this.#tenantRef(tenantId);
    await this.#publish(ref, this.#tenantJwt(tenantId));
  }

  /**
   * The tenant's account JWT as the shared bus holds it now (undefined on the managed
   * server, where this relay is the only writer, or when the bus holds none yet): what
   * `restore` puts back when this instance's settings could not be applied.
   */
  async held(tenantId: string): Promise<string | undefined> {
    if (!this.#opts.shared) return undefined;
    return this.#serverJwt((await this.#tenantRef(tenantId)).accountPub);
  }

  /** Pushes back an account JWT `held` returned (signed by the operator, as it was). */
  async restore(tenantId: string, jwt: string): Promise<void> {
    const ref = await this.#tenantRef(tenantId);
    await this.#serialized(ref.key, () =>
      pushAccountJwt(this.#opts.system(), jwt, ref.label, this.#opts.requestTimeoutMs),
    );
  }

  /** Adds users to the account's revocation list (persisted first, so a retry keeps them) and pushes it. */
  async revoke(tenantId: string, userPublicKeys: string[]): Promise<void> {
    checkUserKeys(userPublicKeys);
    const ref = await this.#tenantRef(tenantId);
    await this.#revoke(ref, userPublicKeys, this.#tenantJwt(tenantId));
  }

  async mintUser(tenantId: string, user: KeyPair, claims: UserClaims): Promise<string> {
    return this.#mint(await this.#tenantRef(tenantId), user, claims);
  }

  /**
   * Issues the edge's uplink account JWT importing exactly `durables` (its named sources)
   * and pushes it, revoking `revoke` (users of the edge) on the way. A user is revoked in the
   * account it was minted in: the uplink account, or the tenant account for an uplink user
   * of an older relay. One neither state knows has expired already (its record was pruned)
   * unless another relay instance minted it (a shared NATS): then it is revoked in both.
   */
  async publishUplink(
    tenantId: string,
    edgeId: string,
    durables: readonly string[],
    revoke: string[] = [],
  ): Promise<void> {
    checkUserKeys(revoke);
    const tenant = await this.#tenantRef(tenantId);
    const ref = await this.#uplinkRef(tenantId, edgeId);
    const jwt = this.#uplinkJwt(tenantId, ref, durables);
    const inUplink = await this.#expiries(ref);
    const inTenant = await this.#expiries(tenant);
    const unknown = (k: string) => this.#opts.shared === true && inUplink[k] === undefined && inTenant[k] === undefined;
    const here = revoke.filter((k) => inUplink[k] !== undefined || unknown(k));
    const there = revoke.filter((k) => inTenant[k] !== undefined || unknown(k));
    if (here.length > 0) await this.#revoke(ref, here, jwt);
    else await this.#publish(ref, jwt);
    if (there.length > 0) await this.#revoke(tenant, there, this.#tenantJwt(tenantId));
  }

  /**
   * Which of these users were minted in the tenant account and have not expired: uplink
   * users of an older relay (since uplink accounts, the relay mints none there).
   */
  async mintedInTenant(tenantId: string, userPublicKeys: readonly string[]): Promise<string[]> {
    const tenant = await this.#tenantRef(tenantId);
    const expires = await this.#expiries(tenant);
    const now = this.#nowSeconds();
    return userPublicKeys.filter((k) => (expires[k] ?? 0) > now);
  }

  /** A user of the edge's uplink account (the account must be published first). */
  async mintUplinkUser(tenantId: string, edgeId: string, user: KeyPair, claims: UserClaims): Promise<string> {
    return this.#mint(await this.#uplinkRef(tenantId, edgeId), user, claims);
  }

  #tenantJwt(tenantId: string): (revocations: Record<string, number>) => Promise<string> {
    return async (revocations) => {
      const keys = await this.keys(tenantId);
      return tenantAccountJwt(
        {
          name: tenantId,
          accountPub: keys.accountPub,
          signingPub: keys.signing.getPublicKey(),
          consumers: this.#opts.consumers,
          diskStorage: this.#opts.diskStorage,
          revocations,
          exports: sourceExports(),
        },
        this.#opts.operatorSigning,
      );
    };
  }

  #uplinkJwt(
    tenantId: string,
    ref: AccountRef,
    durables: readonly string[],
  ): (revocations: Record<string, number>) => Promise<string> {
    return async (revocations) => {
      const keys = await this.keys(tenantId);
      return uplinkAccountJwt(
        {
          name: ref.name,
          accountPub: ref.accountPub,
          signingPub: ref.signing.getPublicKey(),
          tenantAccount: keys.account,
          imports: uplinkImports(durables),
          revocations,
        },
        this.#opts.operatorSigning,
      );
    };
  }

  #publish(ref: AccountRef, jwt: (revocations: Record<string, number>) => Promise<string>): Promise<void> {
    return this.#serialized(ref.key, async () => {
      const state = await this.#readState(ref);
      if (pruneExpired(state, this.#nowSeconds())) await this.#writeState(ref, state);
      await this.#push(ref, state, jwt);
    });
  }

  #revoke(
    ref: AccountRef,
    userPublicKeys: string[],
    jwt: (revocations: Record<string, number>) => Promise<string>,
  ): Promise<void> {
    return this.#serialized(ref.key, async () => {
      const state = await this.#readState(ref);
      // A revocation covers user JWTs issued at or before this second.
      const now = this.#nowSeconds();
      for (const key of userPublicKeys) state.revocations[key] = now;
      // after adding: a user that expired already needs no revocation either
      pruneExpired(state, now);
      await this.#writeState(ref, state);
      await this.#push(ref, state, jwt);
      this.#opts.logger.info({ account: ref.label, users: userPublicKeys }, 'bus: users revoked');
    });
  }

  async #mint(ref: AccountRef, user: KeyPair, claims: UserClaims): Promise<string> {
    if (claims.expiresInSeconds === undefined) {
      return credsFile(await userJwt(user, ref.accountPub, ref.signing, claims), user);
    }
    const exp = this.#nowSeconds() + claims.expiresInSeconds;
    // its expiry is recorded before the creds exist, so a revocation of it can be pruned later
    await this.#serialized(ref.key, async () => {
      const state = await this.#readState(ref);
      state.expires[user.getPublicKey()] = exp;
      await this.#writeState(ref, state);
    });
    return credsFile(await userJwt(user, ref.accountPub, ref.signing, { ...claims, expiresAt: exp }), user);
  }

  async #push(
    ref: AccountRef,
    state: TenantState,
    jwtOf: (revocations: Record<string, number>) => Promise<string>,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (this.#opts.shared) {
        const held = await this.#serverRevocations(ref.accountPub);
        if (mergeRevocations(state.revocations, held)) await this.#writeState(ref, state);
      }
      const jwt = await jwtOf(state.revocations);
      await pushAccountJwt(this.#opts.system(), jwt, ref.label, this.#opts.requestTimeoutMs);
      if (!this.#opts.shared || attempt >= PUSH_ATTEMPTS) return;
      // Another instance may have pushed its own list at the same moment: last push wins,
      // so check ours is there and push the union again if not.
      const after = await this.#serverRevocations(ref.accountPub);
      if (Object.entries(state.revocations).every(([k, at]) => (after[k] ?? -1) >= at)) return;
    }
  }

  /** The revocations of the account JWT the server holds; none when it holds none yet (a new tenant). */
  async #serverRevocations(accountPub: string): Promise<Record<string, number>> {
    const jwt = await this.#serverJwt(accountPub);
    return jwt ? revocationsOf(jwt) : {};
  }

  /** The account JWT the server holds; undefined when it holds none yet (a new tenant). */
  async #serverJwt(accountPub: string): Promise<string | undefined> {
    try {
      // a lookup of an account the server does not hold goes unanswered until the request
      // times out (2 s by default, at every first start of a fleet): ask the list first
      const held = await listAccounts(this.#opts.system(), this.#opts.requestTimeoutMs).catch(() => undefined);
      if (held !== undefined && !held.includes(accountPub)) return undefined;
      return (await lookupAccountJwt(this.#opts.system(), accountPub, this.#opts.requestTimeoutMs)) || undefined;
    } catch {
      return undefined; // unknown to the server: nobody pushed it yet
    }
  }

  /** The expiry of each user the account minted (and has not pruned), read in turn with its writes. */
  #expiries(ref: AccountRef): Promise<TenantState['expires']> {
    return this.#serialized(ref.key, async () => (await this.#readState(ref)).expires);
  }

  async #readState(ref: AccountRef): Promise<TenantState> {
    try {
      const parsed = JSON.parse(await readFile(ref.stateFile, 'utf8')) as Partial<TenantState> | undefined;
      return { revocations: { ...(parsed?.revocations ?? {}) }, expires: { ...(parsed?.expires ?? {}) } };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { revocations: {}, expires: {} };
      throw err;
    }
  }

  #serialized<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#queues.get(key) ?? Promise.resolve();
    const next = prev.then(fn);
    const settled = next.catch(() => undefined);
    this.#queues.set(key, settled);
    void settled.then(() => {
      if (this.#queues.get(key) === settled) this.#queues.delete(key);
    });
    return next;
  }
}

function checkUserKeys(userPublicKeys: readonly string[]): void {
  for (const key of userPublicKeys) {
    if (!/^U[A-Z2-7]{55}$/.test(key)) throw new Error(`not a NATS user public key: "${key}"`);
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
