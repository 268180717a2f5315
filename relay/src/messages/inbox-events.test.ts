import { describe, expect, it } from 'vitest';
import { parseInboxEvent } from './inbox-events.js';

const bytes = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));

describe('parseInboxEvent', () => {
  it('takes each kind an instance announces', () => {
    for (const kind of ['recorded', 'acked', 'revoked'] as const) {
      expect(parseInboxEvent(bytes({ from: 'i1', kind, rows: ['r1'] }))).toEqual({ from: 'i1', kind, rows: ['r1'] });
    }
  });

  it('refuses anything else: an unknown kind, rows that are not strings, not JSON', () => {
    for (const bad of [
      { from: 'i1', kind: 'deleted', rows: [] },
      { from: 'i1', kind: 'revoked', rows: [1] },
      { from: 1, kind: 'acked', rows: [] },
      { kind: 'acked', rows: [] },
      null,
      '{"from":',
    ]) {
      expect(parseInboxEvent(bytes(bad))).toBeUndefined();
    }
  });
});
