import { describe, expect, it } from 'vitest';
import { checkLeafUrl, renewalDelayMs } from './uplink.js';

describe('renewalDelayMs: when the uplink creds are renewed', () => {
  const hour = 3_600_000;
  it('once the share of the remaining life has passed; at once when expired', () => {
    expect(renewalDelayMs(24 * hour, 0, 0.8)).toBe(Math.floor(0.8 * 24 * hour));
    expect(renewalDelayMs(10 * hour, 5 * hour, 0.5)).toBe(2.5 * hour);
    expect(renewalDelayMs(1000, 1000, 0.8)).toBe(0);
    expect(renewalDelayMs(1000, 5000, 0.8)).toBe(0);
    expect(renewalDelayMs(Number.NaN, 0, 0.8)).toBe(0);
  });
  it('never after expiry, never more than a timer can wait', () => {
    expect(renewalDelayMs(hour, 0, 7)).toBe(hour);
    expect(renewalDelayMs(365 * 24 * hour, 0, 0.8)).toBe(2 ** 31 - 1);
  });
});

describe('checkLeafUrl: the relay cannot point the local nats-server elsewhere', () => {
  const signed = 'nats-leaf://hub.example:7422';
  it('takes the leaf URL the signed document names', () => {
    expect(() => checkLeafUrl(signed, signed)).not.toThrow();
  });
  it('refuses any other, naming both', () => {
    for (const answered of [
      'nats-leaf://evil.example:7422',
      'nats-leaf://hub.example:7423',
      'nats://hub.example:7422',
    ]) {
      expect(() => checkLeafUrl(signed, answered)).toThrow(
        expect.objectContaining({ code: 'deployment_mismatch', message: expect.stringContaining(answered) }),
      );
    }
  });
  it('a document that names none (older, or the deployment removed) cannot be held against the answer', () => {
    expect(() => checkLeafUrl(null, 'nats-leaf://anything:1')).not.toThrow();
    expect(() => checkLeafUrl(undefined, 'nats-leaf://anything:1')).not.toThrow();
  });
});
