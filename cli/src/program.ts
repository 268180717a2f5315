/**
 * The `svc` command tree and `run()`, which parses, dispatches and turns every outcome
 * into an exit status: 0 success, 1 failure, 2 usage error. Tests call `run()` in-process.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { App, type CliIO } from './app.js';
import { abuseCommand } from './commands/abuse.js';
import { agentCommand } from './commands/agent.js';
import { authCommand } from './commands/auth.js';
import { cacheCommand } from './commands/cache.js';
import { configCommand } from './commands/config.js';
import { contactsCommand } from './commands/contacts.js';
import { contextCommand } from './commands/context.js';
import { convCommand } from './commands/conv.js';
import { coreCommands } from './commands/core.js';
import { dashboardCommand, desktopCommand } from './commands/dashboard.js';
import { deploymentCommand } from './commands/deployment.js';
import { discoverCommand } from './commands/discover.js';
import { identityCommands } from './commands/identity.js';
import { integrationCommands } from './commands/integration.js';
import { keysCommand } from './commands/keys.js';
import { msgCommand } from './commands/msg.js';
import { recoverCommand } from './commands/recover.js';
import { spaceCommand } from './commands/space.js';
import { bashCompletion, installCompletion } from './completion.js';
import { describeError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './errors.js';
import { jsonLine } from './output.js';

export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

export const EXIT_HELP = `
Exit status: 0 success; 1 failure (the message says what to do; with --json,
{"error": code, "message": text} on stdout); 2 usage error (unknown command or
option, missing or invalid argument).

Environment: SVC_HOME (default ~/.svc), SVC_AGENT (agent to act as; --as wins).
`;

function everyCommand(cmd: Command): Command[] {
  return [cmd, ...cmd.commands.flatMap(everyCommand)];
}

export function buildProgram(app: App): Command {
  const program = new Command('svc')
    .description('end-to-end encrypted messaging between agents, through a self-hosted relay')
    .version(VERSION, '--version', 'print the version and exit')
    .option('--no-autostart', 'do not start the local daemon (registration will not wait for receive readiness)')
    .option('--install-completion', 'install bash completion for svc')
    .option('--show-completion', 'print the bash completion script')
    .addHelpText('after', EXIT_HELP);

  const commands = [
    ...coreCommands(app),
    ...identityCommands(app),
    abuseCommand(app),
    agentCommand(app),
    cacheCommand(app),
    configCommand(app),
    contactsCommand(app),
    contextCommand(app),
    convCommand(app),
    dashboardCommand(app),
    desktopCommand(app),
    discoverCommand(app),
    keysCommand(app),
    msgCommand(app),
    spaceCommand(app),
    ...integrationCommands(app),
    authCommand(app),
    deploymentCommand(app),
    recoverCommand(app),
  ].sort((a, b) => a.name().localeCompare(b.name()));
  for (const c of commands) program.addCommand(c);

  for (const c of everyCommand(program)) {
    // options belong to the command they follow: `svc --no-autostart account --json list` is refused, `account list --json` is list's
    c.enablePositionalOptions()
      .exitOverride()
      .configureOutput({
        writeOut: (s) => app.io.stdout.write(s),
        writeErr: (s) => app.io.stderr.write(s),
      })
      .showHelpAfterError('(add --help for usage)');
  }
  return program;
}

/** The global flags that act without a command (completion), if given before any command. */
function globalAction(argv: readonly string[]): '--show-completion' | '--install-completion' | undefined {
  for (const arg of argv) {
    if (arg === '--show-completion' || arg === '--install-completion') return arg;
    if (!arg.startsWith('-')) return undefined;
  }
  return undefined;
}

/** Runs `svc` with these arguments (without node and script); resolves to the exit status. */
export async function run(argv: readonly string[], io: CliIO): Promise<number> {
  const app = new App(io);
  const program = buildProgram(app);
  let active: Command | undefined;
  program.hook('preAction', (_root, actionCommand) => {
    active = actionCommand;
  });
  const wantsJson = () => {
    if (!active) return argv.includes('--json');
    for (let c: Command | null = active; c; c = c.parent) if (c.opts().json === true) return true;
    return false;
  };

  try {
    const global = globalAction(argv);
    if (global === '--show-completion') {
      io.stdout.write(bashCompletion(program));
      return EXIT_OK;
    }
    if (global === '--install-completion') {
      const file = await installCompletion(program, io.env);
      io.stdout.write(`Installed bash completion in ${file}; open a new shell to use it.\n`);
      return EXIT_OK;
    }
    await program.parseAsync([...argv], { from: 'user' });
    return app.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT_OK;
      if (wantsJson())
        io.stdout.write(jsonLine({ error: 'usage_error', message: err.message.replace(/^error: /, '') }));
      return EXIT_USAGE;
    }
    const { code, message, exitCode } = describeError(err);
    if (wantsJson()) io.stdout.write(jsonLine({ error: code, message }));
    io.stderr.write(`svc: error: ${message} (${code})\n`);
    if (code === 'internal_error' && err instanceof Error && err.stack && argv.some((a) => /^-v{2,}$/.test(a))) {
      io.stderr.write(`${err.stack}\n`);
    }
    return exitCode === EXIT_OK ? EXIT_FAILURE : exitCode;
  }
}
