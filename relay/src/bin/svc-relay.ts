#!/usr/bin/env node
import { statSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve as resolvePath } from 'node:path';
/** svc-relay: parses arguments and calls the relay library. Nothing else lives here. */
import { CAPABILITIES, type Capability, ERROR_CATALOG, GRANT_TTL, SvcError } from '@svc/shared';
import { everyCommand, usageLine } from '@svc/shared/usage-line';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { RELAY_VERSION } from '../app.js';
import { NATS_SERVER_NOT_FOUND } from '../bus/managed-server.js';
import { connectAsRelay, managedNatsUrl } from '../bus/operator-access.js';
import { writeOperatorFiles } from '../bus/server-config.js';
import { buildConfig, type RelayConfig } from '../config/config.js';
import { mergeSettings, type RawSettings, settingsFromEnv, settingsFromFile } from '../config/env.js';
import { deploymentPaths, initDeployment } from '../deployment/deployment.js';
import {
  assertSameBus,
  devAgentId,
  natsUrlWithoutUserInfo,
  recordServedSettings,
  servedSettings,
} from '../deployment/local-settings.js';
import { createRelay, leafUrlOf, openLedger, openOperatorState } from '../index.js';
import { createStores } from '../ledger/stores.js';
import { prettyDestination } from '../log-pretty.js';
import { createLogger } from '../logger.js';
import { mintGrant, requireAgentId, requireServedTenant } from '../services/grants.js';
import { reconcileSourceCapacity, reconciliationText } from '../services/source-capacity.js';
import { commandFor, shellQuote } from './command-hint.js';

interface CommonFlags {
  config?: string;
  listen?: string;
  publicUrl?: string;
  dataDir?: string;
  deploymentId?: string;
  tenants?: string;
  natsUrl?: string;
  ledgerDsnFile?: string;
  logLevel?: string;
  logFormat?: 'json' | 'pretty';
  json?: boolean;
}

function withSettings(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'JSON file with settings (lower-case setting names)')
    .option('--listen <host:port>', 'SVC_RELAY_LISTEN')
    .option('--public-url <url>', 'SVC_RELAY_PUBLIC_URL')
    .option('--data-dir <dir>', 'SVC_RELAY_DATA_DIR')
    .option('--deployment-id <id>', 'SVC_RELAY_DEPLOYMENT_ID')
    .option('--tenants <list>', 'SVC_RELAY_TENANTS (comma list; the first is the default)')
    .option('--nats-url <url>', 'SVC_RELAY_NATS_URL')
    .option(
      '--ledger-dsn-file <file>',
      'SVC_RELAY_LEDGER_DSN_FILE: a file holding a postgres:// URL (PostgreSQL ledger)',
    )
    .option('--log-level <level>', 'SVC_RELAY_LOG_LEVEL')
    .option('--json', 'print JSON');
}

/** serve and dev: how the logs look (readable on a terminal, JSON lines otherwise). */
function withLogFormat(cmd: Command): Command {
  return cmd.addOption(
    new Option('--log-format <format>', 'log lines: pretty (default on a terminal) or json').choices([
      'json',
      'pretty',
    ]),
  );
}

/**
 * The local operator commands (grant, agent revoke) take only the data dir: everything
 * else comes from what the relay on it recorded, so a code names the URL it serves.
 */
function withDataDir(cmd: Command): Command {
  return cmd
    .option('--config <file>', 'JSON file with settings (only data_dir and ledger_dsn_file are read)')
    .option('--data-dir <dir>', 'SVC_RELAY_DATA_DIR: the data dir of the relay (default ./.svc-relay)')
    .option(
      '--ledger-dsn-file <file>',
      'SVC_RELAY_LEDGER_DSN_FILE: the PostgreSQL ledger (default: the one the relay on the data dir last ran with)',
    )
    .option('--json', 'print JSON');
}

