/**
 * The daemon's error type. Codes come from the shared catalog or DAEMON_ERROR_CODES
 * (client/api.ts); the socket answers `{error, message}` with the status, and the CLI
 * prints the same code. Mapped once here so routes just throw.
 */
import { ERROR_CATALOG, type ErrorCode, isErrorCode } from '@svc/shared';
import type { DaemonErrorCode } from './client/api.js';

export type DaemonCode = ErrorCode | DaemonErrorCode;

const DAEMON_CODES: Record<DaemonErrorCode, { status: number; message: string }> = {
  daemon_unavailable: { status: 503, message: 'No svc daemon answers; start it with `svc start`.' },
  daemon_already_running: { status: 409, message: 'A daemon already runs for this SVC_HOME.' },
  unknown_agent: { status: 404, message: 'No local agent by that name or number; see `svc agent list`.' },
  agent_required: { status: 400, message: 'Several local agents: choose one with --as or SVC_AGENT.' },
  unknown_deployment: {
    status: 404,
    message: 'No trusted deployment by that name; add it with `svc deployment fetch`.',
  },
  deployment_exists: { status: 409, message: 'A deployment by that name exists; remove it or choose another name.' },
  vault_locked: { status: 423, message: 'The file vault is locked: set SVC_VAULT_PASSPHRASE to its passphrase.' },
  peer_key_changed: {
    status: 409,
    message: "A peer's pinned key changed: check `svc keys status` and accept the new key to continue.",
  },
  envelope_rejected: { status: 422, message: 'An inbound envelope failed verification; it was not archived.' },
  not_supported_self_hosted: { status: 501, message: 'This command needs the hosted service.' },
  relay_unreachable: {
    status: 503,
    message: 'The relay cannot be reached; check the network or ask its operator, then retry.',
  },
};

export function statusOf(code: string): number {
  if (isErrorCode(code)) return ERROR_CATALOG[code].status;
  return (DAEMON_CODES as Record<string, { status: number }>)[code]?.status ?? 500;
}

export function defaultMessage(code: string): string {
  if (isErrorCode(code)) return ERROR_CATALOG[code].message;
  return (DAEMON_CODES as Record<string, { message: string }>)[code]?.message ?? 'The daemon failed unexpectedly.';
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
