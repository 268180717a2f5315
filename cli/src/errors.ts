/**
 * CLI failures. Every failure a user can meet carries a stable code (the shared catalog's,
 * a daemon code of `DAEMON_ERROR_CODES`, or one of the CLI codes below) and a one-line
 * message that says what to do. Exit status: 1 for a failure, 2 for a usage error, which
 * includes every `validation_failed` (an argument the CLI or the daemon found invalid).
 */

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/**
 * Codes the CLI itself raises, besides the shared catalog (whose `usage_error`, commander
 * refusing the command line, svc-relay raises too) and the daemon codes.
 */
export type CliOnlyCode =
  | 'not_built_yet' // a local command that this build does not have yet
  | 'confirmation_required' // a destructive command without --yes and no terminal to ask
  | 'io_error' // a local file could not be read or written
  | 'daemon_stopping'; // `svc stop`: the daemon answered, but its process had not exited within the wait

export class CliError extends Error {
  readonly code: string;
  readonly exitCode: number;

  constructor(code: string, message: string, options?: { exitCode?: number; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.code = code;
    this.exitCode = options?.exitCode ?? EXIT_FAILURE;
  }
}

/** Several agents could be meant and none was named (the daemon's list, or the agent.json files). */
export function agentRequired(names: readonly string[]): CliError {
  return new CliError(
    'agent_required',
    `Several local agents (${names.join(', ')}); choose one with --as NAME or SVC_AGENT.`,
  );
}

/** A local check of an argument value failed: a usage error (exit 2) with code validation_failed. */
export function usageError(message: string): CliError {
  return new CliError('validation_failed', message, { exitCode: EXIT_USAGE });
}

/**
 * Codes that mean the command line was wrong, whoever found it: the daemon checks most
 * argument values itself (a URL, a name, a file path), and its refusal is the same usage
 * error as the CLI's own check would have been. So are the relay's refusals of a value the
 * user typed (a webhook URL, a time zone, a report reason, one's own number as the target).
 */
const USAGE_CODES: ReadonlySet<string> = new Set([
  'validation_failed',
  'usage_error',
  'invalid_endpoint_url',
  'invalid_timezone',
  'invalid_report_reason',
  'cannot_target_self',
]);

/** Errors of the file system (a path under SVC_HOME or given on the command line): io_error. */
const FILE_ERRNOS: ReadonlySet<string> = new Set(['ENOENT', 'EACCES', 'EISDIR', 'ENOTDIR', 'EPERM', 'EROFS', 'ENOSPC']);

/** The `{error, message}` of any thrown value: a CliError, a daemon error with `.code`, or anything else. */
export function describeError(err: unknown): { code: string; message: string; exitCode: number } {
  if (err instanceof CliError) return { code: err.code, message: err.message, exitCode: err.exitCode };
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && /^[a-z][a-z0-9_.]*$/.test(code)) {
      return { code, message: err.message, exitCode: USAGE_CODES.has(code) ? EXIT_USAGE : EXIT_FAILURE };
    }
    if (typeof code === 'string' && FILE_ERRNOS.has(code)) {
      return { code: 'io_error', message: err.message, exitCode: EXIT_FAILURE };
    }
    return { code: 'internal_error', message: err.message, exitCode: EXIT_FAILURE };
  }
  return { code: 'internal_error', message: String(err), exitCode: EXIT_FAILURE };
}
