/**
 * How `svc` and `svc-relay` say that a command line was refused: commander's refusal as one
 * line, its suggestion kept inside, then where the help is. Typed by shape, so that this
 * package needs no command-line parser of its own (commander's Command fits).
 */

/** What a usage line needs of a command. */
export interface CommandNode {
  name(): string;
  readonly parent: CommandNode | null;
  readonly args: readonly string[];
  readonly commands: readonly CommandNode[];
}

/** `cmd` and every command under it. */
export function everyCommand<T extends { readonly commands: readonly T[] }>(cmd: T): T[] {
  return [cmd, ...cmd.commands.flatMap((c) => everyCommand(c))];
}

/** `svc agent recover` for that command. */
export function commandPath(cmd: CommandNode): string {
  return cmd.parent ? `${commandPath(cmd.parent)} ${cmd.name()}` : cmd.name();
}

/**
 * A refusal (commander's error: its message and code) on `at`, the command it reached.
 * A group given without its command names its commands; `listRootCommands` says the root
 * does too (a tool with few commands).
 */
export function usageLine(
  err: { message: string; code: string },
  at: CommandNode,
  { listRootCommands = false }: { listRootCommands?: boolean } = {},
): string {
  const [first = '', ...notes] = err.message.replace(/^error: /, '').split('\n');
  let what = [first.replace(/\.$/, ''), ...notes.map((n) => n.replace(/^\(Did/, '(did'))].join(' ');
  const sub = at.commands.map((c) => c.name());
  // a group without its command (or `help` of an unknown one): commander would dump the group's help
  if (err.code === 'commander.help') {
    const unknown = at.args.find((a) => a !== 'help');
    const names = at.parent || listRootCommands ? `: ${sub.join(', ')}` : '';
    what = unknown === undefined ? `${commandPath(at)} needs a command${names}` : `unknown command '${unknown}'`;
  }
  // an option given to a group before (or without) its command: what is missing is the command
  // (`svc msg --json` said "unknown option '--json'")
  if (err.code === 'commander.unknownOption' && at.parent && sub.length > 0 && !at.args.some((a) => sub.includes(a))) {
    const option = /'([^']+)'/.exec(first)?.[1];
    what = `${commandPath(at)} needs a command: ${sub.join(', ')}${option ? ` (${option} goes after it)` : ''}`;
  }
  return `${what}; see ${commandPath(at)} --help`;
}
