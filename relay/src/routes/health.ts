import { SvcError } from '@svc/shared';
import type { RoutePlugin } from '../http/scopes.js';
import { sourceCapacity } from '../services/source-capacity.js';

export const healthRoutes: RoutePlugin = async (app, { ctx }) => {
  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));

  // Ready when the ledger answers and the bus round-trips.
  app.get('/readyz', { schema: { hide: true } }, async (_request, reply) => {
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
      capacity = await sourceCapacity({ ...ctx, connection: (t) => ctx.bus.tenantConnection(t) }).catch(
        () => undefined,
      );
    }
    return reply
      .status(ok ? 200 : 503)
      .send({ status: ok ? 'ready' : 'not_ready', checks, ...(capacity ? { capacity } : {}) });
  });
};
