/**
 * The `svc` command tree and `run()`, which parses, dispatches and turns every outcome
 * into an exit status: 0 success, 1 failure, 2 usage error. Tests call `run()` in-process.
 */
import { printable } from '@svc/shared';
import { commandPath, everyCommand, usageLine } from '@svc/shared/usage-line';
import { Command, CommanderError } from 'commander';
import { App, type CliIO } from './app.js';
import { loadCommands } from './command-modules.js';
import { bashCompletion, installCompletion } from './completion.js';
import { CliError, describeError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './errors.js';
import { refusalOf } from './options.js';
import { jsonLine } from './output.js';

import { VERSION } from './version.js';

export { VERSION };

export const EXIT_HELP = `
Exit status: 0 success; 1 failure (the message says what to do; with --json,
{"error": code, "message": text} on stdout); 2 usage error (unknown command or
option, missing or invalid argument).

Environment: SVC_HOME (default ~/.svc), SVC_AGENT (agent to act as; --as wins).
`;

const isHelpFlag = (arg: string) => arg === '--help' || arg === '-h';

/**
 * The command tree. With `word`, only the command that word names is loaded (when it names
 * one), which is all a run needs; without it, every command (help, completion).
 */
export async function buildProgram(app: App, word?: string): Promise<Command> {
  const program = new Command('svc')
    .description('end-to-end encrypted messaging between agents, through a self-hosted relay')
    .version(VERSION, '--version', 'print the version and exit')
    .option('--no-autostart', 'do not start the local daemon (registration will not wait for receive readiness)')
    .option('--install-completion', 'install bash completion for svc')
    .option('--show-completion', 'print the bash completion script')
    .addHelpText('after', EXIT_HELP);

  const commands = (await loadCommands(app, word)).sort((a, b) => a.name().localeCompare(b.name()));
  for (const c of commands) program.addCommand(c);

  for (const c of everyCommand(program)) {
    // options belong to the command they follow: `svc --no-autostart account --json list` is refused, `account list --json` is list's
    c.enablePositionalOptions()
      .exitOverride()
      .configureOutput({
        writeOut: (s) => app.io.stdout.write(s),
        // commander's refusals (and the help it would dump with them) are not printed here:
        // run() turns them into the one error line of every failure
        writeErr: () => undefined,
        outputError: () => undefined,
      });
  }
  return program;
}

/** Commander's refusal of a command line, on `at` (the command it reached), as the one error line. */
function commanderUsageError(err: CommanderError, at: Command): CliError {
  const unknown = err.code === 'commander.unknownOption' ? /'([^']+)'/.exec(err.message)?.[1] : undefined;
  const hint =
    // `svc --as bob send …`: a command's own option before the command
    at.parent === null && unknown && /^(--as|--json|--verbose|-v+)$/.test(unknown)
      ? `it goes after the command: svc COMMAND ${unknown} …`
      : // `svc send … --no-autostart`: the global option after the command
        at.parent !== null && unknown === '--no-autostart'
        ? `it goes before the command: svc ${unknown} COMMAND …`
        : undefined;
  const said = hint ? { code: err.code, message: `${err.message.trimEnd()} (${hint})` } : err;
  return new CliError('usage_error', usageLine(said, at), { exitCode: EXIT_USAGE, cause: err });
}

/**
 * An option given on the command line to a group (`svc conv --json list`): it belongs to
 * the group, which does not run when one of its commands follows, so it would be dropped
 * without a word. The root's options (--no-autostart) are the exception: they are for every
 * command.
 */
function optionBeforeSubcommand(group: Command): string | undefined {
  if (group.parent === null) return undefined;
  const given = group.options.find((o) => group.getOptionValueSource(o.attributeName()) === 'cli');
  return given && (given.long ?? given.short);
}

/** The global flags that act without a command (completion), if given before any command. */
function globalAction(argv: readonly string[]): '--show-completion' | '--install-completion' | undefined {
  for (const arg of argv) {
    if (arg === '--show-completion' || arg === '--install-completion') return arg;
    if (!arg.startsWith('-')) return undefined;
  }
  return undefined;
}

