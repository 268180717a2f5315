/**
 * Per-recipient quota of pending (unacknowledged) envelopes, by count and by bytes.
 *
 * Own ledger (SQLite, one relay): each recipient's totals are read once from the ledger's
 * pending index, then kept up to date in memory by this process, the only writer: sends
 * reserve before they publish, so two requests at once cannot both slip under the limit.
 *
 * Several relays on one SQLite file: when another instance records or acknowledges for the
 * recipient (an inbox event), the cached totals are dropped and read again once this
 * process's requests for it settle; across instances the quota may be exceeded by the
 * requests in flight at once.
 *
 * Shared ledger (PostgreSQL, several relays): another instance's sends and acks change the
 * totals, so nothing is cached: each reservation reads the ledger's totals (one row per
 * recipient, kept with the envelopes: migration 010) and adds this process's reservations
 * not yet recorded. A reservation is held before the read: of two at once, the later sees
 * the earlier; one recorded while the read is in flight may be counted twice, never
 * missed, so a request refused while others were checking is tried once more after they
 * are. Two instances sending at once may each pass the limit by at most their own batch;
 * an acknowledgement on any instance frees room at once.
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

/** Whether a reservation was refused for a full inbox (507 recipient_inbox_full). */
export const isFull = (err: unknown): boolean => err instanceof SvcError && err.code === 'recipient_inbox_full';

export class PendingTotals {
  readonly #store: MessageStore;
  readonly #quota: PendingQuota;
  readonly #shared: boolean;
  /** own ledger: the recipient's totals; shared ledger: this process's unrecorded reservations */
  readonly #totals = new Map<string, Totals>();
  /** own ledger: requests of this process between reserve and settle, per recipient */
  readonly #open = new Map<string, number>();
  /** own ledger: recipients changed by another instance while requests here were open: re-read once they settle */
  readonly #stale = new Set<string>();
  /** shared ledger: reservations reading the ledger's totals, per recipient */
  readonly #checking = new Map<string, Set<Promise<unknown>>>();

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
    if (this.#shared) return this.#reserveShared(recipientRow, recipientNumber, count, bytes, true);
    // checked and counted with no await between: two requests at once cannot both slip under
    const t = await this.#of(recipientRow);
    this.#check(t, recipientNumber, count, bytes);
    t.count += count;
    t.bytes += bytes;
    this.#open.set(recipientRow, (this.#open.get(recipientRow) ?? 0) + 1);
  }

  async #reserveShared(
    row: string,
    recipientNumber: string,
    count: number,
    bytes: number,
    again: boolean,
  ): Promise<void> {
    const held = this.#totals.get(row) ?? { count: 0, bytes: 0 };
    const others = { ...held };
    held.count += count;
    held.bytes += bytes;
    this.#totals.set(row, held);
    const checking = this.#checking.get(row) ?? new Set<Promise<unknown>>();
    this.#checking.set(row, checking);
    const before = [...checking];
    const read = this.#store.pendingTotals(row);
    checking.add(read);
    let recorded: Totals;
    try {
      recorded = await read;
      this.#check(
        { count: recorded.count + others.count, bytes: recorded.bytes + others.bytes },
        recipientNumber,
        count,
        bytes,
      );
    } catch (err) {
      this.#take(row, count, bytes);
      if (!again || before.length === 0 || !isFull(err)) throw err;
      // others' reservations counted here may have been refused: once they are decided, again
      await Promise.allSettled(before);
      return this.#reserveShared(row, recipientNumber, count, bytes, false);
    } finally {
      checking.delete(read);
      if (checking.size === 0 && this.#checking.get(row) === checking) this.#checking.delete(row);
    }
  }

  #check(t: Totals, recipientNumber: string, count: number, bytes: number): void {
    const { maxCount, maxBytes } = this.#quota;
    if ((maxCount > 0 && t.count + count > maxCount) || (maxBytes > 0 && t.bytes + bytes > maxBytes)) {
      throw new SvcError('recipient_inbox_full', undefined, {
        detail: `${recipientNumber} holds ${t.count} pending envelopes (${t.bytes} bytes)`,
      });
    }
  }

  /** The request that reserved is done (recorded, or unreserved): its share is in the ledger or gone. */
  settle(recipientRow: string): void {
    if (!this.enabled || this.#shared) return;
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
   * so the re-read waits for it to settle. (A shared ledger caches nothing to forget.)
   */
  forget(recipientRow: string): void {
    if (this.#shared || !this.#totals.has(recipientRow)) return;
    if (this.#open.has(recipientRow)) this.#stale.add(recipientRow);
    else this.#totals.delete(recipientRow);
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