/** A flag's value; an empty one (`--ledger-dsn-file "$UNSET"`) is refused, as an empty setting is. */
function given(flag: string, value: string | undefined): string | undefined {
  if (value === '')
    throw new SvcError('usage_error', `${flag} is empty: leave it out for the default, or give a value`);
  return value;
}

/** The data dir's recorded settings; fails, creating nothing, when it holds no deployment. */
function operatorConfig(flags: { config?: string; dataDir?: string; ledgerDsnFile?: string }): RelayConfig {
  given('--config', flags.config);
  given('--data-dir', flags.dataDir);
  given('--ledger-dsn-file', flags.ledgerDsnFile);
  const raw = mergeSettings(
    settingsFromEnv(process.env),
    flags.config ? settingsFromFile(flags.config) : {},
    flags.dataDir !== undefined ? { SVC_RELAY_DATA_DIR: flags.dataDir } : {},
    flags.ledgerDsnFile !== undefined ? { SVC_RELAY_LEDGER_DSN_FILE: flags.ledgerDsnFile } : {},
  );
  const dataDir = buildConfig({ SVC_RELAY_DATA_DIR: raw.SVC_RELAY_DATA_DIR }).dataDir;
  const served = servedSettings(dataDir);
  const dsnFile = raw.SVC_RELAY_LEDGER_DSN_FILE || served.ledger_dsn_file;
  return buildConfig({
    SVC_RELAY_DATA_DIR: dataDir,
    SVC_RELAY_PUBLIC_URL: served.public_url,
    SVC_RELAY_TENANTS: served.tenants.join(','),
    ...(dsnFile ? { SVC_RELAY_LEDGER_DSN_FILE: dsnFile } : {}),
  });
}

/** environment, then --config, then flags: each later source overrides the earlier. */
function configFrom(flags: CommonFlags, extra: RawSettings = {}): RelayConfig {
  const fromFlags: RawSettings = {};
  const flagOf = new Map<string, string>();
  const set = (k: keyof RawSettings, flag: string, v: string | undefined) => {
    if (given(flag, v) === undefined) return;
    fromFlags[k] = v;
    flagOf.set(k, flag);
  };
  given('--config', flags.config);
  set('SVC_RELAY_LISTEN', '--listen', flags.listen);
  set('SVC_RELAY_PUBLIC_URL', '--public-url', flags.publicUrl);
  set('SVC_RELAY_DATA_DIR', '--data-dir', flags.dataDir);
  set('SVC_RELAY_DEPLOYMENT_ID', '--deployment-id', flags.deploymentId);
  set('SVC_RELAY_TENANTS', '--tenants', flags.tenants);
  set('SVC_RELAY_NATS_URL', '--nats-url', flags.natsUrl);
  set('SVC_RELAY_LEDGER_DSN_FILE', '--ledger-dsn-file', flags.ledgerDsnFile);
  set('SVC_RELAY_LOG_LEVEL', '--log-level', flags.logLevel);
  try {
    return buildConfig(
      mergeSettings(extra, settingsFromEnv(process.env), flags.config ? settingsFromFile(flags.config) : {}, fromFlags),
    );
  } catch (err) {
    throw namingFlags(err, flagOf);
  }
}

/** A setting's error names the flag that gave its value (`--listen must be host:port`), not its variable. */
function namingFlags(err: unknown, flagOf: Map<string, string>): unknown {
  if (!(err instanceof SvcError) || err.code !== 'config_invalid' || flagOf.size === 0) return err;
  const message = err.message.replace(/\bSVC_RELAY_[A-Z_]+\b/g, (name) => flagOf.get(name) ?? name);
  return message === err.message ? err : new SvcError('config_invalid', message, { cause: err });
}

/** Binds host:port and lets go at once: rejects with the listen error (EADDRINUSE, EACCES …) that the relay would meet. */
function probeListen(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolvePromise, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolvePromise()));
  });
}