/** The command word of a run: the first argument that is not a global flag (none takes a value). */
function commandWord(argv: readonly string[]): string | undefined {
  return argv.find((a) => !a.startsWith('-'));
}

/**
 * `svc help agent webhook` as `svc agent webhook --help`: commander's help command reads only
 * its first word, and showed the help of `svc agent`.
 */
function helpAsFlag(argv: readonly string[]): readonly string[] {
  const at = argv.findIndex((a) => !a.startsWith('-'));
  if (argv[at] !== 'help' || argv[at + 1] === undefined || argv[at + 1]!.startsWith('-')) return argv;
  return [...argv.slice(0, at), ...argv.slice(at + 1), '--help'];
}

/** Runs `svc` with these arguments (without node and script); resolves to the exit status. */
export async function run(given: readonly string[], io: CliIO): Promise<number> {
  const argv = helpAsFlag(given);
  const app = new App(io);
  const global = globalAction(argv);
  const word = commandWord(argv);
  // `svc --version` needs no command: answered before any is loaded
  if (word === undefined && !global && argv.includes('--version')) {
    io.stdout.write(`${VERSION}\n`);
    return EXIT_OK;
  }
  const program = await buildProgram(app, global ? undefined : word);
  let active: Command | undefined;
  program.hook('preAction', (_root, actionCommand) => {
    active = actionCommand;
  });
  // the command commander got to, for a refusal's hint; a hosted-only or not-built command
  // refuses here, before its options are checked (unless only its help is asked for)
  let reached: Command = program;
  const helpAsked = argv.slice(0, argv.includes('--') ? argv.indexOf('--') : undefined).some(isHelpFlag);
  for (const c of everyCommand(program)) {
    c.hook('preSubcommand', (parent, sub) => {
      reached = sub;
      if (helpAsked) return;
      const refusal = refusalOf(sub);
      if (refusal) throw refusal;
      const misplaced = optionBeforeSubcommand(parent);
      if (misplaced) {
        const path = commandPath(sub);
        throw new CliError(
          'usage_error',
          `${misplaced} goes after the command it is for: ${path} ${misplaced} …; see ${path} --help`,
          { exitCode: EXIT_USAGE },
        );
      }
    });
  }
  const wantsJson = () => {
    if (!active) return argv.includes('--json');
    for (let c: Command | null = active; c; c = c.parent) if (c.opts().json === true) return true;
    return false;
  };

  try {
    if (global === '--show-completion') {
      io.stdout.write(bashCompletion(program));
      return EXIT_OK;
    }
    if (global === '--install-completion') {
      const file = await installCompletion(program, io.env);
      io.stdout.write(`Installed bash completion in ${file}; open a new shell to use it.\n`);
      return EXIT_OK;
    }
    // `svc stauts --help`: commander answers an unknown command's help with the root's, exit
    // 0; without the flag it refuses the word (with its suggestion), as any other use does
    const unknownWord =
      helpAsked &&
      !!word &&
      word !== 'help' &&
      !program.commands.some((c) => c.name() === word || c.aliases().includes(word));
    await program.parseAsync(unknownWord ? argv.filter((a) => !isHelpFlag(a)) : [...argv], { from: 'user' });
    return app.exitCode;
  } catch (thrown) {
    let err = thrown;
    if (err instanceof CommanderError) {
      // help asked for (`--help`, `svc help send`) and --version are answers, not refusals
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT_OK;
      if (err.code === 'commander.help' && err.exitCode === 0) return EXIT_OK;
      err = commanderUsageError(err, reached);
    }
    const { code, message, exitCode } = describeError(err);
    if (wantsJson()) io.stdout.write(jsonLine({ error: code, message }));
    // one line, as text: a message may quote the relay or a peer
    io.stderr.write(`svc: error: ${printable(message)} (${printable(code)})\n`);
    if (code === 'internal_error' && err instanceof Error && err.stack && argv.some((a) => /^-v{2,}$/.test(a))) {
      io.stderr.write(`${err.stack}\n`);
    }
    return exitCode === EXIT_OK ? EXIT_FAILURE : exitCode;
  }
}
