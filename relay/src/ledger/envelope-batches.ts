/**
 * How the ledger keeps accepted envelopes (migration 013): a row per batch, one request's
 * envelopes to one recipient, that holds their message ids, stream sequences and sizes as
 * text, instead of a row per envelope. Recording a send is then one small B-tree insert per
 * request: a row per envelope cost the send path 3–6 µs per envelope (its two B-trees),
 * the largest piece of work the relay adds to a publish (bench:ledger, docs/messaging.md).
 *
 * What still has to be found by message id (a retry's duplicates, an acknowledgement) is
 * found through the batches' id ranges. Message ids are UUIDv7: their first 13 characters
 * are the millisecond they were made, in lowercase hex, so string order is time order.
 * Every batch of more than one envelope spans at most BATCH_SPAN_MS of id time, so the
 * batches that can hold an id X begin at most that long before X: an index range on
 * (recipient, first id) from X's time minus the span up to X. An id of any other shape gets
 * a batch of its own and is looked for from the recipient's first batch (never on the send
 * path, which accepts UUIDv7 ids only).
 */

/** The most id time (ms) a batch of several envelopes spans. */
export const BATCH_SPAN_MS = 250;
/**
 * The most stream sequences a batch spans (its last minus its first): a pending read after
 * sequence S looks for batches that began after S minus this, which covers every batch
 * that straddles S without walking the recipient's older pending batches.
 */
export const BATCH_MAX_SEQ_SPREAD = 10_000;
/** The most envelopes in one batch row. */
export const BATCH_MAX_ITEMS = 500;

/** What a batch records of each of its envelopes. */
export interface BatchItem {
  message_id: string;
  stream_seq: number;
  size: number;
}

/** The columns of a batch that describe its envelopes. */
export interface BatchItems {
  first_id: string;
  last_id: string;
  first_seq: number;
  last_seq: number;
  /** the ids, then sequences, then sizes, each list comma-separated in the same order */
  message_ids: string;
  seqs: string;
  sizes: string;
  count: number;
  bytes: number;
}

const TIME_PREFIX = /^[0-9a-f]{8}-[0-9a-f]{4}/;

/** The millisecond a UUIDv7-shaped id was made (its first 48 bits), or undefined for another id. */
export function idTime(id: string): number | undefined {
  if (!TIME_PREFIX.test(id)) return undefined;
  return Number.parseInt(id.slice(0, 8), 16) * 0x10000 + Number.parseInt(id.slice(9, 13), 16);
}

/**
 * The least first id of a batch that can hold `id`: the id prefix of its time minus the
 * span (a prefix sorts before every id that begins with it), or '' for an id of another
 * shape, whose batch may begin anywhere.
 */
export function firstIdBound(id: string): string {
  const t = idTime(id);
  if (t === undefined) return '';
  const hex = Math.max(0, t - BATCH_SPAN_MS)
    .toString(16)
    .padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}`;
}

/**
 * The batches `items` (one recipient's, from one sender) are recorded in. Usually one: a
 * request's ids are made within a millisecond or so. Otherwise, in id order, batches that
 * keep to the span, the sequence spread and the size, and a batch of its own for an id that
 * is not UUIDv7-shaped.
 */
export function planBatches<T extends BatchItem>(items: readonly T[]): T[][] {
  if (items.length === 0) return [];
  if (items.length === 1) return [[...items]];
  if (items.length <= BATCH_MAX_ITEMS) {
    // one pass; times only of the least and greatest id (string order is time order)
    const first = items[0] as T;
    let lowest = first.message_id;
    let highest = lowest;
    let sMin = first.stream_seq;
    let sMax = sMin;
    let timed = true;
    for (const it of items) {
      const id = it.message_id;
      if (!TIME_PREFIX.test(id)) {
        timed = false;
        break;
      }
      if (id < lowest) lowest = id;
      else if (id > highest) highest = id;
      if (it.stream_seq < sMin) sMin = it.stream_seq;
      else if (it.stream_seq > sMax) sMax = it.stream_seq;
    }
    if (
      timed &&
      (idTime(highest) as number) - (idTime(lowest) as number) <= BATCH_SPAN_MS &&
      sMax - sMin <= BATCH_MAX_SEQ_SPREAD
    ) {
      return [[...items]];
    }
  }
  const batches: T[][] = [];
  const timed: { item: T; t: number }[] = [];
  for (const item of items) {
    const t = idTime(item.message_id);
    if (t === undefined) batches.push([item]);
    else timed.push({ item, t });
  }
  timed.sort((a, b) => (a.item.message_id < b.item.message_id ? -1 : a.item.message_id > b.item.message_id ? 1 : 0));
  let current: T[] = [];
  let start = 0;
  let sMin = 0;
  let sMax = 0;
  for (const { item, t } of timed) {
    const seq = item.stream_seq;
    if (
      current.length > 0 &&
      (current.length === BATCH_MAX_ITEMS ||
        t - start > BATCH_SPAN_MS ||
        Math.max(sMax, seq) - Math.min(sMin, seq) > BATCH_MAX_SEQ_SPREAD)
    ) {
      batches.push(current);
      current = [];
    }
    if (current.length === 0) {
      start = t;
      sMin = seq;
      sMax = seq;
    }
    current.push(item);
    if (seq < sMin) sMin = seq;
    if (seq > sMax) sMax = seq;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/** A batch's item columns, in one pass. */
export function batchItems(items: readonly BatchItem[]): BatchItems {
  const ids = new Array<string>(items.length);
  const seqs = new Array<number>(items.length);
  const sizes = new Array<number>(items.length);
  const first = items[0] as BatchItem;
  let firstId = first.message_id;
  let lastId = first.message_id;
  let firstSeq = first.stream_seq;
  let lastSeq = first.stream_seq;
  let bytes = 0;
  for (let i = 0; i < items.length; i++) {
    const it = items[i] as BatchItem;
    ids[i] = it.message_id;
    seqs[i] = it.stream_seq;
    sizes[i] = it.size;
    bytes += it.size;
    if (it.message_id < firstId) firstId = it.message_id;
    else if (it.message_id > lastId) lastId = it.message_id;
    if (it.stream_seq < firstSeq) firstSeq = it.stream_seq;
    else if (it.stream_seq > lastSeq) lastSeq = it.stream_seq;
  }
  return {
    first_id: firstId,
    last_id: lastId,
    first_seq: firstSeq,
    last_seq: lastSeq,
    message_ids: ids.join(','),
    seqs: seqs.join(','),
    sizes: sizes.join(','),
    count: items.length,
    bytes,
  };
}

/** The items of a stored batch, in the order it recorded them. */
export function readItems(b: Pick<BatchItems, 'message_ids' | 'seqs' | 'sizes'>): BatchItem[] {
  const ids = b.message_ids.split(',');
  const seqs = b.seqs.split(',');
  const sizes = b.sizes.split(',');
  const out = new Array<BatchItem>(ids.length);
  for (let i = 0; i < ids.length; i++) {
    out[i] = { message_id: ids[i] as string, stream_seq: Number(seqs[i]), size: Number(sizes[i]) };
  }
  return out;
}
