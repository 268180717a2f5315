/**
 * What one event stream has sent, so that an envelope recorded after others with higher
 * stream sequences is still sent, once. Sequences are assigned when JetStream stores an
 * envelope, rows appear when an instance records it: with several instances (or a client
 * retrying, within JetStream's dedupe window, a send whose instance died before recording
 * it) a lower sequence can be recorded after a higher one was sent. A plain "after the
 * last cursor" would skip it.
 *
 * Reads are of two kinds. The usual one asks for what comes after the highest sequence
 * sent (`after`), as a cursor would. About once a second, while a late record is possible,
 * a full read goes back to `floor` and leaves out what was sent (`has`). The floor moves up
 * to the highest sequence sent more than `graceMs` ago: every envelope stored before it is
 * recorded by then, or (its dedupe window over) never recorded under that sequence.
 */
export class DeliveredWindow {
  #floor: number;
  #maxSent: number;
  /** Sequences above the floor sent and, at the last full read, still pending. */
  readonly #sent = new Set<number>();
  /** (when, highest sequence sent by then), oldest first; one per second at most. */
  readonly #marks: Array<{ at: number; seq: number }> = [];
  readonly #graceMs: number;
  readonly #fullEveryMs: number;
  #lastFull = Number.NEGATIVE_INFINITY;

  constructor(after: number, graceMs: number, fullEveryMs = 1000) {
    this.#floor = after;
    this.#maxSent = after;
    this.#graceMs = graceMs;
    this.#fullEveryMs = fullEveryMs;
  }

  /** Where a full read starts. */
  get floor(): number {
    return this.#floor;
  }

  /** Where the usual read starts: after everything sent. */
  get after(): number {
    return this.#maxSent;
  }

  /** Sequences a full read will meet again and leave out (it asks for that many more rows). */
  get size(): number {
    return this.#sent.size;
  }

  /** Whether a late record is still possible at all (something sent within the grace). */
  get open(): boolean {
    return this.#floor < this.#maxSent;
  }

  /** A full read is due now (ms until it is due, when positive). */
  fullReadIn(now: number): number {
    return this.open ? this.#lastFull + this.#fullEveryMs - now : Number.POSITIVE_INFINITY;
  }

  has(seq: number): boolean {
    return seq <= this.#floor || this.#sent.has(seq);
  }

  /** Sent at `at` (the time of the read that found it). */
  add(seq: number, at: number): void {
    if (seq <= this.#floor) return;
    this.#sent.add(seq);
    if (seq <= this.#maxSent) return;
    this.#maxSent = seq;
    const last = this.#marks.at(-1);
    // one mark per second: its time is the earliest of them, so the floor moves no later
    // than it should, at most a second early against a grace with 30 s to spare
    if (last && at - last.at < 1000) last.seq = seq;
    else this.#marks.push({ at, seq });
  }

  /**
   * After a full read that began at `readAt`: `pending` is every sequence it returned at or
   * above the floor, `complete` whether it returned all there were (not cut at its limit).
   * What was sent and is no longer pending (acknowledged) is forgotten, and the floor moves
   * past what was sent more than the grace before the read began.
   */
  fullRead(readAt: number, pending: number[], complete: boolean): void {
    this.#lastFull = readAt;
    const seen = new Set(pending);
    const reach = complete ? Number.POSITIVE_INFINITY : Math.max(this.#floor, ...pending);
    for (const seq of this.#sent) if (seq <= reach && !seen.has(seq)) this.#sent.delete(seq);
    if (!complete) return;
    let floor = this.#floor;
    while (this.#marks.length > 0 && (this.#marks[0]?.at ?? 0) + this.#graceMs < readAt) {
      floor = Math.max(floor, this.#marks.shift()?.seq ?? floor);
    }
    if (floor === this.#floor) return;
    this.#floor = floor;
    for (const seq of this.#sent) if (seq <= floor) this.#sent.delete(seq);
  }
}
