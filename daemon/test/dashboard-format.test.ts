/** The dashboard page's words for numbers (daemon/dashboard/src/format.ts): pure, no browser needed. */
import { describe, expect, it } from 'vitest';
import { matchCount, relative } from '../dashboard/src/format.js';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const ago = (seconds: number) => relative(new Date(NOW - seconds * 1000).toISOString(), NOW, 'en');

describe('the dashboard says how long ago', () => {
  it('rolls over to the next unit instead of reading "60 seconds", "60 minutes" or "24 hours"', () => {
    expect(ago(10)).toBe('just now');
    expect(ago(50)).toBe('50 seconds ago');
    expect(ago(59.6)).toBe('1 minute ago');
    expect(ago(90)).toBe('2 minutes ago');
    expect(ago(59.6 * 60)).toBe('1 hour ago');
    expect(ago(23.6 * 3600)).toBe('yesterday');
    expect(ago(3 * 86400)).toBe('3 days ago');
    expect(ago(29.6 * 86400)).toBe('last month');
    expect(ago(11.6 * 30 * 86400)).toBe('last year');
    expect(relative(new Date(NOW + 90 * 60 * 1000).toISOString(), NOW, 'en')).toBe('in 2 hours');
    expect(relative('not a time', NOW, 'en')).toBe('not a time');
  });

  it('never says "60 <unit>s", "24 hours", "30 days" or "12 months" at any second of a year', () => {
    for (let s = 45; s < 400 * 86400; s += s < 7200 ? 1 : 997) {
      expect(ago(s)).not.toMatch(/^(60 (seconds|minutes)|24 hours|30 days|12 months) ago$/);
    }
  });
});

describe('the dashboard counts search results', () => {
  it('agrees the verb with the number', () => {
    expect(matchCount(1)).toBe('1 message matches');
    expect(matchCount(2)).toBe('2 messages match');
    expect(matchCount(50)).toBe('50 messages match');
  });
});
