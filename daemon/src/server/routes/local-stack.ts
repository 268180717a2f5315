/**
 * The local stack's socket routes: the daemon supervises one nats-server child for this
 * home (`svc start --local-only`), stopped with the daemon or by `svc stop --local`.
 */
import { mkdirSync } from 'node:fs';
import { DAEMON_API as API } from '../../client/api.js';
import { localStackFiles } from '../../client/local-stack/server-config.js';
import type { DaemonContext } from '../../context.js';
import { DaemonError } from '../../errors.js';
import { LocalStack } from '../../local-stack/supervisor.js';
import { prepareUplink, uplinkIdentity } from '../../local-stack/uplink.js';
import { type DaemonApp, route } from './route.js';

export function localStackRoutes(app: DaemonApp, ctx: DaemonContext): void {
  const files = localStackFiles(ctx.paths.runDir);
  const stack = new LocalStack(files, ctx.log.child({ subsystem: 'daemon:local-stack' }));
  ctx.onClose(() => void stack.stop());

  route(app, API.localStackStatus, async () => stack.status());

  route(app, API.localStackStart, async (request) => {
    const b = request.body;
    const base = { listen: b.listen, port: b.port, monitorPort: b.monitor_port };
    if (b.local_only) return stack.start(base);
    if (stack.status().running) throw new DaemonError('local_stack_running');
    const identity = uplinkIdentity(ctx.agents, b.as);
    mkdirSync(files.dir, { recursive: true, mode: 0o700 });
    const uplink = await prepareUplink(ctx.agents, identity, files.credsFile);
    const status = await stack.start({ ...base, uplink: { leafUrl: uplink.leafUrl, credsFile: uplink.credsFile } });
    return {
      ...status,
      inbox_prefix: uplink.inboxPrefix,
      sources: uplink.sources,
      creds_expire_at: uplink.expiresAt,
    };
  });

  route(app, API.localStackStop, async () => ({ stopped: await stack.stop() }));
}
