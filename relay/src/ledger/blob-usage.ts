/**
 * Each agent's share of its tenant's attachment store (migration 012): one row per blob
 * the agent uploaded that the stream may still hold. The store itself (SVC_BLOBS) counts
 * only the tenant's total. Rows of blobs past the stream's max age are pruned by the
 * relay's housekeeping (relay.ts), and by the owner's next upload.
 */
import type { Ledger } from './ledger.js';

export class BlobUsageStore {
  constructor(private readonly ledger: Ledger) {}

  /**
   * Counts a blob of `size` bytes against its owner, when the owner's blobs since `since`
   * (older ones have left the stream) and this one stay within `max` bytes (0: no limit).
   * False when they would not, and nothing is counted. The owner's rows older than `since`
   * go first. The owner's agent row is locked first (PostgreSQL), so uploads checked at
   * once, on one relay instance or several, each see the others' rows.
   */
  admit(blob: { id: string; owner: string; size: number }, now: number, since: number, max: number): Promise<boolean> {
    return this.ledger.sql.transaction(async (tx) => {
      await tx.get(`SELECT id FROM agents WHERE id = ?${this.ledger.forUpdate}`, [blob.owner]);
      await tx.run('DELETE FROM blob_usage WHERE owner_row = ? AND created_at < ?', [blob.owner, since]);
      const used = await tx.get<{ bytes: number | string | null }>(
        'SELECT sum(size) AS bytes FROM blob_usage WHERE owner_row = ?',
        [blob.owner],
      );
      if (max > 0 && Number(used?.bytes ?? 0) + blob.size > max) return false;
      await tx.run('INSERT INTO blob_usage (blob_id, owner_row, size, created_at) VALUES (?, ?, ?, ?)', [
        blob.id,
        blob.owner,
        blob.size,
        now,
      ]);
      return true;
    });
  }

  /** The blob left the stream (acknowledged by all, or its upload failed): it no longer counts. */
  async release(blobId: string): Promise<void> {
    await this.ledger.sql.run('DELETE FROM blob_usage WHERE blob_id = ?', [blobId]);
  }

  /**
   * Deletes every agent's rows older than `since` (the blobs have left the stream, and
   * admit() no longer counts them), so an agent that stopped uploading leaves none behind.
   * Returns how many went.
   */
  prune(since: number): Promise<number> {
    return this.ledger.sql.run('DELETE FROM blob_usage WHERE created_at < ?', [since]);
  }
}
