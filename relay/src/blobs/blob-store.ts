/**
 * Attachments as opaque blobs in the tenant's JetStream account (stream SVC_BLOBS), so
 * tenancy and the account's limits hold as for messages. The bytes are encrypted on the
 * sender's machine; the relay stores and serves them and never has a key.
 *
 *   blob.<id>.c.<n>   chunk n (256 KiB), one message per subject
 *   blob.<id>.m       the record: owner, recipients, size, chunk count, who acknowledged
 *
 * A blob is readable by its owner and the recipients named at upload (anyone else gets
 * `unknown_blob`, as for an id that does not exist). It is purged once every recipient
 * acknowledged it, or when the stream's retention (as for envelopes) runs out.
 *
 * The record is rewritten only over the version it was read from (the expected last
 * subject sequence), so acknowledgements arriving together, on one relay instance or on
 * several sharing the bus, are each counted: the one that lost reads the record again.
 */
import { randomBytes } from 'node:crypto';
import {
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { SvcError } from '@svc/shared';
import { STREAM_MAX_AGE_MS } from '../bus/index.js';
import type { RelayBus } from '../context.js';

export const BLOBS_STREAM = 'SVC_BLOBS';
const CHUNK_BYTES = 256 * 1024;
export const BLOB_ID = /^[A-Za-z0-9_-]{22}$/;

interface BlobRecord {
  owner: string;
  recipients: string[];
  size: number;
  chunks: number;
  created_at: string;
  acked: string[];
}

interface Clients {
  js: JetStreamClient;
  jsm: JetStreamManager;
}

const notFound = () => new SvcError('unknown_blob');
const isNotFound = (err: unknown) => /no message found|not found/i.test((err as Error).message);
/** Another write of the subject landed after the version read: read again. */
const isStale = (err: unknown) =>
  err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence;
const storageFull = (err: unknown) =>
  /maximum (messages|bytes)|resource limits exceeded|insufficient (storage )?resources/i.test((err as Error).message);

export class BlobStore {
  readonly #bus: RelayBus;
  readonly #timeoutMs: number;
  readonly #clients = new Map<string, Promise<Clients>>();

  /** Told of each blob that left the stream here (acknowledged by all, or its upload failed); best-effort. */
  readonly #released: ((blobId: string) => Promise<void>) | undefined;

  constructor(bus: RelayBus, opts: { timeoutMs?: number; released?: (blobId: string) => Promise<void> } = {}) {
    this.#bus = bus;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#released = opts.released;
  }

  /** The tenant's clients, its blob stream created on first use. */
  #tenant(tenantId: string): Promise<Clients> {
    let c = this.#clients.get(tenantId);
    if (!c) {
      c = (async () => {
        const nc = await this.#bus.tenantConnection(tenantId);
        const jsm = await jetstreamManager(nc, { timeout: this.#timeoutMs });
        const config = {
          name: BLOBS_STREAM,
          subjects: ['blob.>'],
          retention: RetentionPolicy.Limits,
          storage: StorageType.File,
          // a full store refuses new blobs; it never drops ones not yet fetched
          discard: DiscardPolicy.New,
          max_age: nanos(STREAM_MAX_AGE_MS),
          max_bytes: this.#bus.blobQuota,
          max_msgs_per_subject: 1,
          max_msg_size: -1,
          allow_direct: true,
          num_replicas: this.#bus.streamReplicas,
        };
        try {
          await jsm.streams.info(BLOBS_STREAM);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          await jsm.streams.add(config);
        }
        return { js: jetstream(nc, { timeout: this.#timeoutMs }), jsm };
      })();
      c.catch(() => this.#clients.delete(tenantId));
      this.#clients.set(tenantId, c);
    }
    return c;
  }

  /**
   * The record and the sequence it is stored at. `fresh` asks the stream leader: a direct
   * get may be answered by a replica a write behind, fine to serve bytes, not to rewrite.
   */
  async #record(
    jsm: JetStreamManager,
    id: string,
    fresh = false,
  ): Promise<{ record: BlobRecord; seq: number } | undefined> {
    const query = { last_by_subj: `blob.${id}.m` };
    try {
      const m = fresh
        ? await jsm.streams.getMessage(BLOBS_STREAM, query)
        : await jsm.direct.getMessage(BLOBS_STREAM, query);
      return m ? { record: JSON.parse(new TextDecoder().decode(m.data)) as BlobRecord, seq: m.seq } : undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Stores the bytes for `recipients`; the blob id. `admit`, given the new blob's id before
   * anything is stored, may refuse it by throwing (the uploader's share of the store).
   */
  async put(
    tenantId: string,
    owner: string,
    recipients: string[],
    bytes: Uint8Array,
    admit?: (blobId: string) => Promise<void>,
  ): Promise<{ blob_id: string }> {
    const { js } = await this.#tenant(tenantId).catch((err) => {
      throw storageFull(err)
        ? new SvcError('tenant_storage_full', undefined, { detail: (err as Error).message, cause: err })
        : new SvcError('bus_unavailable', undefined, { detail: (err as Error).message, cause: err });
    });
    const id = randomBytes(16).toString('base64url');
    const chunks = Math.max(1, Math.ceil(bytes.length / CHUNK_BYTES));
    const record: BlobRecord = {
      owner,
      recipients,
      size: bytes.length,
      chunks,
      created_at: new Date().toISOString(),
      acked: [],
    };
    await admit?.(id);
    try {
      for (let n = 0; n < chunks; n++) {
        await js.publish(`blob.${id}.c.${n}`, bytes.subarray(n * CHUNK_BYTES, (n + 1) * CHUNK_BYTES), {
          expect: { streamName: BLOBS_STREAM },
        });
      }
      await js.publish(`blob.${id}.m`, JSON.stringify(record), { expect: { streamName: BLOBS_STREAM } });
    } catch (err) {
      await this.#purge(tenantId, id).catch(() => undefined);
      if (storageFull(err)) throw new SvcError('tenant_storage_full', undefined, { detail: (err as Error).message });
      throw new SvcError('bus_unavailable', undefined, { detail: (err as Error).message, cause: err });
    }
    return { blob_id: id };
  }

  /** The bytes, for the owner or a recipient only. */
  get(tenantId: string, reader: string, id: string): Promise<Uint8Array> {
    return onBus(() => this.#get(tenantId, reader, id));
  }

  async #get(tenantId: string, reader: string, id: string): Promise<Uint8Array> {
    const { jsm } = await this.#tenant(tenantId);
    const r = (await this.#record(jsm, id))?.record;
    if (!r || (r.owner !== reader && !r.recipients.includes(reader))) throw notFound();
    const out = new Uint8Array(r.size);
    let at = 0;
    for (let n = 0; n < r.chunks; n++) {
      const m = await jsm.direct.getMessage(BLOBS_STREAM, { last_by_subj: `blob.${id}.c.${n}` }).catch((err) => {
        if (isNotFound(err)) return null;
        throw err;
      });
      if (!m || at + m.data.length > r.size) throw notFound();
      out.set(m.data, at);
      at += m.data.length;
    }
    if (at !== r.size) throw notFound();
    return out;
  }

  /**
   * A recipient has it: once every recipient said so, the blob is purged. Every write of
   * the record adds a recipient, so with n recipients an acknowledgement can lose the race
   * at most n - 1 times; losing more means something else rewrites the record.
   */
  ack(tenantId: string, reader: string, id: string): Promise<{ purged: boolean }> {
    return onBus(() => this.#ack(tenantId, reader, id));
  }

  async #ack(tenantId: string, reader: string, id: string): Promise<{ purged: boolean }> {
    const { js, jsm } = await this.#tenant(tenantId);
    for (let attempt = 0; ; attempt++) {
      const found = await this.#record(jsm, id, true);
      if (!found?.record.recipients.includes(reader)) throw notFound();
      const { record: r, seq } = found;
      const acked = r.acked.includes(reader) ? r.acked : [...r.acked, reader];
      if (r.recipients.every((n) => acked.includes(n))) {
        await this.#purge(tenantId, id);
        return { purged: true };
      }
      // counted before (a repeated ack): nothing to write
      if (acked === r.acked) return { purged: false };
      if (attempt >= r.recipients.length) {
        const message = 'The attachment kept changing while it was acknowledged; retry the acknowledgement.';
        throw new SvcError('bus_unavailable', message, { detail: `blob ${id}: ${attempt} stale writes of its record` });
      }
      try {
        await js.publish(`blob.${id}.m`, JSON.stringify({ ...r, acked }), {
          expect: { streamName: BLOBS_STREAM, lastSubjectSequence: seq },
        });
        return { purged: false };
      } catch (err) {
        if (!isStale(err)) throw err;
      }
    }
  }

  async #purge(tenantId: string, id: string): Promise<void> {
    const { jsm } = await this.#tenant(tenantId);
    await jsm.streams.purge(BLOBS_STREAM, { filter: `blob.${id}.>` });
    // a failure leaves the blob counted until it would have aged out of the stream
    await this.#released?.(id).catch(() => undefined);
  }
}

/** What the bus throws, that is no answer of ours, is the bus being unavailable (503), not a fault of the relay's. */
async function onBus<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof SvcError) throw err;
    throw new SvcError('bus_unavailable', undefined, { detail: (err as Error).message, cause: err });
  }
}
