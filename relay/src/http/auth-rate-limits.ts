/**
 * Rate limits of the unauthenticated routes (enrollment, sign-in challenge, sign-in, API
 * key exchange): per source address before the body is read, and per enrollment code or
 * API key once it is. Over a limit: 429 rate_limited with Retry-After,
 * the same for agents that exist and agents that do not.
 */
import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { RelayContext } from '../context.js';
import type { TypedApp } from '../routes/types.js';
import { RateLimitedError, TokenBuckets } from './rate-limit.js';

type Body = Record<string, unknown> | undefined;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const digest = (v: string): string => createHash('sha256').update(v).digest('base64url').slice(0, 22);

/**
 * What each route's per-secret key is made of: the secret it tries (an enrollment code, an
 * API key), so guessing one is slow. The sign-in routes have none: what they try is a
 * signature nobody forges, and a limit per agent id would let anyone lock an agent out of
 * signing in by naming it; the per-address limit bounds the work they cause.
 */
const SECRET_KEYS: Record<string, ((request: FastifyRequest) => string | undefined) | null> = {
  '/api/v1/enrollment': (r) => {
    // the code's signed payload names the grant (and so the agent); the secret part is not kept
    const payload = str((r.body as Body)?.enrollment_code).split('.')[1];
    return payload ? `code:${digest(payload)}` : undefined;
  },
  '/api/v1/auth/token': (r) => {
    const auth = r.headers.authorization;
    return auth ? `key:${digest(auth)}` : undefined;
  },
  '/api/v1/auth/sign-in/challenge': null,
  '/api/v1/auth/sign-in': null,
};

export function installAuthRateLimits(app: TypedApp, ctx: RelayContext): void {
  const { limits } = ctx.config;
  const perAddress = new TokenBuckets({
    capacity: limits.authPerAddressPerMinute,
    perSecond: limits.authPerAddressPerMinute / 60,
    now: ctx.now,
  });
  const perSecret = new TokenBuckets({
    capacity: limits.authPerAgentPerMinute,
    perSecond: limits.authPerAgentPerMinute / 60,
    now: ctx.now,
  });
  const perAddressHook = async (request: FastifyRequest) => {
    const wait = perAddress.take(`ip:${request.ip}`);
    if (wait > 0) throw new RateLimitedError(wait, undefined, `too many requests from ${request.ip}`);
  };
  // Only the limited routes get the hooks: every other request (a send) pays nothing for them.
  app.addHook('onRoute', (route) => {
    if (!Object.hasOwn(SECRET_KEYS, route.url)) return;
    const keyOf = SECRET_KEYS[route.url];
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST')) return;
    const perSecretHook = async (request: FastifyRequest) => {
      if (request.method !== 'POST' || !keyOf) return;
      const key = keyOf(request);
      if (key === undefined) return;
      const wait = perSecret.take(key);
      if (wait > 0) throw new RateLimitedError(wait, undefined, `too many requests for ${key}`);
    };
    const onRequest = async (request: FastifyRequest) => {
      if (request.method === 'POST') await perAddressHook(request);
    };
    route.onRequest = [onRequest, ...hooksOf(route.onRequest)];
    if (keyOf) route.preHandler = [perSecretHook, ...hooksOf(route.preHandler)];
  });
}

const hooksOf = <T>(hooks: T | T[] | undefined): T[] =>
  hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
