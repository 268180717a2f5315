import { SvcError } from '@svc/shared';
import { adminPrincipal, type RoutePlugin } from '../http/scopes.js';
import { sourceCapacity } from '../services/source-capacity.js';

export const healthRoutes: RoutePlugin = async (app, { ctx }) => {
  /** The tenant of an administrator (role admin or auditor) whose token comes with the request; a bad token is refused. */
  const administeredTenants = async (authorization: string | undefined): Promise<Set<string>> => {
    if (authorization === undefined) return new Set();
    const admin = await adminPrincipal(ctx, authorization);
    if (!admin.roles.some((r) => r === 'admin' || r === 'auditor')) {
      throw new SvcError('insufficient_scope', 'The named-source rows of /readyz are for the roles admin and auditor.');
    }
    return new Set([admin.tenantId]);
  };

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  // Ready when the ledger answers and the bus round-trips. Anyone may ask (load balancers);
  // the named-source rows name agents, so only an administrator of their tenant sees them
  // (as the sign-in routes tell nobody which agents exist).
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    const rowsFor = await administeredTenants(request.headers.authorization);
    const checks: Record<string, { ok: boolean; detail?: string }> = {};
    try {
      await ctx.ledger.ping();
      checks.ledger = { ok: true };
    } catch (err) {
      // the reason, as the bus check gives its own (the clients' text tells an operator nothing)
      checks.ledger = {
        ok: false,
        detail: (err instanceof SvcError ? err.detail : undefined) ?? (err as Error).message,
      };
    }
    checks.bus = await ctx.bus.health();
    const ok = Object.values(checks).every((c) => c.ok);
    // Consumer capacity per tenant is information, not readiness: a full tenant stays in rotation.
    let capacity: Awaited<ReturnType<typeof sourceCapacity>> | undefined;
    if (checks.bus.ok && checks.ledger.ok) {
      capacity = await sourceCapacity({ ...ctx, connection: (t) => ctx.bus.tenantConnection(t) }, rowsFor).catch(
        () => undefined,
      );
    }
    return reply
      .status(ok ? 200 : 503)
      .send({ status: ok ? 'ready' : 'not_ready', checks, ...(capacity ? { capacity } : {}) });
  });
};
