/**
 * The local stack's socket routes: the daemon supervises one nats-server child for this
 * home (`svc start [--local-only]`), stopped with the daemon or by `svc stop --local`.
 */
import { DAEMON_API as API } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { type DaemonApp, route } from './route.js';

export function localStackRoutes(app: DaemonApp, ctx: DaemonContext): void {
  const stack = ctx.localStack;
  route(app, API.localStackStatus, async () => stack.status());
  route(app, API.localStackStart, async (request) => stack.start(request.body));
  route(app, API.localStackStop, async () => ({ stopped: await stack.stop() }));
}
