import { describe, expect, it } from 'vitest';
import { buildConfig } from './config.js';
import { readEnv } from './env.js';

describe('daemon settings', () => {
  it('SVC_DAEMON_RECEIPTS_POLL_MS sets how often a session asks for receipts; 5 s without it', () => {
    expect(buildConfig(readEnv({})).receiptsPollMs).toBe(5_000);
    expect(buildConfig(readEnv({ SVC_DAEMON_RECEIPTS_POLL_MS: '' })).receiptsPollMs).toBe(5_000);
    expect(buildConfig(readEnv({ SVC_DAEMON_RECEIPTS_POLL_MS: '250' })).receiptsPollMs).toBe(250);
    expect(buildConfig(readEnv({ SVC_DAEMON_RECEIPTS_POLL_MS: '250' }), { receiptsPollMs: 40 }).receiptsPollMs).toBe(
      40,
    );
  });

  it('SVC_DAEMON_RECONNECT_MAX_MS caps the wait between attempts to reach the relay; 5 s without it', () => {
    expect(buildConfig(readEnv({})).reconnectMaxMs).toBe(5_000);
    expect(buildConfig(readEnv({ SVC_DAEMON_RECONNECT_MAX_MS: '500' })).reconnectMaxMs).toBe(500);
  });

  const settings = ['SVC_DAEMON_RECEIPTS_POLL_MS', 'SVC_DAEMON_RECONNECT_MAX_MS'] as const;
  it.each(settings.flatMap((name) => ['0', '99', '1.5', '-5', '5s', '3600001'].map((bad) => [name, bad])))(
    'refuses %s=%s, naming it',
    (name, bad) => {
      expect(() => buildConfig(readEnv({ [name]: bad }))).toThrow(new RegExp(name));
    },
  );
});
