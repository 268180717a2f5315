/**
 * The daemon's error type. Codes come from the shared catalog, which also holds the
 * daemon's own (DAEMON_ERROR_CODES in client/api.ts); the socket answers `{error, message}` with the status, and the CLI
 * prints the same code. Mapped once here so routes just throw.
 */
import { ERROR_CATALOG, type ErrorCode, isErrorCode } from '@svc/shared';
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
