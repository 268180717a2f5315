/**
 * The daemon's error type. Codes come from the shared catalog, which also holds the
 * daemon's own (DAEMON_ERROR_CODES in client/api.ts); the socket answers `{error, message}` with the status, and the CLI
 * prints the same code. Mapped once here so routes just throw.
 */
import { ERROR_CATALOG, type ErrorCode, isErrorCode, MESSAGE_LIMITS } from '@svc/shared';
import { DAEMON_ERROR_CODES } from './client/api.js';

export type DaemonCode = ErrorCode;

// Every daemon code lives in the shared catalog; this fails to compile if one is missing.
const DAEMON_CODES_IN_CATALOG: readonly ErrorCode[] = DAEMON_ERROR_CODES;
void DAEMON_CODES_IN_CATALOG;

export function statusOf(code: string): number {
  return isErrorCode(code) ? ERROR_CATALOG[code].status : 500;
}

export function defaultMessage(code: string): string {
  return isErrorCode(code) ? ERROR_CATALOG[code].message : 'The daemon failed unexpectedly.';
}

export class DaemonError extends Error {
  readonly code: DaemonCode;
  readonly status: number;
  constructor(code: DaemonCode, message?: string, options?: { cause?: unknown; status?: number }) {
    super(message ?? defaultMessage(code), options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DaemonError';
    this.code = code;
    this.status = options?.status ?? statusOf(code);
  }
}

/** How the daemon takes a changed svc into account: it is the running daemon's code until it restarts. */
export const RESTART_DAEMON = 'restart the daemon (svc stop, then svc start -b)';

/** How the daemon takes a repaired file of an agent out of service into account (AgentManager's recheck). */
export const LOOKED_AT_AGAIN =
  'the next command for the agent, or svc agent list, finds it repaired (no restart needed)';

/**
 * A file of one agent that this svc cannot use (its archive, its agent.json): the agent is
 * kept out of service, and the file left as it is. The message names the file, says what is
 * wrong with it and what to do; `hint` is the what to do alone, one line.
 */
export class AgentFileUnusableError extends DaemonError {
  declare readonly code: 'archive_unusable' | 'config_invalid';
  readonly file: string;
  readonly hint: string;
  constructor(
    code: 'archive_unusable' | 'config_invalid',
    message: string,
    file: string,
    hint: string,
    cause?: unknown,
  ) {
    super(code, message, { cause });
    this.name = 'AgentFileUnusableError';
    this.file = file;
    this.hint = hint;
  }
}

/** A relay answer that is not 2xx, kept with the relay's own code (it travels unchanged). */
export class RelayError extends DaemonError {
  readonly relayStatus: number;
  /** the relay's code as sent, even when it is not in this build's catalog */
  readonly relayErrorCode: string;
  constructor(relayStatus: number, code: string, message: string) {
    const known = isErrorCode(code) ? code : 'internal_error';
    super(known, message, { status: relayStatus >= 500 ? 502 : relayStatus });
    this.name = 'RelayError';
    this.relayStatus = relayStatus;
    this.relayErrorCode = code;
  }
}

/**
 * The answer to a request body over the HTTP limit (2 MiB, socket API and dashboard alike):
 * only a message's content comes near it, so it says the limit that counts.
 */
export const BODY_TOO_LARGE = {
  error: 'envelope_too_large',
  message: `The message is too large: one message holds at most ${MESSAGE_LIMITS.maxContentBytes} bytes of content (UTF-8); split it into several messages.`,
} as const;
