/**
 * Per-recipient quota of pending (unacknowledged) envelopes, by count and by bytes.
 *
 * Own ledger (SQLite, one relay): each recipient's totals are read once from the ledger's
 * pending index, then kept up to date in memory by this process, the only writer: sends
 * reserve before they publish, so two requests at once cannot both slip under the limit.
 *
 * Shared ledger (PostgreSQL, several relays): another instance's sends and acks change the
 * totals, so nothing is cached: each reservation reads the ledger's totals and adds this
 * process's reservations not yet recorded. Two instances sending at once may each pass the
 * limit by at most their own batch; an acknowledgement on any instance frees room at once.
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
  readonly #shared: boolean;
  /** own ledger: the recipient's totals; shared ledger: this process's unrecorded reservations */
  readonly #totals = new Map<string, Totals>();

  constructor(store: MessageStore, quota: PendingQuota, opts: { shared?: boolean } = {}) {
    this.#store = store;
    this.#quota = quota;
    this.#shared = opts.shared === true;
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
    let t: Totals;
    let held: Totals;
    if (this.#shared) {
      const recorded = await this.#store.pendingTotals(recipientRow);
      held = this.#totals.get(recipientRow) ?? { count: 0, bytes: 0 };
      t = { count: recorded.count + held.count, bytes: recorded.bytes + held.bytes };
    } else {
      // checked and counted with no await between: two requests at once cannot both slip under
      t = await this.#of(recipientRow);
      held = t;
    }
    const { maxCount, maxBytes } = this.#quota;
    if ((maxCount > 0 && t.count + count > maxCount) || (maxBytes > 0 && t.bytes + bytes > maxBytes)) {
      throw new SvcError('recipient_inbox_full', undefined, {
        detail: `${recipientNumber} holds ${t.count} pending envelopes (${t.bytes} bytes)`,
      });
    }
    held.count += count;
    held.bytes += bytes;
    this.#totals.set(recipientRow, held);
  }

  #take(recipientRow: string, count: number, bytes: number): void {
    const t = this.#totals.get(recipientRow);
    if (!t) return;
    t.count = Math.max(0, t.count - count);
    t.bytes = Math.max(0, t.bytes - bytes);
    if (this.#shared && t.count === 0) this.#totals.delete(recipientRow);
  }

  /** Takes out reserved envelopes that were not recorded after all (a failure, or rows already there). */
  unreserve(recipientRow: string, count: number, bytes: number): void {
    this.#take(recipientRow, count, bytes);
  }

  /** Reserved envelopes the ledger now holds: on a shared ledger its totals count them from now on. */
  recorded(recipientRow: string, count: number, bytes: number): void {
    if (this.#shared) this.#take(recipientRow, count, bytes);
  }

  /** Takes out an acknowledged envelope (on a shared ledger its totals already left it out). */
  acknowledged(recipientRow: string, count: number, bytes: number): void {
    if (!this.#shared) this.#take(recipientRow, count, bytes);
  }
}
