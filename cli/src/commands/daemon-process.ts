/** start and stop: the daemon process of this SVC_HOME (and, on request, its local nats-server). */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type DaemonStatus,
  daemonCommand,
  localStackFiles,
  resolvePorts,
  stopOwnedServer,
  waitForExit,
} from '@svc/daemon/client';
import { Command } from 'commander';
import type { App, Run } from '../app.js';
import { CliError, usageError } from '../errors.js';
import { action, intParser, withAs, withJson, withVerbose } from '../options.js';
import { warn } from '../output.js';
import { outOfServiceText, warnIfVaultLocked } from '../render.js';

/** How often a foreground start asks whether the daemon it started answers yet. */
const READY_POLL_MS = 100;
/**
 * How long `svc stop` waits, once the daemon answered, for its process to exit: it still
 * stops its sessions and the local nats-server and closes its archives (a file restored
 * meanwhile could be written over by the closing daemon).
 */
export const STOP_WAIT_MS = 30_000;
/** How often `svc stop` looks whether the daemon's process is gone. */
const EXIT_POLL_MS = 20;

type HowRunning = 'already' | 'background' | 'foreground';

/**
 * What every `svc start` says once the daemon answers: the same sentence and the same JSON
 * (the status, whether it already ran, whether this command holds it), so a script reads
 * one shape whichever way it was started.
 */
function sayRunning(run: Run, status: DaemonStatus, how: HowRunning): void {
  const stop = how === 'foreground' ? 'stop it with Ctrl-C or `svc stop`' : 'stop it with `svc stop` (same SVC_HOME)';
  const where = { already: 'already runs', background: 'runs in the background', foreground: 'runs in the foreground' }[
    how
  ];
  run.print(
    { ...status, already_running: how === 'already', foreground: how === 'foreground' },
    () => `The svc daemon ${where} (pid ${status.pid}, version ${status.version}, home ${status.home}); ${stop}.\n`,
  );
  // it runs, but not for every agent: say which are out of service and what to do
  for (const line of status.agents.map(outOfServiceText)) if (line) warn(run.app.io.stderr, line);
  // nor for any, while no secret can be read
  warnIfVaultLocked(run.app.io.stderr, status);
}

/** The status of a daemon that answers on this home's socket, without starting one. */
function answering(app: App): Promise<DaemonStatus | undefined> {
  return app.link(false).then(
    (l) => l.status(),
    () => undefined,
  );
}

/**
 * Runs the daemon as a child holding this terminal, says so once it answers, and returns
 * when it exits. A signal to this process is passed on, so the daemon never outlives the
 * command that holds it (Ctrl-C reaches both; the daemon's close is idempotent).
 */
async function runInForeground(run: Run): Promise<void> {
  const { command, args, cwd } = daemonCommand();
  run.info(`running the daemon in the foreground: ${command} ${args.join(' ')}`);
  const child = spawn(command, args, { cwd, stdio: 'inherit', env: { ...run.env, SVC_HOME: run.app.home } });
  let exitCode: number | undefined;
  const exited = new Promise<number>((resolve) =>
    child.once('exit', (c) => {
      exitCode = c ?? 1;
      resolve(exitCode);
    }),
  );
  const signal = run.stopSignal();
  const passOn = () => child.kill('SIGTERM');
  signal.addEventListener('abort', passOn, { once: true });
  try {
    let other = false;
    for (;;) {
      const status = await answering(run.app);
      if (status) {
        // a daemon that won the race to start answers too; this child then exits with 3
        other = status.pid !== child.pid;
        sayRunning(run, status, other ? 'already' : 'foreground');
        break;
      }
      if (exitCode !== undefined || signal.aborted) break;
      await sleep(READY_POLL_MS);
    }
    const code = await exited;
    if (code === 3 && other) return;
    if (code !== 0) throw new CliError('daemon_unavailable', `The daemon exited with status ${code}.`);
  } finally {
    signal.removeEventListener('abort', passOn);
  }
}

