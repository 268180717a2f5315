/**
 * The API's three scopes: public, admin (an operator's OIDC token) and agent (an agent's
 * access token). Each is an encapsulated plugin holding its routes; the bearer check runs
 * as the scope's onRequest hook, before the body is parsed or validated, and the scope
 * gives its routes the shared error responses and their OpenAPI security entry, so no
 * route repeats them.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type Capability, ErrorResponse, SvcError } from '@svc/shared';
import type { FastifyRequest, RouteOptions } from 'fastify';
import type { AdminPrincipal } from '../auth/admin-token.js';
import { bearerOf, type VerifiedAccessToken } from '../auth/agent-credentials.js';
import type { RelayContext } from '../context.js';
import type { AgentRow } from '../ledger/ledger.js';
import type { TypedApp } from '../routes/types.js';

/** The capability every ordinary agent route requires (specification, "Capabilities"). */
export const HTTP_RELAY: Capability = 'http-relay';

export interface AuthenticatedAgent {
  /** with `exp`: an event stream ends when its token does */
  claims: VerifiedAccessToken;
  row: AgentRow;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the admin scope's hook; read only by routes registered in that scope. */
    admin: AdminPrincipal;
    /** Set by the agent scope's hook; read only by routes registered in that scope. */
    agent: AuthenticatedAgent;
  }
}

/** Route plugins get the relay's context as their options. */
export type RoutePlugin = FastifyPluginAsyncTypebox<{ ctx: RelayContext }>;

export interface ScopeOptions {
  ctx: RelayContext;
  routes: readonly RoutePlugin[];
}
export type ScopePlugin = FastifyPluginAsyncTypebox<ScopeOptions>;

async function registerAll(scope: TypedApp, { ctx, routes }: ScopeOptions): Promise<void> {
  for (const routePlugin of routes) await scope.register(routePlugin, { ctx });
}

/** Adds `security` and the shared error responses to every route registered after it in `scope`. */
function routeDefaults(scope: TypedApp, security: Array<Record<string, string[]>> | undefined): void {
  scope.addHook('onRoute', (route: RouteOptions) => {
    const schema = route.schema ?? {};
    if (schema.hide) return;
    route.schema = {
      ...(security && !schema.security ? { security } : {}),
      ...schema,
      response: { ...(schema.response as object | undefined), '4xx': ErrorResponse, '5xx': ErrorResponse },
    };
  });
}

/** Routes anyone may call (enrollment, sign-in): they answer errors in the one shape too. */
export const publicScope: ScopePlugin = async (scope, opts) => {
  routeDefaults(scope, undefined);
  await registerAll(scope, opts);
};

/** The operator an `Authorization` header's OIDC access token names, or the refusal (an SvcError). */
export async function adminPrincipal(ctx: RelayContext, authorization: string | undefined): Promise<AdminPrincipal> {
  const token = bearerOf(authorization);
  if (!token) throw new SvcError('missing_token');
  if (!ctx.adminVerifier) {
    throw new SvcError(
      'invalid_token',
      'This relay has no external authority configured; use `svc-relay grant` on the relay host.',
    );
  }
  return ctx.adminVerifier.verify(token);
}

/** Routes for an operator's OIDC access token (the configured external authority). */
export const adminScope: ScopePlugin = async (scope, opts) => {
  const { ctx } = opts;
  routeDefaults(scope, undefined);
  scope.decorateRequest('admin', null as unknown as AdminPrincipal);
  scope.addHook('onRequest', async (request: FastifyRequest) => {
    request.admin = await adminPrincipal(ctx, request.headers.authorization);
  });
  await registerAll(scope, opts);
};

/** The capability of a dedicated identity that operates a machine's leaf uplink (never implied by a role or a general grant). */
export const NATS_RELAY: Capability = 'nats-relay';

/**
 * A scope for an identity's access token: verified (cached), then checked against the
 * ledger on every request. The token names the incarnation (ledger row) it was issued to,
 * and only the agent's active row is accepted, so a token of a revoked agent, or from
 * before a re-enrollment, is dead at once whatever its age. The ledger row's capabilities
 * (those of its grant), not the token's, decide: each scope requires one capability.
 */
function identityScope(capability: Capability, missing: string): ScopePlugin {
  return async (scope, opts) => {
    const { ctx } = opts;
    scope.decorateRequest('agent', null as unknown as AuthenticatedAgent);
    routeDefaults(scope, [{ accessToken: [] }]);
    scope.addHook('onRequest', async (request: FastifyRequest) => {
      const token = bearerOf(request.headers.authorization);
      if (!token)
        throw new SvcError('missing_token', 'Send the access JWT as "Authorization: Bearer <token>" (svc auth token).');
      const claims = await ctx.accessTokens(token);
      if (claims.svc_deployment_id !== ctx.deployment.deploymentId)
        throw new SvcError('invalid_token', undefined, { detail: 'other deployment' });
      const row = await ctx.ledger.activeAgent(claims.svc_tenant_id, claims.sub);
      if (!row || row.id !== claims.svc_incarnation_id || row.agent_number !== claims.svc_agent_number) {
        throw new SvcError('invalid_token', undefined, { detail: 'agent revoked or replaced' });
      }
      if (!row.capabilities.includes(capability)) throw new SvcError('capability_required', missing);
      request.agent = { claims, row };
    });
    await registerAll(scope, opts);
  };
}

/**
 * Routes for an agent's access token. Every agent route needs the `http-relay`
 * capability of the grant; a dedicated `nats-relay` identity has none of them.
 */
export const agentScope: ScopePlugin = identityScope(
  HTTP_RELAY,
  "This agent's grant lacks the http-relay capability; ask the operator for a new grant with it.",
);

/** Routes of an edge machine's uplink identity (leaf creds, named sources): `nats-relay` only. */
export const edgeScope: ScopePlugin = identityScope(
  NATS_RELAY,
  'Leaf credentials and named sources need an identity enrolled with the nats-relay capability; ask the operator for a dedicated grant with it.',
);
