/**
 * Envelopes just accepted, by tenant and stream sequence, so a waiting reader gets them
 * without a round trip to the stream. Bounded by count and by bytes: the oldest go first.
 * Numeric keys in a map per tenant (a string key per envelope cost more than it saved).
 *
 * The bytes are copied into chunks allocated once and reused in turn, not kept as views of
 * the request bodies: a kept view held its whole body (an allocation of its own per request)
 * past the young generation, and that promotion, then the collection of the bodies as old
 * garbage, cost more than the send path itself (bench:relay: 64 → 50 µs of server CPU per
 * envelope without it). Nothing else is allocated per envelope: a ring of slots holds each
 * entry's chunk, offset and length.
 */

/** Bytes per chunk: several of the largest envelopes (MESSAGE_LIMITS.maxEnvelopeBytes, 256 KiB). */
const DEFAULT_CHUNK_BYTES = 1024 * 1024;

export class RecentEnvelopes {
  /** per tenant: sequence → ring slot */
  readonly #byTenant = new Map<string, Map<number, number>>();
  // The ring, in arrival order; entries acknowledged early stay in it as stale slots and
  // are skipped when their turn to go comes.
  readonly #ringMaps: Array<Map<number, number> | undefined>;
  readonly #ringSeqs: Float64Array;
  readonly #ringChunks: Int32Array;
  readonly #ringOffsets: Int32Array;
  readonly #ringLengths: Int32Array;
  #head = 0;
  #count = 0;
  #bytes = 0;
  /** allocated on first use, then written over in turn: chunk k holds only entries older than chunk k+1's */
  readonly #chunks: Buffer[] = [];
  readonly #chunkBytes: number;
  readonly #chunkCount: number;
  /** where the next entry goes */
  #chunk = 0;
  #offset = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxBytes: number,
    chunkBytes = DEFAULT_CHUNK_BYTES,
  ) {
    this.#chunkBytes = Math.min(chunkBytes, maxBytes);
    this.#chunkCount = Math.max(1, Math.floor(maxBytes / this.#chunkBytes));
    this.#ringMaps = new Array(maxEntries);
    this.#ringSeqs = new Float64Array(maxEntries);
    this.#ringChunks = new Int32Array(maxEntries);
    this.#ringOffsets = new Int32Array(maxEntries);
    this.#ringLengths = new Int32Array(maxEntries);
  }

  /** Keeps a copy of `bytes` (the caller's buffer is not held). An envelope larger than a chunk is not kept. */
  add(tenantId: string, seq: number, bytes: Uint8Array): void {
    const length = bytes.byteLength;
    if (length > this.#chunkBytes) return;
    if (this.#offset + length > this.#chunkBytes) {
      // the next chunk in turn holds the oldest entries: they go
      this.#chunk = (this.#chunk + 1) % this.#chunkCount;
      this.#offset = 0;
      while (this.#count > 0 && this.#ringChunks[this.#head] === this.#chunk) this.#evictOldest();
    }
    if (this.#count === this.maxEntries) this.#evictOldest();
    let map = this.#byTenant.get(tenantId);
    if (!map) {
      map = new Map();
      this.#byTenant.set(tenantId, map);
    }
    this.#drop(map, seq);
    let chunk = this.#chunks[this.#chunk];
    if (chunk === undefined) {
      chunk = Buffer.allocUnsafeSlow(this.#chunkBytes);
      this.#chunks[this.#chunk] = chunk;
    }
    chunk.set(bytes, this.#offset);
    const slot = (this.#head + this.#count) % this.maxEntries;
    this.#ringMaps[slot] = map;
    this.#ringSeqs[slot] = seq;
    this.#ringChunks[slot] = this.#chunk;
    this.#ringOffsets[slot] = this.#offset;
    this.#ringLengths[slot] = length;
    this.#count++;
    this.#offset += length;
    map.set(seq, slot);
    this.#bytes += length;
  }

  /** A copy of the envelope's bytes (the chunk it lives in is written over later). */
  get(tenantId: string, seq: number): Buffer | undefined {
    const slot = this.#byTenant.get(tenantId)?.get(seq);
    if (slot === undefined) return undefined;
    const chunk = this.#chunks[this.#ringChunks[slot] as number] as Buffer;
    const offset = this.#ringOffsets[slot] as number;
    return Buffer.from(chunk.subarray(offset, offset + (this.#ringLengths[slot] as number)));
  }

  delete(tenantId: string, seq: number): void {
    const map = this.#byTenant.get(tenantId);
    if (map) this.#drop(map, seq);
  }

  #evictOldest(): void {
    const slot = this.#head;
    const map = this.#ringMaps[slot] as Map<number, number>;
    if (map.get(this.#ringSeqs[slot] as number) === slot) this.#drop(map, this.#ringSeqs[slot] as number);
    this.#ringMaps[slot] = undefined;
    this.#head = (slot + 1) % this.maxEntries;
    this.#count--;
  }

  #drop(map: Map<number, number>, seq: number): void {
    const slot = map.get(seq);
    if (slot === undefined) return;
    map.delete(seq);
    this.#bytes -= this.#ringLengths[slot] as number;
  }

  /** Live entries and their bytes. */
  get usage(): { entries: number; bytes: number } {
    let entries = 0;
    for (const m of this.#byTenant.values()) entries += m.size;
    return { entries, bytes: this.#bytes };
  }
}
