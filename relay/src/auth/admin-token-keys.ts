/**
 * The authority's public key set, fetched over https and cached.
 *
 * jose's createRemoteJWKSet uses the global fetch, which cannot be given an extra CA;
 * so the key set (and, when no key-set URL is configured, the issuer's discovery
 * document) is fetched here with node:https, trusting the system CAs plus the
 * configured CA bundle, and handed to jose's createLocalJWKSet.
 *
 * Caching follows jose's remote key set: a fetched set is used for ten minutes; a token
 * whose kid matches no cached key causes one refetch, at most once per 30 seconds.
 * Concurrent callers share one fetch. Any fetch failure is `authority_unavailable`, and
 * its reason is logged once (warn).
 *
 * A fetch is bounded twice: a connection on which nothing arrives for FETCH_TIMEOUT_MS is
 * dropped, and a whole fetch (discovery document and key set) not done within
 * KEY_SET_FETCH_DEADLINE_MS fails, so an authority that trickles its answer a byte at a
 * time cannot hold the administrators' requests that wait on it for ever.
 */
import { request } from 'node:https';
import { rootCertificates } from 'node:tls';
import { SvcError } from '@svc/shared';
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import type { Logger } from 'pino';

/** How long a fetched key set is used before it is fetched again. */
export const KEY_SET_MAX_AGE_MS = 10 * 60_000;
/** Minimum time between two fetches caused by an unknown kid. */
export const KEY_SET_COOLDOWN_MS = 30_000;
/** A connection on which nothing arrives for this long is dropped. */
const FETCH_TIMEOUT_MS = 5_000;
/** A fetch (discovery document, then key set) not done within this long fails. */
export const KEY_SET_FETCH_DEADLINE_MS = 10_000;
const MAX_BODY_BYTES = 1024 * 1024;

export interface AuthorityKeySetOptions {
  issuer: string;
  /** Explicit key-set URL (https); when absent, the issuer's discovery document names it. */
  jwksUrl: URL | undefined;
  /** Extra CA bundle (PEM) trusted in addition to the system CAs. */
  caPem: string | undefined;
  logger: Logger;
  /** Default KEY_SET_FETCH_DEADLINE_MS (tests shorten it). */
  fetchDeadlineMs?: number;
}

export class AuthorityKeySet {
  readonly #issuer: string;
  readonly #ca: string[] | undefined;
  readonly #logger: Logger;
  readonly #deadlineMs: number;
  #jwksUrl: URL | undefined;
  #keys: JWTVerifyGetKey | undefined;
  #fetchedAt = 0;
  #lastAttemptAt = Number.NEGATIVE_INFINITY;
  #inflight: Promise<JWTVerifyGetKey> | undefined;

  constructor(options: AuthorityKeySetOptions) {
    this.#issuer = options.issuer;
    this.#jwksUrl = options.jwksUrl;
    this.#ca = options.caPem === undefined ? undefined : [...rootCertificates, options.caPem];
    this.#logger = options.logger;
    this.#deadlineMs = options.fetchDeadlineMs ?? KEY_SET_FETCH_DEADLINE_MS;
  }

  /** The cached key set, fetched first when there is none or it is older than the maximum age. */
  async current(): Promise<JWTVerifyGetKey> {
    if (this.#keys !== undefined && Date.now() - this.#fetchedAt < KEY_SET_MAX_AGE_MS) return this.#keys;
    return this.#refresh();
  }

  /**
   * A freshly fetched key set after a token named a kid the cached set lacks; undefined
   * when the last fetch was less than the cooldown ago (the kid is then simply unknown).
   */
  async refreshForUnknownKid(): Promise<JWTVerifyGetKey | undefined> {
    if (this.#inflight !== undefined) return this.#inflight;
    if (Date.now() - this.#lastAttemptAt < KEY_SET_COOLDOWN_MS) return undefined;
    return this.#refresh();
  }

  #refresh(): Promise<JWTVerifyGetKey> {
    if (this.#inflight === undefined) {
      this.#lastAttemptAt = Date.now();
      this.#inflight = this.#fetch()
        .catch((error: unknown) => {
          const reason = error instanceof SvcError ? error.detail : String(error);
          this.#logger.warn({ reason }, 'authority key set unavailable');
          throw error instanceof SvcError ? error : this.#unavailable('fetching the key set failed', error);
        })
        .finally(() => {
          this.#inflight = undefined;
        });
    }
    return this.#inflight;
  }

  async #fetch(): Promise<JWTVerifyGetKey> {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.#deadlineMs);
    try {
      return await this.#fetchWithin(deadline.signal);
    } finally {
      clearTimeout(timer);
    }
  }

  async #fetchWithin(deadline: AbortSignal): Promise<JWTVerifyGetKey> {
    const jwksUrl = this.#jwksUrl ?? (await this.#discover(deadline));
    const body = await this.#getJson(jwksUrl, 'key set', deadline);
    let keys: JWTVerifyGetKey;
    try {
      keys = createLocalJWKSet(body as JSONWebKeySet);
    } catch (error) {
      throw this.#unavailable(`the key set at ${jwksUrl.href} is not a JSON Web Key Set`, error);
    }
    this.#keys = keys;
    this.#fetchedAt = Date.now();
    this.#logger.debug({ jwksUrl: jwksUrl.href }, 'authority key set fetched');
    return keys;
  }

