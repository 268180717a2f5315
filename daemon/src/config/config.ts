/** The daemon's typed configuration: env values validated, defaults applied. */
import { resolve } from 'node:path';
import { PRESENCE_WINDOW_SECONDS } from '@svc/shared';
import { homeFrom } from '../client/home.js';
import { DaemonError } from '../errors.js';
import type { DaemonEnv } from './env.js';

export type VaultBackend = 'auto' | 'keyring' | 'file';

/** How each relay session paces itself: settings of the daemon, handed to every session. */
export interface SessionTiming {
  /** reconnect backoff of relay sessions */
  reconnectMinMs: number;
  reconnectMaxMs: number;
  /** how often a connected session asks the relay for receipts of sent messages */
  receiptsPollMs: number;
  /** how often a connected session heartbeats (half the relay's presence window: one miss is tolerated) */
  heartbeatMs: number;
  /** backoff of the outbox (messages queued while the relay did not answer) */
  outboxRetryMinMs: number;
  outboxRetryMaxMs: number;
  /** the first wait of a session the relay refuses (doubling to 15 min) */
  refusedRetryMinMs: number;
}

/** Just the session timing of a configuration (no other setting travels to the sessions). */
export function sessionTiming(c: SessionTiming): SessionTiming {
  const { reconnectMinMs, reconnectMaxMs, receiptsPollMs, heartbeatMs, outboxRetryMinMs, outboxRetryMaxMs } = c;
  const { refusedRetryMinMs } = c;
  return {
    reconnectMinMs,
    reconnectMaxMs,
    receiptsPollMs,
    heartbeatMs,
    outboxRetryMinMs,
    outboxRetryMaxMs,
    refusedRetryMinMs,
  };
}

export interface DaemonConfig extends SessionTiming {
  home: string;
  /** passphrase of the encrypted file vault; absent = keyring or plain file */
  vaultPassphrase?: string;
  /** `auto` probes the OS keyring first; `file` skips it (tests, servers) */
  vaultBackend: VaultBackend;
  logLevel: string;
  /** also log to stderr (foreground runs) */
  logToStderr: boolean;
  /** the leaf uplink's creds are renewed when this share of their remaining life has passed (0 < share < 1) */
  uplinkRenewShare: number;
  version: string;
}

export const DAEMON_VERSION = '0.1.0';
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function buildConfig(env: DaemonEnv, overrides: Partial<DaemonConfig> = {}): DaemonConfig {
  const backend = (overrides.vaultBackend ?? env.SVC_VAULT_BACKEND ?? 'auto') as VaultBackend;
  if (!['auto', 'keyring', 'file'].includes(backend)) {
    throw new DaemonError('config_invalid', `SVC_VAULT_BACKEND must be auto, keyring or file (got ${backend})`);
  }
  const logLevel = overrides.logLevel ?? env.SVC_DAEMON_LOG_LEVEL ?? 'info';
  if (!LEVELS.includes(logLevel)) {
    throw new DaemonError(
      'config_invalid',
      `SVC_DAEMON_LOG_LEVEL must be one of ${LEVELS.join(', ')} (got ${logLevel})`,
    );
  }
  return {
    home: overrides.home !== undefined ? resolve(overrides.home) : homeFrom(env.SVC_HOME),
    vaultPassphrase: overrides.vaultPassphrase ?? env.SVC_VAULT_PASSPHRASE,
    vaultBackend: backend,
    logLevel,
    logToStderr: overrides.logToStderr ?? false,
    reconnectMinMs: overrides.reconnectMinMs ?? 250,
    reconnectMaxMs: overrides.reconnectMaxMs ?? msSetting('SVC_DAEMON_RECONNECT_MAX_MS', env, 5_000),
    receiptsPollMs: overrides.receiptsPollMs ?? msSetting('SVC_DAEMON_RECEIPTS_POLL_MS', env, 5_000),
    heartbeatMs: overrides.heartbeatMs ?? (PRESENCE_WINDOW_SECONDS * 1000) / 2,
    outboxRetryMinMs: overrides.outboxRetryMinMs ?? 1_000,
    outboxRetryMaxMs: overrides.outboxRetryMaxMs ?? 60_000,
    refusedRetryMinMs: overrides.refusedRetryMinMs ?? 30_000,
    uplinkRenewShare: overrides.uplinkRenewShare ?? 0.8,
    version: overrides.version ?? DAEMON_VERSION,
  };
}

/** A setting in whole milliseconds, 100 ms to one hour; `fallback` without it. */
function msSetting(
  name: 'SVC_DAEMON_RECEIPTS_POLL_MS' | 'SVC_DAEMON_RECONNECT_MAX_MS',
  env: DaemonEnv,
  fallback: number,
): number {
  const raw = env[name];
  if (raw === undefined) return fallback;
  const ms = Number(raw);
  if (!/^\d+$/.test(raw) || ms < 100 || ms > 3_600_000) {
    throw new DaemonError(
      'config_invalid',
      `${name} must be a whole number of milliseconds from 100 to 3600000 (got ${raw})`,
    );
  }
  return ms;
}
