/** Option builders shared by the command modules: the +common options and value parsers. */

import { commandPath } from '@svc/shared/usage-line';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { App, Run } from './app.js';
import { CliError } from './errors.js';

const countVerbose = (_value: string, previous: number) => previous + 1;

export function withAs(cmd: Command, help = 'agent name or number to act as (overrides SVC_AGENT)'): Command {
  return cmd.option('--as <agent>', help);
}

export function withJson(cmd: Command, help = 'output as JSON'): Command {
  return cmd.option('--json', help, false);
}

export function withVerbose(cmd: Command): Command {
  return cmd.option('-v, --verbose', 'more output on stderr (-v info, -vv debug)', countVerbose, 0);
}

/** +common: --as, --json, -v/--verbose. */
export function common(cmd: Command): Command {
  return withVerbose(withJson(withAs(cmd)));
}

export function yes(cmd: Command, help = 'do not ask for confirmation'): Command {
  return cmd.option('-y, --yes', help, false);
}

export function choice(flags: string, help: string, choices: readonly string[], defaultValue?: string): Option {
  const option = new Option(flags, help).choices(choices);
  return defaultValue === undefined ? option : option.default(defaultValue);
}

/**
 * Whether an option's value is in fact the next option (`--limit --json`): commander takes
 * the word after an option that needs a value as that value, whatever it is.
 */
export function isOptionWord(raw: string): boolean {
  return /^--?[a-z]/i.test(raw);
}

const valueLeftOut = (what: string, raw: string) =>
  new InvalidArgumentError(`${what} needs its value before the next option (${raw}).`);

/** `fromCommandLine` false: the value comes from elsewhere (an environment variable), where no option follows. */
export function intParser(min: number, max: number, what = 'value', fromCommandLine = true) {
  return (raw: string): number => {
    if (fromCommandLine && isOptionWord(raw)) throw valueLeftOut(what, raw);
    const n = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(n)) {
      throw new InvalidArgumentError(`${what} must be a whole number.`);
    }
    if (n < min || n > max) throw new InvalidArgumentError(`${what} must be between ${min} and ${max}.`);
    return n;
  };
}

export function numberParser(what = 'value') {
  return (raw: string): number => {
    if (isOptionWord(raw)) throw valueLeftOut(what, raw);
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n) || n <= 0)
      throw new InvalidArgumentError(`${what} must be a positive number.`);
    return n;
  };
}

export function isoTimeParser(raw: string): string {
  if (
    !/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw) ||
    Number.isNaN(Date.parse(raw))
  ) {
    throw new InvalidArgumentError('expected an ISO-8601 timestamp such as 2025-01-31T12:00:00Z.');
  }
  return raw;
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/**
 * The action of a command: `fn(run, ...positionals)`. Errors propagate to `run()` in
 * program.ts, which prints them and sets the exit status.
 */
export function action<A extends Array<string | undefined>>(
  app: App,
  cmd: Command,
  fn: (run: Run, ...args: A) => Promise<void>,
): Command {
  return cmd.action(async (...all: unknown[]) => {
    const self = all[all.length - 1] as Command;
    await fn(app.on(self), ...(all.slice(0, -2) as A));
  });
}

/**
 * Commands that refuse whatever their command line says (hosted-only, not built): run()
 * refuses them before commander checks their options, so a missing required option of
 * the hosted service is never asked for first.
 */
const refusals = new WeakMap<Command, () => CliError>();

/**
 * The refusal of a hosted-only or not-built command, if `cmd` is one. A group all of whose
 * commands refuse the same way (`space`, `cache`) refuses so itself, whatever follows it:
 * `svc space --json` is the hosted service's, not a usage error.
 */
export function refusalOf(cmd: Command): CliError | undefined {
  const own = refusals.get(cmd);
  if (own) return own();
  if (cmd.commands.length === 0) return undefined;
  const each = cmd.commands.map((c) => refusalOf(c));
  const first = each[0];
  if (first === undefined || each.some((r) => r?.code !== first.code)) return undefined;
  if (each.every((r) => r?.message === first.message)) return first;
  const path = commandPath(cmd);
  return first.code === 'not_built_yet' ? notBuiltError(path) : hostedOnlyError(path);
}

const hostedOnlyError = (what: string) =>
  new CliError(
    'not_supported_self_hosted',
    `${what}: only the hosted service offers this; a self-hosted deployment does not.`,
  );

const notBuiltError = (what: string) =>
  new CliError('not_built_yet', `${what} is not built yet in this version of svc.`);

/** Its help says so: `svc --help` lists it as `… (not built yet)`. */
function marked(cmd: Command, mark: string): void {
  const said = cmd.description();
  if (!said.includes(mark)) cmd.description(`${said} (${mark})`);
}

function refusing(app: App, cmd: Command, refuse: () => CliError): Command {
  refusals.set(cmd, refuse);
  return action(app, cmd, async () => {
    throw refuse();
  });
}

/** Hosted-service command: exists for compatibility and always refuses. */
export function hostedOnly(app: App, cmd: Command, what: string): Command {
  marked(cmd, 'hosted only');
  return refusing(app, cmd, () => hostedOnlyError(what));
}

/** A local command this build does not have yet. */
export function notBuilt(app: App, cmd: Command, what: string): Command {
  marked(cmd, 'not built yet');
  return refusing(app, cmd, () => notBuiltError(what));
}
