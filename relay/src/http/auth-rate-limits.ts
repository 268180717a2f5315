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
  const limited = (request: FastifyRequest) =>
    request.method === 'POST' && Object.hasOwn(AGENT_KEYS, request.routeOptions.url ?? '');

  app.addHook('onRequest', async (request) => {
    if (!limited(request)) return;
    const wait = perAddress.take(`ip:${request.ip}`);
    if (wait > 0) throw new RateLimitedError(wait, undefined, `too many requests from ${request.ip}`);
  });
  app.addHook('preHandler', async (request) => {
    if (!limited(request)) return;
    const key = AGENT_KEYS[request.routeOptions.url as string]?.(request);
    if (key === undefined) return;
    const wait = perAgent.take(key);
    if (wait > 0) throw new RateLimitedError(wait, undefined, `too many requests for ${key}`);
  });
}
