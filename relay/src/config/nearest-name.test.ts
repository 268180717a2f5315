import { describe, expect, it } from 'vitest';
import { editDistance, nearestName } from './nearest-name.js';

describe('nearest name', () => {
  it('counts insertions, deletions, substitutions and swaps of neighbours as one edit each', () => {
    expect(editDistance('LISTEN', 'LISTEN')).toBe(0);
    expect(editDistance('LISEN', 'LISTEN')).toBe(1);
    expect(editDistance('LISTENS', 'LISTEN')).toBe(1);
    expect(editDistance('LISTAN', 'LISTEN')).toBe(1);
    expect(editDistance('DNS', 'DSN')).toBe(1);
    expect(editDistance('', 'ABC')).toBe(3);
    expect(editDistance('KITTEN', 'SITTING')).toBe(3);
  });

  it('names the nearest candidate within a quarter of the name (1 to 3 edits), ignoring the prefix and case', () => {
    const names = ['P_LISTEN', 'P_LEDGER_DSN_FILE', 'P_LOG_LEVEL'] as const;
    expect(nearestName('P_LEDGER_DNS_FILE', names, 'P_')).toBe('P_LEDGER_DSN_FILE');
    expect(nearestName('p_listen', names, 'P_')).toBe('P_LISTEN');
    expect(nearestName('P_LOG_LEVL', names, 'P_')).toBe('P_LOG_LEVEL');
    // 2 edits in a 6-letter name: another name, not a slip
    expect(nearestName('P_LIST', names, 'P_')).toBeUndefined();
    expect(nearestName('P_COLOUR', names, 'P_')).toBeUndefined();
  });
});
