/**
 * Per-sender message numbers in a group or broadcast. Each sender numbers its messages
 * per conversation from 1, inside the ciphertext, so the relay (which sees only sealed
 * envelopes) can drop, repeat or reorder one but never renumber it. The receiver compares
 * each arrival with what it already holds from that sender:
 *
 * - the next number: in order;
 * - higher than the next: a gap (the numbers in between did not arrive, yet);
 * - lower than the highest, never seen: a late arrival (it fills a gap: reordered);
 * - a number already held: a duplicate (never archived twice).
 *
 * The first message held from a sender sets the baseline (an invited member joins
 * mid-stream), so a loss before it is not reported.
 */
export type SequenceKind = 'in_order' | 'gap' | 'reordered' | 'duplicate';

export interface SequenceNote {
  /** numbers that had not arrived when this one did */
  gap?: { from: number; to: number };
  /** arrived after a higher number from the same sender */
  late?: true;
  /** how many more times it arrived */
  duplicates?: number;
}

export interface Arrival {
  kind: SequenceKind;
  note?: SequenceNote;
}

/** `highest` = the highest number held from this sender (undefined: none yet); `held(n)` = whether n is held. */
export function classifyArrival(seq: number, highest: number | undefined, held: (n: number) => boolean): Arrival {
  if (held(seq)) return { kind: 'duplicate' };
  if (highest === undefined || seq === highest + 1) return { kind: 'in_order' };
  if (seq > highest + 1) return { kind: 'gap', note: { gap: { from: highest + 1, to: seq - 1 } } };
  return { kind: 'reordered', note: { late: true } };
}

/** The numbers of a noted gap that are still missing now. */
export function stillMissing(note: SequenceNote | undefined, held: (n: number) => boolean): number[] {
  if (!note?.gap) return [];
  const out: number[] = [];
  // a gap larger than this is reported by its bounds only
  const to = Math.min(note.gap.to, note.gap.from + 999);
  for (let n = note.gap.from; n <= to; n++) if (!held(n)) out.push(n);
  return out;
}
