import { describe, expect, it } from 'vitest';
import { TenantQueue } from './tenant-queue.js';

function gate(): { open: () => void; opened: Promise<void> } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { open: () => open(), opened };
}

describe('TenantQueue', () => {
  it('runs one job at a time per tenant, in order; other tenants do not wait; a failure does not block', async () => {
    const q = new TenantQueue();
    const log: string[] = [];
    const first = gate();
    const a1 = q.run('acme', async () => {
      log.push('a1 start');
      await first.opened;
      log.push('a1 end');
      throw new Error('a1 failed');
    });
    const a2 = q.run('acme', async () => {
      log.push('a2');
      return 2;
    });
    const b1 = q.run('globex', async () => {
      log.push('b1');
      return 'b';
    });
    expect(await b1).toBe('b');
    expect(log).toEqual(['a1 start', 'b1']);
    first.open();
    await expect(a1).rejects.toThrow('a1 failed');
    expect(await a2).toBe(2);
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
    // settled work leaves nothing behind
    await new Promise((r) => setImmediate(r));
    expect(q.size).toBe(0);
  });
});