function out(flags: { json?: boolean }, json: unknown, text: string): void {
  process.stdout.write(flags.json ? `${JSON.stringify(json, null, 2)}\n` : `${text}\n`);
}

async function serve(config: RelayConfig, dev: boolean, flags: CommonFlags): Promise<void> {
  // Output that goes nowhere any more (the reader of a pipe exited: `| head`, a log shipper
  // that died) made the next log line an uncaught EPIPE: the relay died at once, leaving its
  // nats-server and its lock behind. It stops as on SIGTERM instead, with exit status 1 (it
  // can no longer say why).
  let stop: ((reason: string, code?: number) => void) | undefined;
  let outputLost = false;
  // Every signal, not only the first: Ctrl-C on `npm start` sends SIGINT twice (the terminal's
  // process group, then npm forwarding it), and the second, with no handler left, killed the
  // relay mid-stop and left its detached nats-server running. One during start-up is kept
  // and acted on once the relay runs, so that what it started stops too.
  let signalled: string | undefined;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      signalled ??= signal;
      stop?.(signal);
    });
  }
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', () => {
      outputLost = true;
      stop?.('output closed', 1);
    });
  }
  assertSameBus(config.dataDir, config.nats.url);
  const pretty = (flags.logFormat ?? (process.stderr.isTTY ? 'pretty' : 'json')) === 'pretty';
  const logger = createLogger(config.logLevel, pretty ? prettyDestination(process.stderr) : process.stderr);
  // A port taken now fails before the data dir gets a deployment, a nats-server and the
  // tenants' streams; the relay's own listen stays the authority (the port can go in between).
  const relay = await createRelay(config, {
    autoInitDeployment: dev,
    logger,
    listenProbe: () => probeListen(config.host, config.port),
  });
  try {
    await relay.start();
  } catch (err) {
    // the port is taken (or the like): the managed nats-server, already running, stops too
    await relay.close().catch(() => undefined);
    throw err;
  }
  const port = new URL(relay.url).port;
  recordServedSettings(config.dataDir, {
    public_url: config.publicUrl,
    listen: `${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
    tenants: config.tenants,
    ...(config.ledgerDsnFile === undefined ? {} : { ledger_dsn_file: config.ledgerDsnFile }),
    ...(config.nats.url === undefined ? {} : { nats_url: natsUrlWithoutUserInfo(config.nats.url) }),
  });
  let stopping = false;
  stop = (signal: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    relay.context.logger.info({ signal }, 'shutting down');
    relay.close().then(
      () => process.exit(code),
      () => process.exit(1),
    );
  };
  if (signalled) return stop(signalled);
  if (outputLost) stop('output closed', 1);
  if (dev) {
    const ctx = relay.context;
    const svc = commandFor('svc');
    const svcRelay = commandFor('svc-relay');
    const dataDir = shellQuote(config.dataDir);
    const bundle = deploymentPaths(config.dataDir).trustBundle;
    // the same agent across restarts on this data dir: a new code only while it is not enrolled
    const agentId = devAgentId(config.dataDir);
    const enrolled = (await ctx.ledger.activeAgent(config.defaultTenant, agentId)) !== undefined;
    const grant = enrolled
      ? undefined
      : await mintGrant(ctx, {
          tenantId: config.defaultTenant,
          agentId,
          capabilities: ['http-relay'],
          createdBy: 'local-operator',
        });
    // (on PostgreSQL too: grant finds the ledger in the settings recorded above)
    const mintMore = `Mint more with: ${svcRelay} grant --data-dir ${dataDir} --agent-id <id>   ·   stop with Ctrl-C`;
    out(
      flags,
      {
        url: relay.url,
        public_url: config.publicUrl,
        deployment_id: ctx.deployment.deploymentId,
        data_dir: config.dataDir,
        trust_bundle: bundle,
        agent_id: agentId,
        enrolled,
        ...grant,
      },
      [
        `svc-relay ${RELAY_VERSION} (dev) listening on ${relay.url}`,
        `  deployment ${ctx.deployment.deploymentId}, tenant ${config.defaultTenant}, data in ${config.dataDir}`,
        `  trust bundle: ${bundle}`,
        '',
        ...(grant
          ? [
              `Enrollment code for agent ${agentId} (single use, expires ${grant.expires_at}):`,
              '',
              `  ${svc} deployment fetch --url ${config.publicUrl} --trust ${shellQuote(bundle)} --name dev`,
              `  ${svc} register --enrollment-grant ${grant.enrollment_code}`,
            ]
          : [`Agent ${agentId} is enrolled on this relay already (its client keeps its session).`]),
        '',
        mintMore,
      ].join('\n'),
    );
  }
}

function program(): Command {
  // commands made with .command() inherit these: commander prints no refusal (nor the help
  // it would dump with one) and throws instead, for the one error line below
  const root = new Command('svc-relay')
    .description('svc relay: end-to-end encrypted messaging between agents')
    .version(RELAY_VERSION, '--version')
    .exitOverride()
    .configureOutput({ writeErr: () => undefined, outputError: () => undefined });

  withLogFormat(
    withSettings(root.command('serve').description('run the relay (settings: environment, --config, flags)')),
  ).action(async (flags: CommonFlags) => serve(configFrom(flags), false, flags));

  withLogFormat(
    withSettings(
      root
        .command('dev')
        .description('run the relay on embedded defaults with a generated deployment; prints an enrollment code'),
    ),
  ).action(async (flags: CommonFlags) => serve(configFrom(flags), true, flags));

  const deployment = root.command('deployment').description('the deployment identity');
  withSettings(
    deployment.command('init').description('create the deployment signer, relay key, trust bundle and signed document'),
  ).action(async (flags: CommonFlags) => {
    const config = configFrom(flags);
    const d = await initDeployment(config.dataDir, {
      deploymentId: config.deploymentId,
      publicUrl: config.publicUrl,
      // signed now: with the signer moved offline afterwards, it is never signed again
      leafUrl: leafUrlOf(config),
      tenants: config.tenants,
    });
    out(
      flags,
      {
        deployment_id: d.deploymentId,
        trust_bundle: d.paths.trustBundle,
        signer: d.paths.signer,
        document: d.paths.document,
      },
      [
        `deployment ${d.deploymentId} created in ${config.dataDir}`,
        `  trust bundle (give it to agent owners out of band): ${d.paths.trustBundle}`,
        `  deployment signer (keep safe; may be moved offline): ${d.paths.signer}`,
      ].join('\n'),
    );
  });

  /** --ttl as a whole number of seconds in range: "5x", "1.5" or "30" are refused as the option's. */
  function ttlSeconds(raw: string): number {
    const n = Number(raw);
    if (!/^\d+$/.test(raw) || n < GRANT_TTL.min || n > GRANT_TTL.max) {
      throw new InvalidArgumentError(`give a whole number of seconds from ${GRANT_TTL.min} to ${GRANT_TTL.max}.`);
    }
    return n;
  }

  withDataDir(root.command('grant').description('mint a single-use enrollment grant locally (no token needed)'))
    .requiredOption('--agent-id <id>', 'internal agent identifier')
    .option('--agent-number <number>', 'public agent number (default: the agent id)')
    .option('--tenant <id>', "tenant (default: the relay's first tenant)")
    .addOption(new Option('--capability <cap...>', 'capabilities').choices([...CAPABILITIES]).default(['http-relay']))
    .option(
      '--ttl <seconds>',
      `lifetime of the grant in seconds, ${GRANT_TTL.min} to ${GRANT_TTL.max} (default ${GRANT_TTL.default}: a day)`,
      ttlSeconds,
    )
    .action(
      async (
        flags: CommonFlags & {
          agentId: string;
          agentNumber?: string;
          tenant?: string;
          capability: Capability[];
          ttl?: number;
        },
      ) => {
        const config = operatorConfig(flags);
        const { deployment, ledger } = await openOperatorState(config);
        try {
          const grant = await mintGrant(
            { config, deployment, ledger, now: Date.now },
            {
              tenantId: flags.tenant ?? config.defaultTenant,
              agentId: flags.agentId,
              agentNumber: flags.agentNumber,
              capabilities: flags.capability,
              ttlSeconds: flags.ttl,
              createdBy: 'local-operator',
            },
          );
          // the code alone on stdout, so that CODE=$(svc-relay grant …) is the code
          out(flags, grant, grant.enrollment_code);
          if (!flags.json) {
            // a machine that does not trust the deployment yet needs its trust bundle first
            const svc = commandFor('svc');
            const bundle = shellQuote(deploymentPaths(config.dataDir).trustBundle);
            process.stderr.write(
              [
                '',
                'Register with (the first line once per machine, with this trust bundle):',
                `  ${svc} deployment fetch --url ${config.publicUrl} --trust ${bundle}`,
                `  ${svc} register --enrollment-grant ${grant.enrollment_code}`,
                '',
              ].join('\n'),
            );
          }
        } finally {
          await ledger.close();
        }
      },
    );

  const agent = root.command('agent').description('agent identities');
  withDataDir(agent.command('revoke').description('revoke an agent: its API keys, tokens and bus users stop working'))
    .requiredOption('--agent-id <id>', 'internal agent identifier')
    .option('--tenant <id>', "tenant (default: the relay's first tenant)")
    .action(async (flags: CommonFlags & { agentId: string; tenant?: string }) => {
      const config = operatorConfig(flags);
      const tenant = flags.tenant ?? config.defaultTenant;
      // as grant refuses them: "no active agent" would hide the mistyped tenant or id
      requireServedTenant(config.tenants, tenant);
      requireAgentId(flags.agentId);
      const { ledger } = await openOperatorState(config);
      try {
        const row = await ledger.revokeAgent(tenant, flags.agentId, Date.now());
        if (!row) throw new SvcError('not_found', `no active agent ${flags.agentId} in tenant ${tenant}`);
        out(
          flags,
          {
            agent_id: row.agent_id,
            tenant_id: tenant,
            revoked_at: new Date(row.revoked_at as number).toISOString(),
            cleanup_pending: true,
          },
          `revoked ${row.agent_id} in tenant ${tenant}; the running relay finishes the bus cleanup`,
        );
      } finally {
        await ledger.close();
      }
    });

  const nats = root.command('nats').description('the message bus');
  nats
    .command('operator-init')
    .description(
      'create, once, the operator and system account of an external NATS (keys, creds) and operator.conf for nats-server configs to include',
    )
    .requiredOption('--dir <dir>', 'where to write them (re-running keeps the keys it finds)')
    .option('--json', 'print JSON')
    .action(async (flags: { dir: string; json?: boolean }) => {
      const files = await writeOperatorFiles(resolvePath(flags.dir));
      out(
        flags,
        {
          include_file: files.includeFile,
          operator_seed_file: files.operatorSeedFile,
          system_creds_file: files.systemCredsFile,
        },
        [
          `nats-server configs include: ${files.includeFile}`,
          'relay settings:',
          `  SVC_RELAY_NATS_OPERATOR_SEED_FILE=${files.operatorSeedFile}`,
          `  SVC_RELAY_NATS_SYSTEM_CREDS_FILE=${files.systemCredsFile}`,
        ].join('\n'),
      );
    });
  withDataDir(
    nats
      .command('reconcile-source-capacity')
      .description(
        "compare the bus's consumers with the ledger's named sources, per tenant; changes nothing without --apply",
      ),
  )
    .option(
      '--deployment-id <id>',
      "a guard: the deployment the data dir must hold (default: the data dir's, whichever it is)",
    )
    .option('--ledger-db <file>', 'the SQLite ledger (default: ledger.db in the data dir)')
    .option(
      '--nats-url <url>',
      'SVC_RELAY_NATS_URL (default: the external NATS the relay on the data dir last ran with, else its managed nats-server)',
    )
    .option('--apply', 'delete consumers without a ledger row and release rows without a consumer')
    .action(
      async (
        flags: CommonFlags & { deploymentId?: string; ledgerDb?: string; ledgerDsnFile?: string; apply?: boolean },
      ) => {
        const config = operatorConfig(flags);
        const { deployment, ledger: dataDirLedger } = await openOperatorState(config);
        // the data dir's ledger, unless --ledger-db names another
        let ledger = dataDirLedger;
        try {
          if (flags.deploymentId !== undefined && deployment.deploymentId !== flags.deploymentId)
            throw new SvcError(
              'config_invalid',
              `the data dir ${config.dataDir} holds deployment ${deployment.deploymentId}, not ${flags.deploymentId}`,
            );
          if (flags.ledgerDb !== undefined) {
            // a ledger named that is not there would be created empty, and --apply would then
            // delete every named source's consumer as one without a row
            if (!statSync(flags.ledgerDb, { throwIfNoEntry: false })?.isFile())
              throw new SvcError(
                'usage_error',
                `--ledger-db ${flags.ledgerDb} is not a file: give the relay's ledger (ledger.db in its data dir), or leave it out`,
              );
            await dataDirLedger.close();
            ledger = await openLedger({ sqlite: flags.ledgerDb }, deployment.deploymentId, flags.ledgerDb).catch(
              (err: unknown) => {
                if (err instanceof SvcError) throw err;
                throw new SvcError('config_invalid', `--ledger-db ${flags.ledgerDb}: ${(err as Error).message}`, {
                  cause: err,
                });
              },
            );
          }
        } catch (err) {
          await ledger.close().catch(() => undefined);
          throw err;
        }
        const conns = new Map<string, Awaited<ReturnType<typeof connectAsRelay>>>();
        try {
          const url =
            flags.natsUrl ??
            (process.env.SVC_RELAY_NATS_URL || undefined) ??
            servedSettings(config.dataDir).nats_url ??
            (await managedBusUrl(config.dataDir));
          const connect = (tenant: string) =>
            connectAsRelay(config.dataDir, url, tenant).catch((err: unknown) => {
              throw new SvcError(
                'bus_unavailable',
                `cannot reach the message bus at ${url} (${(err as Error).message}); run this while the relay on ${config.dataDir} runs, or give an external NATS with --nats-url`,
                { cause: err },
              );
            });
          const report = await reconcileSourceCapacity(
            {
              config,
              stores: createStores(ledger),
              connection: async (tenant) => {
                const nc = conns.get(tenant) ?? (await connect(tenant));
                conns.set(tenant, nc);
                return nc;
              },
            },
            { apply: flags.apply === true, now: Date.now() },
          );
          out(flags, report, reconciliationText(report));
        } finally {
          for (const nc of conns.values()) await nc.close().catch(() => undefined);
          await ledger.close();
        }
      },
    );
  return root;
}

