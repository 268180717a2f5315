import { LOCAL_CAPABILITY } from '../../agents/local-agent.js';
import { DAEMON_API as API, type DaemonStatus } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import type { ReceivePath } from '../../session/session.js';
import { type DaemonApp, route } from './route.js';

function kindOf(capabilities: readonly string[]): 'agent' | 'uplink' | 'local' {
  if (capabilities.includes('http-relay')) return 'agent';
  return capabilities.includes(LOCAL_CAPABILITY) ? 'local' : 'uplink';
}

function receiveOf(p: ReceivePath): Pick<DaemonStatus['agents'][number], 'receive' | 'source'> {
  return p.via === 'source' ? { receive: 'source', source: p.durable } : { receive: 'relay-stream' };
}

export function statusRoutes(app: DaemonApp, ctx: DaemonContext): void {
  route(app, API.status, async () => ({
    version: ctx.config.version,
    pid: process.pid,
    home: ctx.config.home,
    started_at: ctx.startedAt,
    vault: {
      kind: ctx.vault.kind,
      ...(ctx.vault.warning ? { warning: ctx.vault.warning } : {}),
      ...(ctx.vault.locked ? { locked: true as const } : {}),
    },
    agents: [
      ...ctx.agents.sessions().map((s) => ({
        name: s.name,
        agent_number: s.config.agent_number,
        deployment: s.config.deployment,
        session: s.state,
        ...(s.lastError ? { session_error: s.lastError } : {}),
        kind: kindOf(s.config.capabilities),
        ...(s.config.capabilities.includes('http-relay') ? receiveOf(s.receivePath) : {}),
      })),
      // out of service: no session; the code, the file and what to do (and what its agent.json says, if it can be read)
      ...ctx.agents.outOfService().map(({ name, config, error }) => ({
        name,
        ...(config
          ? { agent_number: config.agent_number, deployment: config.deployment, kind: kindOf(config.capabilities) }
          : {}),
        session: 'unusable' as const,
        session_error: error.message,
        unusable: { error: error.code, message: error.message, file: error.file, hint: error.hint },
      })),
    ].sort((a, b) => a.name.localeCompare(b.name)),
  }));

  // one cheap read for status lines: no relay call, one count per agent
  route(app, API.summary, async () => ctx.agents.summary());
  route(app, API.archiveIntegrity, async (request) => ctx.agents.integrity(request.query));
  route(app, API.resetArchive, async (request) => {
    const answer = await ctx.agents.resetArchive(request.params.agent);
    // the new session takes over the named source the old one received through
    const session = ctx.agents.sessions().find((s) => s.name === answer.agent);
    if (session) await ctx.localStack.sessionReplaced(session);
    return answer;
  });

  route(app, API.shutdown, async (_request, reply) => {
    // answer first, then stop: the caller sees {} and the socket closes after
    reply.raw.once('finish', () => setImmediate(ctx.requestShutdown));
    return {};
  });
}