  async #discover(deadline: AbortSignal): Promise<URL> {
    const url = new URL(`${this.#issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`);
    const doc = await this.#getJson(url, 'discovery document', deadline);
    if (typeof doc !== 'object' || doc === null)
      throw this.#unavailable(`the discovery document at ${url.href} is not an object`);
    const { issuer, jwks_uri: jwksUri } = doc as { issuer?: unknown; jwks_uri?: unknown };
    if (issuer !== this.#issuer) {
      throw this.#unavailable(`the discovery document names issuer ${JSON.stringify(issuer)}, not ${this.#issuer}`);
    }
    if (typeof jwksUri !== 'string' || !URL.canParse(jwksUri) || new URL(jwksUri).protocol !== 'https:') {
      throw this.#unavailable(`the discovery document's jwks_uri ${JSON.stringify(jwksUri)} is not an https URL`);
    }
    // Remembered for the lifetime of the verifier: the authority configuration is read once at start.
    this.#jwksUrl = new URL(jwksUri);
    return this.#jwksUrl;
  }

  /** GET of a JSON document; fails (and drops the request) once `deadline` aborts. */
  #getJson(url: URL, what: string, deadline: AbortSignal): Promise<unknown> {
    return new Promise((resolveJson, rejectJson) => {
      const resolve = (value: unknown) => {
        deadline.removeEventListener('abort', pastDeadline);
        resolveJson(value);
      };
      const reject = (error: SvcError) => {
        deadline.removeEventListener('abort', pastDeadline);
        rejectJson(error);
      };
      const req = request(
        url,
        {
          method: 'GET',
          headers: { accept: 'application/json' },
          agent: false,
          timeout: FETCH_TIMEOUT_MS,
          ...(this.#ca === undefined ? {} : { ca: this.#ca }),
        },
        (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            reject(this.#unavailable(`fetching the ${what} ${url.href} answered HTTP ${res.statusCode}`));
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_BODY_BYTES) {
              req.destroy();
              reject(this.#unavailable(`the ${what} at ${url.href} is larger than ${MAX_BODY_BYTES} bytes`));
              return;
            }
            chunks.push(chunk);
          });
          res.on('error', (error) => reject(this.#unavailable(`reading the ${what} ${url.href} failed`, error)));
          res.on('end', () => {
            try {
              resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
            } catch (error) {
              reject(this.#unavailable(`the ${what} at ${url.href} is not JSON`, error));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${FETCH_TIMEOUT_MS} ms`)));
      req.on('error', (error) => reject(this.#unavailable(`fetching the ${what} ${url.href} failed`, error)));
      // the idle timeout above never fires while bytes keep trickling in
      const pastDeadline = () => {
        reject(
          this.#unavailable(
            `the ${what} ${url.href} did not arrive in time: a fetch of the authority's keys may take ${this.#deadlineMs} ms`,
          ),
        );
        req.destroy();
      };
      if (deadline.aborted) pastDeadline();
      else deadline.addEventListener('abort', pastDeadline, { once: true });
      req.end();
    });
  }

  #unavailable(detail: string, cause?: unknown): SvcError {
    const reason = cause instanceof Error ? `${detail}: ${cause.message}` : detail;
    return new SvcError('authority_unavailable', undefined, { detail: reason, cause });
  }
}
