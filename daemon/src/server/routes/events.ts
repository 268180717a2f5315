/** GET /v1/events?agent=: NDJSON, one DaemonEvent per line, until the client goes away. */
import { DAEMON_API as API } from '../../client/api.js';
import type { DaemonContext } from '../../context.js';
import { type DaemonApp, route } from './route.js';

const KEEPALIVE_MS = 15_000;

export function eventRoutes(app: DaemonApp, ctx: DaemonContext): void {
  route(app, API.events, async (request, reply) => {
    const ref = request.query.agent;
    // the filter accepts the local name or the agent number; resolving also checks it exists
    const name = ref ? ctx.agents.resolve(ref).name : undefined;
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    raw.flushHeaders();
    const off = ctx.events.subscribe((event) => {
      // the daemon ends the stream on close before its sessions report going offline
      if (raw.writableEnded) return;
      if (name === undefined || event.agent === name) raw.write(`${JSON.stringify(event)}\n`);
    });
    // an empty line now and then lets a client notice a dead socket; readers skip blank lines
    const keepalive = setInterval(() => raw.write('\n'), KEEPALIVE_MS);
    const unhook = ctx.onClose(() => raw.end());
    raw.once('close', () => {
      clearInterval(keepalive);
      off();
      unhook();
    });
  });
}
