import { DAEMON_API as API } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { unreadCount } from '../../messaging/conversations.js';
import { type DaemonApp, route } from './route.js';

export function statusRoutes(app: DaemonApp, ctx: DaemonContext): void {
  route(app, API.status, async () => ({
    version: ctx.config.version,
    pid: process.pid,
    home: ctx.config.home,
    started_at: ctx.startedAt,
    vault: { kind: ctx.vault.kind, ...(ctx.vault.warning ? { warning: ctx.vault.warning } : {}) },
    agents: ctx.agents.sessions().map((s) => ({
      name: s.name,
      agent_number: s.config.agent_number,
      deployment: s.config.deployment,
      session: s.state,
    })),
  }));

  // one cheap read for status lines: no relay call, one count per agent
  route(app, API.summary, async () => ({
    agents: ctx.agents.sessions().map((s) => ({
      name: s.name,
      agent_number: s.config.agent_number,
      session: s.state,
      unread: unreadCount(s.archive),
    })),
  }));

  route(app, API.shutdown, async (_request, reply) => {
    // answer first, then stop: the caller sees {} and the socket closes after
    reply.raw.once('finish', () => setImmediate(ctx.requestShutdown));
    return {};
  });
}