/** The managed nats-server's URL, which the relay on the data dir wrote in its config when it first ran. */
async function managedBusUrl(dataDir: string): Promise<string> {
  try {
    return await managedNatsUrl(dataDir);
  } catch (err) {
    // A relay that listened recorded its address; one that did so without a managed
    // nats-server ran on an external NATS (recorded before relays wrote down its URL).
    const ran = servedSettings(dataDir).listen !== undefined;
    throw new SvcError(
      'bus_unavailable',
      ran
        ? `the relay on ${dataDir} uses an external NATS, whose URL the data dir does not record; give it with --nats-url or SVC_RELAY_NATS_URL (the tenant credentials come from the data dir)`
        : `no managed nats-server in ${dataDir} (no relay has run on it); start the relay on it first, or give an external NATS with --nats-url or SVC_RELAY_NATS_URL`,
      { cause: err },
    );
  }
}

/** Commander's refusal as a usage_error of one line (a bare svc-relay names its few commands). */
function usageError(err: CommanderError, at: Command): SvcError {
  return new SvcError('usage_error', usageLine(err, at, { listRootCommands: true }));
}

/** File system refusals of a path the operator gave, in words. */
const PATH_ERRORS: Record<string, string> = {
  ENOTDIR: 'a part of it is a file, not a directory',
  EEXIST: 'a file is in the way of a directory',
  EISDIR: 'it is a directory, not a file',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
};

