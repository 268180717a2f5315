import { describe, expect, it } from 'vitest';
import { eachLedger, usesIndex } from '../../../test/helpers/ledger-kinds.js';
import { BlobUsageStore } from '../blob-usage.js';
import { migrate } from '../database.js';
import { Ledger } from '../ledger.js';
import type { SqlDatabase } from '../sql.js';
import { MIGRATIONS } from './index.js';

describe('migration 012-blob-usage', () => {
  eachLedger(({ fresh }) => {
    let db: SqlDatabase;

    it('applies after 011 and records itself', async () => {
      db = await fresh();
      await migrate(
        db,
        MIGRATIONS.filter((m) => m.version < 12),
      );
      const upTo12 = MIGRATIONS.filter((m) => m.version <= 12);
      expect(await migrate(db, upTo12)).toEqual([12]);
      expect(await migrate(db, upTo12)).toEqual([]);
    });

    it('admits blobs within the share, counts only those since the cutoff, and finds an owner’s rows by index', async () => {
      const usage = new BlobUsageStore(Ledger.over(db));
      const blob = (id: string, size: number) => ({ id, owner: 'alice', size });
      expect(await usage.admit(blob('b1', 60), 1_000, 0, 100)).toBe(true);
      expect(await usage.admit(blob('b2', 50), 1_001, 0, 100)).toBe(false);
      expect(await usage.admit({ id: 'c1', owner: 'carol', size: 90 }, 1_001, 0, 100)).toBe(true);
      expect(await usage.admit(blob('b3', 40), 1_002, 0, 100)).toBe(true);
      // b1 released (purged): room for 50 again
      await usage.release('b1');
      expect(await usage.admit(blob('b4', 50), 1_003, 0, 100)).toBe(true);
      // past the cutoff, b3 and b4 no longer count (and are dropped); 0 is no limit
      expect(await usage.admit(blob('b5', 100), 2_000, 1_500, 100)).toBe(true);
      expect(await db.all("SELECT blob_id FROM blob_usage WHERE owner_row = 'alice' ORDER BY blob_id")).toEqual([
        { blob_id: 'b5' },
      ]);
      expect(await usage.admit(blob('b6', 10_000), 2_001, 1_500, 0)).toBe(true);
      expect(
        await usesIndex(
          db,
          "SELECT sum(size) FROM blob_usage WHERE owner_row = 'alice' AND created_at >= 5",
          'blob_usage_owner',
        ),
      ).toBe(true);
    });

    it('prunes every owner’s rows older than the cutoff, and only those', async () => {
      const usage = new BlobUsageStore(Ledger.over(db));
      await db.run('DELETE FROM blob_usage');
      // dave uploaded long ago and never again; erin both long ago and lately
      expect(await usage.admit({ id: 'd1', owner: 'dave', size: 10 }, 100, 0, 0)).toBe(true);
      expect(await usage.admit({ id: 'd2', owner: 'dave', size: 10 }, 200, 0, 0)).toBe(true);
      expect(await usage.admit({ id: 'e1', owner: 'erin', size: 10 }, 150, 0, 0)).toBe(true);
      expect(await usage.admit({ id: 'e2', owner: 'erin', size: 10 }, 300, 0, 0)).toBe(true);
      expect(await usage.prune(200)).toBe(2);
      expect(await db.all('SELECT blob_id FROM blob_usage ORDER BY blob_id')).toEqual([
        { blob_id: 'd2' },
        { blob_id: 'e2' },
      ]);
      expect(await usage.prune(200)).toBe(0);
      expect(await usage.prune(301)).toBe(2);
      expect(await db.all('SELECT blob_id FROM blob_usage')).toEqual([]);
    });
  });
});
