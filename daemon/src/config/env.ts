/** Reads the daemon's environment once (only the entry point calls this). */
export interface DaemonEnv {
  SVC_HOME?: string;
  SVC_VAULT_PASSPHRASE?: string;
  SVC_VAULT_BACKEND?: string;
  SVC_DAEMON_LOG_LEVEL?: string;
  /** how often a session asks for receipts, ms (default 5000; tests shorten it) */
  SVC_DAEMON_RECEIPTS_POLL_MS?: string;
  /** the longest wait between two attempts to reach the relay again, ms (default 5000; tests shorten it) */
  SVC_DAEMON_RECONNECT_MAX_MS?: string;
}

export function readEnv(env: NodeJS.ProcessEnv = process.env): DaemonEnv {
  const pick = (k: keyof DaemonEnv): string | undefined => {
    const v = env[k];
    return v === undefined || v === '' ? undefined : v;
  };
  return {
    SVC_HOME: pick('SVC_HOME'),
    SVC_VAULT_PASSPHRASE: pick('SVC_VAULT_PASSPHRASE'),
    SVC_VAULT_BACKEND: pick('SVC_VAULT_BACKEND'),
    SVC_DAEMON_LOG_LEVEL: pick('SVC_DAEMON_LOG_LEVEL'),
    SVC_DAEMON_RECEIPTS_POLL_MS: pick('SVC_DAEMON_RECEIPTS_POLL_MS'),
    SVC_DAEMON_RECONNECT_MAX_MS: pick('SVC_DAEMON_RECONNECT_MAX_MS'),
  };
}
