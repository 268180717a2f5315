/**
 * Rate limits of the unauthenticated routes (enrollment, sign-in challenge, sign-in, API
 * key exchange): per source address before the body is read, and per agent (or
 * enrollment code, or API key) once it is. Over a limit: 429 rate_limited with Retry-After,
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

/** What each route's per-agent key is made of. */
const AGENT_KEYS: Record<string, (request: FastifyRequest) => string | undefined> = {
  '/api/v1/enrollment': (r) => {
    // the code's signed payload names the grant (and so the agent); the secret part is not kept
    const payload = str((r.body as Body)?.enrollment_code).split('.')[1];
    return payload ? `code:${digest(payload)}` : undefined;
  },
  '/api/v1/auth/sign-in/challenge': (r) => {
    const b = r.body as Body;
    return `agent:${str(b?.tenant_id)}:${str(b?.agent_id)}`;
  },
  '/api/v1/auth/sign-in': (r) => `agent:*:${str((r.body as Body)?.agent_id)}`,
  '/api/v1/auth/token': (r) => {
    const auth = r.headers.authorization;
    return auth ? `key:${digest(auth)}` : undefined;
  },
};

export function installAuthRateLimits(app: TypedApp, ctx: RelayContext): void {
  const { limits } = ctx.config;
  const perAddress = new TokenBuckets({
    capacity: limits.authPerAddressPerMinute,
    perSecond: limits.authPerAddressPerMinute / 60,
    now: ctx.now,
  });
  const perAgent = new TokenBuckets({
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
    const keyOf = Object.hasOwn(AGENT_KEYS, route.url) ? AGENT_KEYS[route.url] : undefined;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (keyOf === undefined || !methods.includes('POST')) return;
    const perAgentHook = async (request: FastifyRequest) => {
      if (request.method !== 'POST') return;
      const key = keyOf(request);
      if (key === undefined) return;
      const wait = perAgent.take(key);
      if (wait > 0) throw new RateLimitedError(wait, undefined, `too many requests for ${key}`);
    };
    const onRequest = async (request: FastifyRequest) => {
      if (request.method === 'POST') await perAddressHook(request);
    };
    route.onRequest = [onRequest, ...hooksOf(route.onRequest)];
    route.preHandler = [perAgentHook, ...hooksOf(route.preHandler)];
  });
}

const hooksOf = <T>(hooks: T | T[] | undefined): T[] =>
  hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
