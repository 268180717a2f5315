/**
 * POST /v1/dashboard: serve the dashboard page on a loopback port (started on first use,
 * moved when asked for another address) and answer a fresh one-time sign-in link.
 * GET /v1/agents/:agent/conversations: the conversation list the page shows.
 */
import { DAEMON_API as API, type DashboardLaunch, type DashboardOpenInput } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { bindAddress, isLoopbackHost } from '../../dashboard/security.js';
import { DashboardServer } from '../../dashboard/server.js';
import { DashboardSessions } from '../../dashboard/sessions.js';
import { DaemonError } from '../../errors.js';
import { subsystem } from '../../logger.js';
import { type DaemonApp, route } from './route.js';

export const DEFAULT_DASHBOARD_PORT = 8191;

export function dashboardRoutes(app: DaemonApp, ctx: DaemonContext, assetsDir?: string): void {
  const sessions = new DashboardSessions();
  let server: DashboardServer | undefined;
  let pending: Promise<unknown> = Promise.resolve();

  const open = async (input: DashboardOpenInput): Promise<DashboardLaunch> => {
    const host = input.host ?? '127.0.0.1';
    if (!isLoopbackHost(host)) {
      throw new DaemonError(
        'dashboard_host_not_loopback',
        `${host} is not a loopback address: the dashboard listens on loopback only (127.0.0.1, ::1 or localhost).`,
      );
    }
    const address = bindAddress(host);
    const port = input.port ?? DEFAULT_DASHBOARD_PORT;
    if (server && (server.host !== address || (port !== 0 && server.port !== port))) {
      await server.close();
      server = undefined;
    }
    if (!server) {
      const next = new DashboardServer({
        api: app,
        events: ctx.events,
        sessions,
        log: subsystem(ctx.log, 'daemon:dashboard'),
        onClose: ctx.onClose,
        ...(assetsDir ? { assetsDir } : {}),
      });
      try {
        await next.listen(address, port);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE') {
          throw new DaemonError(
            'dashboard_port_in_use',
            `Port ${port} is taken by another program: choose another with --port or SVC_DASHBOARD_PORT.`,
          );
        }
        if (code === 'EADDRNOTAVAIL')
          throw new DaemonError('dashboard_host_not_loopback', `${host} is not available on this machine.`);
        throw err;
      }
      server = next;
      ctx.log.info({ url: server.baseUrl }, 'dashboard serving');
    }
    return { url: server.launchUrl(), base_url: server.baseUrl, host: server.host, port: server.port };
  };

  route(app, API.openDashboard, async (request) => {
    // one at a time: two launches at once must not both start a server
    const run = pending.then(() => open(request.body ?? {}));
    pending = run.catch(() => undefined);
    return run;
  });
  app.addHook('onClose', async () => {
    await server?.close();
  });
}
