import { newMessageId } from '@svc/shared';
import { describe, expect, it } from 'vitest';
import {
  BATCH_MAX_ITEMS,
  BATCH_MAX_SEQ_SPREAD,
  BATCH_SPAN_MS,
  type BatchItem,
  batchItems,
  firstIdBound,
  idTime,
  planBatches,
  readItems,
} from './envelope-batches.js';

/** A UUIDv7-shaped id made at `ms` (random in its other bits, as clients make them). */
function idAt(ms: number): string {
  const hex = ms.toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8)}${newMessageId().slice(13)}`;
}

const item = (message_id: string, stream_seq: number, size = 10): BatchItem => ({ message_id, stream_seq, size });

describe('envelope batches', () => {
  it('reads the time a UUIDv7 id was made, and none from any other id', () => {
    const t = 1_795_000_000_123;
    expect(idTime(idAt(t))).toBe(t);
    const before = Date.now();
    const now = idTime(newMessageId()) as number;
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
    for (const other of ['m1', '', 'ABCDEF01-2345-7000-8000-000000000000', 'zz']) expect(idTime(other)).toBeUndefined();
  });

  it('bounds the first id of a batch that can hold an id: the span before its time, or anywhere for another shape', () => {
    const t = 1_795_000_000_123;
    const id = idAt(t);
    const bound = firstIdBound(id);
    expect(bound).toHaveLength(13);
    // every id made within the span before it sorts at or after the bound, every id made before that sorts before it
    for (const dt of [0, 1, BATCH_SPAN_MS - 1, BATCH_SPAN_MS]) expect(idAt(t - dt) >= bound).toBe(true);
    for (const dt of [BATCH_SPAN_MS + 1, BATCH_SPAN_MS + 1000, t]) expect(idAt(t - dt) >= bound).toBe(false);
    expect(firstIdBound(idAt(10))).toBe('00000000-0000');
    expect(firstIdBound('m1')).toBe('');
  });

  it('plans one batch for a request’s ids, and splits by span, sequence spread and size otherwise', () => {
    const t = 1_795_000_000_000;
    const usual = Array.from({ length: 100 }, (_, i) => item(idAt(t + (i % 3)), 500 + i));
    expect(planBatches(usual)).toEqual([usual]);
    expect(planBatches([])).toEqual([]);

    // ids made over three spans: each batch keeps to one span of time
    const spread = [0, 0.4, 0.9, 1.2, 2.5, 2.6, 3].map((f, i) => item(idAt(t + Math.round(f * BATCH_SPAN_MS)), i + 1));
    const byTime = planBatches([...spread].reverse());
    for (const b of byTime) {
      const times = b.map((x) => idTime(x.message_id) as number);
      expect(Math.max(...times) - Math.min(...times)).toBeLessThanOrEqual(BATCH_SPAN_MS);
    }
    expect(
      byTime
        .flat()
        .map((x) => x.message_id)
        .sort(),
    ).toEqual(spread.map((x) => x.message_id).sort());
    expect(byTime.length).toBe(3);

    // sequences far apart
    const far = [item(idAt(t), 1), item(idAt(t), 2), item(idAt(t), 2 + BATCH_MAX_SEQ_SPREAD + 1)];
    const bySeq = planBatches(far);
    expect(bySeq.length).toBeGreaterThanOrEqual(2);
    for (const b of bySeq) {
      const seqs = b.map((x) => x.stream_seq);
      expect(Math.max(...seqs) - Math.min(...seqs)).toBeLessThanOrEqual(BATCH_MAX_SEQ_SPREAD);
    }

    // more than a batch holds
    const many = Array.from({ length: BATCH_MAX_ITEMS * 2 + 1 }, (_, i) => item(idAt(t), i + 1));
    expect(planBatches(many).map((b) => b.length)).toEqual([BATCH_MAX_ITEMS, BATCH_MAX_ITEMS, 1]);

    // an id of another shape gets a batch of its own
    const mixed = [item(idAt(t), 1), item('m1', 2), item(idAt(t + 1), 3), item('m2', 4)];
    const planned = planBatches(mixed);
    expect(planned.filter((b) => b.length === 1 && idTime((b[0] as BatchItem).message_id) === undefined)).toHaveLength(
      2,
    );
    expect(planned.flat()).toHaveLength(4);
  });

  it('writes a batch’s columns and reads its items back as they were', () => {
    const t = 1_795_000_000_000;
    const items = [item(idAt(t + 5), 9, 100), item(idAt(t), 7, 20), item(idAt(t + 9), 12, 3)];
    const cols = batchItems(items);
    expect(cols).toMatchObject({
      first_id: [...items].sort((a, b) => (a.message_id < b.message_id ? -1 : 1))[0]?.message_id,
      last_id: [...items].sort((a, b) => (a.message_id < b.message_id ? 1 : -1))[0]?.message_id,
      first_seq: 7,
      last_seq: 12,
      count: 3,
      bytes: 123,
    });
    expect(readItems(cols)).toEqual(items);
  });
});
