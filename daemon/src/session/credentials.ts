/**
 * An agent's relay credentials: the API key (vault) is exchanged for a 15-minute access
 * JWT, renewed a minute before it expires. When the relay refuses the API key
 * (invalid_api_key: expired or replaced), the identity key answers a sign-in challenge
 * and the fresh API key goes back into the vault. Tokens stay in memory only.
 */
import { signInProofBytes, toBase64url } from '@svc/shared';
import { ed25519Sign } from '@svc/shared/node';
import type { Logger } from 'pino';
import type { AgentConfig } from '../agents/store.js';
import { refusedAdvice } from '../client/refused.js';
import { RelayError } from '../errors.js';
import { type RelayTarget, relayCall, relayCode } from '../relay/http.js';
import { loadApiKey, loadSeed, storeApiKey, type Vault } from '../vault/index.js';

const RENEW_BEFORE_MS = 60_000;

/**
 * A credential a request can carry as `Authorization: Bearer …`: visible ASCII, at most 8 KiB.
 * The relay's word: anything else (a line break, a megabyte) would be refused by every later
 * request, the honest relay's too, and never give way to a sign-in, so it is never stored.
 */
export function isBearerCredential(value: unknown): value is string {
  return typeof value === 'string' && /^[\x21-\x7e]{1,8192}$/.test(value);
}

const unusableCredentials = (what: string) =>
  new RelayError(
    502,
    'internal_error',
    `The relay answered the ${what} with credentials no request can carry; nothing was stored. Ask its operator to check it.`,
  );

interface Token {
  value: string;
  expiresAt: number;
}

interface CredentialAnswer {
  api_key: string;
  access_token: string;
  access_token_expires_at: string;
}

export class Credentials {
  readonly #agent: () => AgentConfig;
  readonly #target: RelayTarget;
  readonly #vault: Vault;
  readonly #log: Logger;
  #token?: Token;
  #pending?: Promise<Token>;

  constructor(agent: () => AgentConfig, target: RelayTarget, vault: Vault, log: Logger) {
    this.#agent = agent;
    this.#target = target;
    this.#vault = vault;
    this.#log = log;
  }

  /** Seeds the cache with the token an enrollment returned. */
  prime(token: string, expiresAt: string): void {
    if (isBearerCredential(token)) this.#token = { value: token, expiresAt: Date.parse(expiresAt) };
  }

  invalidate(): void {
    this.#token = undefined;
  }

  async accessToken(): Promise<{ access_token: string; expires_at: string }> {
    let t = this.#token;
    if (!t || t.expiresAt - Date.now() < RENEW_BEFORE_MS) {
      this.#pending ??= this.#renew().finally(() => {
        this.#pending = undefined;
      });
      t = await this.#pending;
    }
    return { access_token: t.value, expires_at: new Date(t.expiresAt).toISOString() };
  }

  async bearer(): Promise<string> {
    return `Bearer ${(await this.accessToken()).access_token}`;
  }

  async #renew(): Promise<Token> {
    const name = this.#agent().name;
    const apiKey = loadApiKey(this.#vault, name);
    // one no request can carry (stored by an older daemon) is as good as none: sign in
    if (isBearerCredential(apiKey)) {
      try {
        const r = await relayCall<{ access_token: string; expires_at: string }>(this.#target, {
          method: 'POST',
          path: '/api/v1/auth/token',
          headers: { authorization: `Bearer ${apiKey}` },
          timeoutMs: 15_000,
        });
        if (!isBearerCredential(r?.access_token)) throw unusableCredentials('token exchange');
        this.#token = { value: r.access_token, expiresAt: Date.parse(r.expires_at) };
        this.#log.debug({ agent: name }, 'access token renewed');
        return this.#token;
      } catch (err) {
        if (relayCode(err) !== 'invalid_api_key') throw err;
        this.#log.info({ agent: name }, 'API key refused; signing in with the identity key');
      }
    }
    return this.signIn();
  }

  /** Challenge sign-in: proves the identity key, gets a fresh API key and token. */
  async signIn(): Promise<Token> {
    const a = this.#agent();
    const bind = { deployment_id: a.deployment_id, tenant_id: a.tenant_id, agent_id: a.agent_id };
    const challenge = await relayCall<{ challenge_id: string; nonce: string }>(this.#target, {
      method: 'POST',
      path: '/api/v1/auth/sign-in/challenge',
      body: bind,
      timeoutMs: 15_000,
    });
    const signature = ed25519Sign(
      loadSeed(this.#vault, a.name),
      signInProofBytes({ challenge_id: challenge.challenge_id, nonce: challenge.nonce, ...bind }),
    );
    const creds = await relayCall<CredentialAnswer>(this.#target, {
      method: 'POST',
      path: '/api/v1/auth/sign-in',
      body: { challenge_id: challenge.challenge_id, agent_id: a.agent_id, signature: toBase64url(signature) },
      timeoutMs: 15_000,
    }).catch((err: unknown) => {
      // The relay answers every refusal alike (no telling who exists); signed with this
      // agent's own identity key, a refusal most likely means it was revoked.
      if (relayCode(err) !== 'invalid_sign_in') throw err;
      throw new RelayError(401, 'invalid_sign_in', refusedAdvice(a.name));
    });
    if (!isBearerCredential(creds?.api_key) || !isBearerCredential(creds.access_token)) {
      throw unusableCredentials('sign-in');
    }
    storeApiKey(this.#vault, a.name, creds.api_key);
    this.#token = { value: creds.access_token, expiresAt: Date.parse(creds.access_token_expires_at) };
    this.#log.info({ agent: a.name }, 'signed in with the identity key; new API key stored in the vault');
    return this.#token;
  }
}
