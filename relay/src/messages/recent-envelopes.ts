/**
 * Envelopes just accepted, by tenant and stream sequence, so a waiting reader gets them
 * without a round trip to the stream. Bounded by count and by bytes: the oldest go first.
 * Numeric keys in a map per tenant (a string key per envelope cost more than it saved).
 */
export class RecentEnvelopes {
  readonly #byTenant = new Map<string, Map<number, Uint8Array>>();
  // A FIFO of (tenant map, sequence) in arrival order; entries acknowledged early stay
  // in it as stale slots and are skipped when their turn to go comes.
  readonly #ringMaps: Array<Map<number, Uint8Array> | undefined>;
  readonly #ringSeqs: Float64Array;
  #head = 0;
  #count = 0;
  #bytes = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
  ) {
    this.#ringMaps = new Array(maxEntries);
    this.#ringSeqs = new Float64Array(maxEntries);
  }

  add(tenantId: string, seq: number, bytes: Uint8Array): void {
    if (bytes.length > this.maxBytes) return;
    while (this.#count > 0 && (this.#count === this.maxEntries || this.#bytes + bytes.length > this.maxBytes)) {
      const slot = this.#head;
      const map = this.#ringMaps[slot] as Map<number, Uint8Array>;
      this.#drop(map, this.#ringSeqs[slot] as number);
      this.#ringMaps[slot] = undefined;
      this.#head = (slot + 1) % this.maxEntries;
      this.#count--;
    }
    let map = this.#byTenant.get(tenantId);
    if (!map) {
      map = new Map();
      this.#byTenant.set(tenantId, map);
    }
    const slot = (this.#head + this.#count) % this.maxEntries;
    this.#ringMaps[slot] = map;
    this.#ringSeqs[slot] = seq;
    this.#count++;
    this.#drop(map, seq);
    map.set(seq, bytes);
    this.#bytes += bytes.length;
  }

  get(tenantId: string, seq: number): Uint8Array | undefined {
    return this.#byTenant.get(tenantId)?.get(seq);
  }

  delete(tenantId: string, seq: number): void {
    const map = this.#byTenant.get(tenantId);
    if (map) this.#drop(map, seq);
  }

  #drop(map: Map<number, Uint8Array>, seq: number): void {
    const bytes = map.get(seq);
    if (bytes === undefined) return;
    map.delete(seq);
    this.#bytes -= bytes.length;
  }

  /** Live entries and their bytes. */
  get usage(): { entries: number; bytes: number } {
    let entries = 0;
    for (const m of this.#byTenant.values()) entries += m.size;
    return { entries, bytes: this.#bytes };
  }
}