/** A failure as a coded SvcError, mapped once here; undefined for an unexpected one (internal_error). */
function coded(err: unknown): SvcError | undefined {
  if (err instanceof SvcError) return err;
  if (!(err instanceof Error)) return undefined;
  if (err.message === NATS_SERVER_NOT_FOUND) return new SvcError('dependency_missing', err.message, { cause: err });
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  // a path given (a data dir, --dir) where a file or a permission is in the way
  const why = e.path === undefined ? undefined : PATH_ERRORS[e.code ?? ''];
  if (why !== undefined) {
    return new SvcError('config_invalid', `cannot use ${e.path}: ${why}; check the path given`, { cause: err });
  }
  if (e.syscall === 'listen' && e.address !== undefined) {
    const where = `${e.address.includes(':') ? `[${e.address}]` : e.address}:${e.port}`;
    const why = e.code === 'EADDRINUSE' ? 'the address is already in use' : e.message;
    return new SvcError(
      'listen_failed',
      `cannot listen on ${where}: ${why}; stop what holds it or choose another address with --listen or SVC_RELAY_LISTEN`,
      { cause: err },
    );
  }
  return undefined;
}

/**
 * Exit status 2: the command line or the settings are wrong. validation_failed and
 * binding_mismatch reach here only from an operator command's option values (grant
 * --agent-id, --tenant …): serve and dev answer them to clients, never exit with them.
 */