export function startCommand(app: App): Command {
  const start = withVerbose(
    withJson(
      withAs(
        new Command('start')
          .description(
            'start the svc daemon for this SVC_HOME (in the foreground, or -b in the background); does nothing if it already runs',
          )
          .option('--local-only', 'local server, no upstream bridge, no cross-machine delivery', false)
          .option('--port <port>', 'leaf port (default env SVC_LEAF_PORT else 4222)', intParser(1, 65535, '--port'))
          .option(
            '--monitor-port <port>',
            'monitor port (default env SVC_MONITOR_PORT else 8222)',
            intParser(1, 65535, '--monitor-port'),
          )
          .option('--listen <host>', 'listen address', '127.0.0.1')
          .option('-b, --background', 'run in the background', false),
      ),
    ),
  );
  return action(app, start, async (run) => {
    const o = run.opts<{
      localOnly: boolean;
      as?: string;
      port?: number;
      monitorPort?: number;
      listen: string;
      background: boolean;
    }>();
    const uplinkAsked =
      o.as !== undefined || o.port !== undefined || o.monitorPort !== undefined || o.listen !== '127.0.0.1';
    if (o.localOnly || uplinkAsked) {
      // The local nats-server is a child of the daemon: the daemon runs in the background for it.
      let ports: { port: number; monitorPort: number };
      try {
        ports = resolvePorts(o, run.env);
      } catch (err) {
        throw usageError((err as Error).message);
      }
      const link = await app.link(true);
      const stack = await link.localStack('start', {
        local_only: o.localOnly,
        port: ports.port,
        monitor_port: ports.monitorPort,
        listen: o.listen,
        ...(o.as !== undefined && !o.localOnly ? { as: o.as } : {}),
      });
      run.print(
        stack,
        () =>
          `The local nats-server ${stack.already_running ? 'already runs' : 'runs'} (pid ${stack.pid}) on ${stack.url}, monitoring ${stack.monitor_url}; ${
            stack.uplink
              ? `leaf of ${stack.uplink} (sources: ${(stack.sources ?? []).join(', ') || 'none'})`
              : 'local only, no uplink'
          }.\n`,
      );
      return;
    }
    const running = await answering(app);
    // idempotent, in the foreground or -b: the daemon this command would start is already there
    if (running) {
      sayRunning(run, running, 'already');
      return;
    }
    if (o.background) {
      sayRunning(run, await app.link(true).then((l) => l.status()), 'background');
      return;
    }
    await runInForeground(run);
  });
}

export function stopCommand(app: App): Command {
  const stop = withVerbose(
    withJson(
      new Command('stop')
        .description('stop the svc daemon of this SVC_HOME')
        .option('--local', 'stop only the local-only server', false),
    ),
  );
  return action(app, stop, async (run) => {
    if (run.opts<{ local: boolean }>().local) {
      const running = await app.link(false).then(
        (l) => l,
        () => undefined,
      );
      if (running) {
        const { stopped } = await running.localStack('stop');
        run.print({ target: 'local-nats-server', stopped }, () =>
          stopped ? 'Stopped the local nats-server.\n' : 'The local nats-server was not running.\n',
        );
        return;
      }
      // No daemon: signal the server only if its pid file and the process itself prove it is ours.
      const pid = await stopOwnedServer(localStackFiles(join(app.home, 'run')));
      run.print(
        { target: 'local-nats-server', stopped: pid !== undefined, ...(pid === undefined ? {} : { pid }) },
        () =>
          pid === undefined
            ? 'The local nats-server was not running.\n'
            : `Stopped the local nats-server (pid ${pid}).\n`,
      );
      return;
    }
    let link: Awaited<ReturnType<App['link']>>;
    try {
      link = await app.link(false);
    } catch {
      run.print({ target: 'daemon', stopped: false }, () => 'No svc daemon is running.\n');
      return;
    }
    const { pid } = await link.status();
    await link.shutdown();
    // the daemon answers first and closes after: stopped is when its process is gone (a
    // daemon run inside this very process, as tests do, cannot be waited for here)
    if (pid !== process.pid) {
      run.info(`waiting for the daemon (pid ${pid}) to exit`);
      const waitMs = app.io.stopWaitMs ?? STOP_WAIT_MS;
      if (!(await waitForExit(pid, waitMs, EXIT_POLL_MS))) {
        throw new CliError(
          'daemon_stopping',
          `The svc daemon (pid ${pid}) is stopping but has not exited within ${waitMs / 1000} s; it may still be writing the files under ${app.home}: leave them alone until process ${pid} is gone (ps -p ${pid}).`,
        );
      }
    }
    run.print({ target: 'daemon', stopped: true }, () => 'Stopped the svc daemon.\n');
  });
}
