/**
 * What one event stream has sent, so that an envelope recorded after others with higher
 * stream sequences is still sent, once. Sequences are assigned when JetStream stores an
 * envelope, rows appear when an instance records it: with several instances (or a client
 * retrying, within JetStream's dedupe window, a send whose instance died before recording
 * it) a lower sequence can be recorded after a higher one was sent. A plain "after the
 * last cursor" would skip it.
 *
 * The stream reads from `floor` and leaves out what it sent. The floor moves up to a sent
 * sequence once `graceMs` have passed since it was sent: every envelope stored before it
 * is recorded by then (or, its dedupe window over, is never recorded under that sequence).
 */
export class DeliveredWindow {
  #floor: number;
  /** sequence → when it was sent (ms), in the order sent */
  readonly #sent = new Map<number, number>();
  readonly #graceMs: number;

  constructor(after: number, graceMs: number) {
    this.#floor = after;
    this.#graceMs = graceMs;
  }

  /** Read the ledger after this sequence. */
  get floor(): number {
    return this.#floor;
  }

  /** Sequences above the floor already sent (the read asks for that many more rows). */
  get size(): number {
    return this.#sent.size;
  }

  has(seq: number): boolean {
    return seq <= this.#floor || this.#sent.has(seq);
  }

  add(seq: number, at: number): void {
    if (seq > this.#floor) this.#sent.set(seq, at);
  }

  /**
   * Moves the floor past what was sent more than the grace before `readAt`, the moment the
   * last read of the ledger began: anything recorded before then was in that read. Only
   * after a read that sent everything it found (a read cut at its limit may have left a
   * lower sequence for the next one).
   */
  advance(readAt: number): void {
    let floor = this.#floor;
    for (const [seq, at] of this.#sent) {
      if (at + this.#graceMs < readAt && seq > floor) floor = seq;
    }
    if (floor === this.#floor) return;
    this.#floor = floor;
    for (const seq of this.#sent.keys()) if (seq <= floor) this.#sent.delete(seq);
  }
}
