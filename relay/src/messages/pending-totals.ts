/**
 * Per-recipient quota of pending (unacknowledged) envelopes, by count and by bytes. Each
 * recipient's totals are read from the ledger's pending index, then kept up to date in
 * memory by this process: sends reserve before they publish, so two requests at once on
 * this instance cannot both slip under the limit. When another relay instance records or
 * acknowledges for the recipient (an inbox event), the cached totals are dropped and read
 * again: across instances the quota may be exceeded by the requests in flight at once.
 */
import { SvcError } from '@svc/shared';
import type { MessageStore } from '../ledger/messages.js';

export interface PendingQuota {
  /** 0 = no limit */
  maxCount: number;
  /** 0 = no limit */
  maxBytes: number;
}

interface Totals {
  count: number;
  bytes: number;
}

export class PendingTotals {
  readonly #store: MessageStore;
  readonly #quota: PendingQuota;
  readonly #totals = new Map<string, Totals>();
  /** Requests of this process between reserve and settle, per recipient. */
  readonly #open = new Map<string, number>();
  /** Recipients changed by another instance while requests here were open: re-read once they settle. */
  readonly #stale = new Set<string>();

  constructor(store: MessageStore, quota: PendingQuota) {
    this.#store = store;
    this.#quota = quota;
  }

  get enabled(): boolean {
    return this.#quota.maxCount > 0 || this.#quota.maxBytes > 0;
  }

  #of(recipientRow: string): Totals {
    let t = this.#totals.get(recipientRow);
    if (!t) {
      const row = this.#store.pendingTotals(recipientRow);
      t = { count: row.count, bytes: row.bytes };
      this.#totals.set(recipientRow, t);
    }
    return t;
  }

  /** Counts the envelopes in, or throws 507 recipient_inbox_full (and counts nothing). */
  reserve(recipientRow: string, recipientNumber: string, count: number, bytes: number): void {
    if (!this.enabled) return;
    const t = this.#of(recipientRow);
    const { maxCount, maxBytes } = this.#quota;
    if ((maxCount > 0 && t.count + count > maxCount) || (maxBytes > 0 && t.bytes + bytes > maxBytes)) {
      throw new SvcError('recipient_inbox_full', undefined, {
        detail: `${recipientNumber} holds ${t.count} pending envelopes (${t.bytes} bytes)`,
      });
    }
    t.count += count;
    t.bytes += bytes;
    this.#open.set(recipientRow, (this.#open.get(recipientRow) ?? 0) + 1);
  }

  /** The request that reserved is done (recorded, or released): its share is in the ledger or gone. */
  settle(recipientRow: string): void {
    if (!this.enabled) return;
    const n = (this.#open.get(recipientRow) ?? 0) - 1;
    if (n > 0) {
      this.#open.set(recipientRow, n);
      return;
    }
    this.#open.delete(recipientRow);
    if (this.#stale.delete(recipientRow)) this.#totals.delete(recipientRow);
  }

  /**
   * Another instance changed the recipient's inbox: read its totals from the ledger again.
   * While a request here is between reserve and settle its share is not in the ledger yet,
   * so the re-read waits for it to settle.
   */
  forget(recipientRow: string): void {
    if (!this.#totals.has(recipientRow)) return;
    if (this.#open.has(recipientRow)) this.#stale.add(recipientRow);
    else this.#totals.delete(recipientRow);
  }

  /** Takes envelopes out: acknowledged, or reserved but not recorded after all. */
  release(recipientRow: string, count: number, bytes: number): void {
    const t = this.#totals.get(recipientRow);
    if (!t) return;
    t.count = Math.max(0, t.count - count);
    t.bytes = Math.max(0, t.bytes - bytes);
  }
}
