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

  it.each(['0', '99', '1.5', '-5', '5s', '3600001'])('refuses SVC_DAEMON_RECEIPTS_POLL_MS=%s, naming it', (bad) => {
    expect(() => buildConfig(readEnv({ SVC_DAEMON_RECEIPTS_POLL_MS: bad }))).toThrow(/SVC_DAEMON_RECEIPTS_POLL_MS/);
  });
});
