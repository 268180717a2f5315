/** `svc mcp`: MCP over stdio for one local agent (../mcp/server.ts, loaded only here). */
import { Writable } from 'node:stream';
import { DaemonClient } from '@svc/daemon/client';
import { Command } from 'commander';
import type { App, Run } from '../app.js';
import { CliError } from '../errors.js';
import { action, withAs, withVerbose } from '../options.js';
import type { Writer } from '../output.js';

/** stdout as a stream for the transport (tests hand in a plain writer). */
function asWritable(w: Writer): Writable {
  if (w instanceof Writable) return w;
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      w.write(chunk.toString());
      done();
    },
  });
}

/**
 * The agent to serve. An unknown agent fails here, before the client starts talking to a
 * server that cannot work. With --no-autostart and no daemon yet (an MCP host starts its
 * servers with its session, maybe before the owner's `svc start -b`), an agent named by
 * --as or SVC_AGENT is served unchecked: each tool says the daemon is not running, and
 * works once it is. So is one whose daemon does not answer within a tool's deadline (it
 * hangs): the host gets its server at once, not a silent minute and an exit.
 */
async function whoToServe(
  run: Run,
  autostart: boolean,
  callTimeoutMs: number,
): Promise<{ name: string; agent_number?: string; unchecked?: string }> {
  try {
    const { link, agent } = await run.asAgent(callTimeoutMs);
    return await link.getAgent(agent);
  } catch (err) {
    const named = run.opts().as?.trim() || run.env.SVC_AGENT?.trim();
    const code = (err as { code?: unknown }).code;
    const unchecked = code === 'daemon_timeout' || (!autostart && code === 'daemon_unavailable');
    if (!named || !unchecked) throw err;
    return { name: named, unchecked: code as string };
  }
}

export function mcpCommand(app: App): Command {
  const mcp = withVerbose(
    withAs(
      new Command('mcp').description(
        'serve MCP over stdio: tools and resources to message as one agent, through the daemon',
      ),
    ),
  );
  return action(app, mcp, async (run) => {
    const stdin = app.io.stdin;
    if (!stdin) throw new CliError('io_error', 'svc mcp speaks MCP on standard input, and there is none.');
    let root = run.cmd;
    while (root.parent) root = root.parent;
    const autostart = root.opts().autostart !== false;
    const { createSvcMcp, CALL_TIMEOUT_MS, SEND_TIMEOUT_MS } = await import('../mcp/server.js');
    const me = await whoToServe(run, autostart, CALL_TIMEOUT_MS);
    const server = createSvcMcp({
      client: new DaemonClient({ home: app.home, timeoutMs: CALL_TIMEOUT_MS }),
      sender: new DaemonClient({ home: app.home, timeoutMs: SEND_TIMEOUT_MS }),
      // a daemon stopped mid-session is started again as at the start, unless --no-autostart
      ...(autostart
        ? {
            startDaemon: async () =>
              (await import('../daemon-link.js')).connectDaemon({ home: app.home, autostart: true, env: app.io.env }),
          }
        : {}),
      agent: me.name,
      log: (line) => run.info(`mcp: ${line}`),
    });
    run.info(
      me.unchecked === undefined
        ? `mcp: serving as ${me.name} (${me.agent_number})`
        : me.unchecked === 'daemon_timeout'
          ? `mcp: the svc daemon does not answer; serving as ${me.name}, whose tools answer daemon_timeout until it does`
          : `mcp: the svc daemon is not running; serving as ${me.name}, whose tools answer daemon_unavailable until it runs`,
    );
    await server.start(stdin as NodeJS.ReadableStream as import('node:stream').Readable, asWritable(app.io.stdout));
  });
}
