/**
 * Envelopes just accepted, by tenant and stream sequence, so a waiting reader gets them
 * without a round trip to the stream. Bounded by count and by bytes: the oldest go first.
 * Numeric keys in a map per tenant (a string key per envelope cost more than it saved).
 *
 * Nothing is allocated per envelope: a ring of slots holds each envelope's backing buffer
 * (the request body it was cut from, kept alive anyway), offset and length, and a view is
 * made only when a reader asks. Keeping a view object per envelope made every one of them
 * survive the young generation, which the garbage collector paid for on every send.
 */
export class RecentEnvelopes {
  /** per tenant: sequence → ring slot */
  readonly #byTenant = new Map<string, Map<number, number>>();
  // The ring, in arrival order; entries acknowledged early stay in it as stale slots and
  // are skipped when their turn to go comes.
  readonly #ringMaps: Array<Map<number, number> | undefined>;
  readonly #ringBuffers: Array<ArrayBufferLike | undefined>;
  readonly #ringSeqs: Float64Array;
  readonly #ringOffsets: Float64Array;
  readonly #ringLengths: Float64Array;
  #head = 0;
  #count = 0;
  #bytes = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
  ) {
    this.#ringMaps = new Array(maxEntries);
    this.#ringBuffers = new Array(maxEntries);
    this.#ringSeqs = new Float64Array(maxEntries);
    this.#ringOffsets = new Float64Array(maxEntries);
    this.#ringLengths = new Float64Array(maxEntries);
  }

  add(tenantId: string, seq: number, bytes: Uint8Array): void {
    if (bytes.length > this.maxBytes) return;
    while (this.#count > 0 && (this.#count === this.maxEntries || this.#bytes + bytes.length > this.maxBytes)) {
      const slot = this.#head;
      const map = this.#ringMaps[slot] as Map<number, number>;
      if (map.get(this.#ringSeqs[slot] as number) === slot) this.#drop(map, this.#ringSeqs[slot] as number);
      this.#ringMaps[slot] = undefined;
      this.#head = (slot + 1) % this.maxEntries;
      this.#count--;
    }
    let map = this.#byTenant.get(tenantId);
    if (!map) {
      map = new Map();
      this.#byTenant.set(tenantId, map);
    }
    this.#drop(map, seq);
    const slot = (this.#head + this.#count) % this.maxEntries;
    this.#ringMaps[slot] = map;
    this.#ringBuffers[slot] = bytes.buffer;
    this.#ringSeqs[slot] = seq;
    this.#ringOffsets[slot] = bytes.byteOffset;
    this.#ringLengths[slot] = bytes.byteLength;
    this.#count++;
    map.set(seq, slot);
    this.#bytes += bytes.length;
  }

  get(tenantId: string, seq: number): Uint8Array | undefined {
    const slot = this.#byTenant.get(tenantId)?.get(seq);
    if (slot === undefined) return undefined;
    return new Uint8Array(
      this.#ringBuffers[slot] as ArrayBufferLike,
      this.#ringOffsets[slot] as number,
      this.#ringLengths[slot] as number,
    );
  }

  delete(tenantId: string, seq: number): void {
    const map = this.#byTenant.get(tenantId);
    if (map) this.#drop(map, seq);
  }

  #drop(map: Map<number, number>, seq: number): void {
    const slot = map.get(seq);
    if (slot === undefined) return;
    map.delete(seq);
    this.#ringBuffers[slot] = undefined;
    this.#bytes -= this.#ringLengths[slot] as number;
  }

  /** Live entries and their bytes. */
  get usage(): { entries: number; bytes: number } {
    let entries = 0;
    for (const m of this.#byTenant.values()) entries += m.size;
    return { entries, bytes: this.#bytes };
  }
}
