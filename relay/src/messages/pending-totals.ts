/**
 * Per-recipient quota of pending (unacknowledged) envelopes, by count and by bytes. Each
 * recipient's totals are read once from the ledger's pending index, then kept up to date
 * in memory by this process (the only writer of its SQLite ledger): sends reserve before
 * they publish, so two requests at once cannot both slip under the limit.
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

  constructor(store: MessageStore, quota: PendingQuota) {
    this.#store = store;
    this.#quota = quota;
  }

  get enabled(): boolean {
    return this.#quota.maxCount > 0 || this.#quota.maxBytes > 0;
  }

  async #of(recipientRow: string): Promise<Totals> {
    const cached = this.#totals.get(recipientRow);
    if (cached) return cached;
    const row = await this.#store.pendingTotals(recipientRow);
    // another request may have read them meanwhile: keep the first, it may hold reservations
    let t = this.#totals.get(recipientRow);
    if (!t) {
      t = { count: row.count, bytes: row.bytes };
      this.#totals.set(recipientRow, t);
    }
    return t;
  }

  /** Counts the envelopes in, or throws 507 recipient_inbox_full (and counts nothing). */
  async reserve(recipientRow: string, recipientNumber: string, count: number, bytes: number): Promise<void> {
    if (!this.enabled) return;
    // checked and counted with no await between: two requests at once cannot both slip under
    const t = await this.#of(recipientRow);
    const { maxCount, maxBytes } = this.#quota;
    if ((maxCount > 0 && t.count + count > maxCount) || (maxBytes > 0 && t.bytes + bytes > maxBytes)) {
      throw new SvcError('recipient_inbox_full', undefined, {
        detail: `${recipientNumber} holds ${t.count} pending envelopes (${t.bytes} bytes)`,
      });
    }
    t.count += count;
    t.bytes += bytes;
  }

  /** Takes envelopes out: acknowledged, or reserved but not recorded after all. */
  release(recipientRow: string, count: number, bytes: number): void {
    const t = this.#totals.get(recipientRow);
    if (!t) return;
    t.count = Math.max(0, t.count - count);
    t.bytes = Math.max(0, t.bytes - bytes);
  }
}
