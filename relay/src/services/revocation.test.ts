import { describe, expect, it } from 'vitest';
import type { AgentRow } from '../ledger/ledger.js';
import { RevocationNews } from './revocation.js';

const row = (id: string) => ({ id, tenant_id: 'default', agent_number: id }) as AgentRow;

describe('RevocationNews', () => {
  it('tells each pending incarnation once, however many rounds its cleanup keeps failing', () => {
    const told: string[] = [];
    const news = new RevocationNews((r) => told.push(r.id));
    const a = row('a');
    for (let i = 0; i < 5; i++) news.round([a]);
    expect(told).toEqual(['a']);
    news.round([a, row('b')]); // another revoked meanwhile: told at once
    news.round([row('b'), a]);
    expect(told).toEqual(['a', 'b']);
  });

  it('remembers only what is still pending', () => {
    const told: string[] = [];
    const news = new RevocationNews((r) => told.push(r.id));
    news.round([row('a')]);
    news.round([]); // its cleanup finished: forgotten
    news.round([row('a')]); // (pending again only in this test: ids are never reused)
    expect(told).toEqual(['a', 'a']);
  });
});