const USAGE_CODES = new Set(['config_invalid', 'usage_error', 'validation_failed', 'binding_mismatch']);

const cli = program();
// the command commander got to, for the help a usage error points at
let reached = cli;
for (const c of everyCommand(cli)) {
  c.hook('preSubcommand', (_parent, sub) => {
    reached = sub;
  });
}

// An empty flag value (`--dir "$UNSET"`) is never a choice: refused on every command, as an
// empty setting is (operator-init --dir '' wrote its secrets into the working directory).
cli.hook('preAction', (_root, action) => {
  for (const option of action.options) {
    const value = action.getOptionValue(option.attributeName());
    if (value === '' && option.long) given(option.long, value);
  }
});

cli.parseAsync(process.argv).catch((err: unknown) => {
  // --help, --version and `help COMMAND` are answers, not refusals
  if (err instanceof CommanderError && err.exitCode === 0) process.exit(0);
  const e = err instanceof CommanderError ? usageError(err, reached) : coded(err);
  const code = e?.code ?? 'internal_error';
  // a catalog message is written for the relay's clients ("retry later"); the operator here
  // needs the cause too, which only the detail holds (ledger_closed: the driver's reason)
  const generic = e !== undefined && e.detail !== undefined && e.message === ERROR_CATALOG[e.code].message;
  const message = generic
    ? `${e.message.replace(/\.$/, '')}: ${e.detail}`
    : (e?.message ?? (err as Error).message ?? String(err));
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify({ error: code, message })}\n`);
  else process.stderr.write(`svc-relay: error: ${message} (${code})\n`);
  process.exit(USAGE_CODES.has(code) ? 2 : 1);
});
