import { describe, expect, it } from 'vitest';
import { renewalDelayMs } from './uplink.js';

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
