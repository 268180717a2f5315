import {
  DiscardPolicy,
  JetStreamApiError,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos, TimeoutError } from '@nats-io/transport-node';
import type { Logger } from 'pino';

export const MSGS_STREAM = 'SVC_MSGS';
export const ACKS_STREAM = 'SVC_ACKS';

/** Envelopes nobody fetched expire after this long. */
export const STREAM_MAX_AGE_MS = 30 * 24 * 60 * 60 * 1000;
/** Window in which a repeated Nats-Msg-Id (the message id) is dropped as a duplicate. */
export const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

export type TenantStreamConfig = Partial<StreamConfig> & Pick<StreamConfig, 'name' | 'subjects'>;

/** A tenant's storage quota per stream; -1 = none. */
export interface StreamQuota {
  maxMessages: number;
  maxBytes: number;
}

export const NO_QUOTA: StreamQuota = { maxMessages: -1, maxBytes: -1 };

/** Stream config per tenant account; the account isolates tenants, so subjects carry no tenant id. */
export function tenantStreamConfigs(
  maxConsumers: number,
  quota: StreamQuota = NO_QUOTA,
  replicas = 1,
): TenantStreamConfig[] {
  const base = {
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    // A full stream refuses new envelopes (the sender gets 507 tenant_storage_full); it
    // never drops old ones, which are pending messages nobody has read yet.
    discard: DiscardPolicy.New,
    max_age: nanos(STREAM_MAX_AGE_MS),
    duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    // The account JWT's consumer limit counts per stream on nats-server 2.9, so each
    // stream carries the cap as the server-side backstop.
    max_consumers: maxConsumers,
    // Reads use direct get, so an HTTP client costs no consumer.
    allow_direct: true,
    // On a cluster, 3 replicas keep every envelope (and the dedupe window) through the loss of a node.
    num_replicas: replicas,
    max_msgs: quota.maxMessages,
    max_bytes: quota.maxBytes,
    max_msg_size: -1,
    max_msgs_per_subject: -1,
  };
  return [
    { ...base, name: MSGS_STREAM, subjects: ['msg.*'] },
    { ...base, name: ACKS_STREAM, subjects: ['ack.*'] },
  ];
}

// JetStream API errors: stream not found; a stream of that name exists with another configuration.
const STREAM_NOT_FOUND = 10059;
const STREAM_NAME_IN_USE = 10058;

/** Creates the tenant's streams, or brings existing ones to the expected settings. */
export async function ensureTenantStreams(
  jsm: JetStreamManager,
  maxConsumers: number,
  logger: Logger,
  quota: StreamQuota = NO_QUOTA,
  replicas = 1,
): Promise<void> {
  for (const want of tenantStreamConfigs(maxConsumers, quota, replicas)) {
    let have: StreamConfig | undefined;
    try {
      const info = await jsm.streams.info(want.name);
      have = info.config;
      // Lowering a limit below what the stream holds would make the server drop the oldest
      // messages, which are pending envelopes: the limit stops at the current use instead,
      // so new envelopes are refused until the backlog drains.
      if (want.max_msgs !== undefined && want.max_msgs > 0 && info.state.messages > want.max_msgs) {
        logger.warn(
          { stream: want.name, messages: info.state.messages, quota: want.max_msgs },
          'bus: stream holds more messages than its quota; kept at its use',
        );
        want.max_msgs = info.state.messages;
      }
      if (want.max_bytes !== undefined && want.max_bytes > 0 && info.state.bytes > want.max_bytes) {
        logger.warn(
          { stream: want.name, bytes: info.state.bytes, quota: want.max_bytes },
          'bus: stream holds more bytes than its quota; kept at its use',
        );
        want.max_bytes = info.state.bytes;
      }
    } catch (err) {
      if (!(err instanceof JetStreamApiError) || err.code !== STREAM_NOT_FOUND) throw err;
    }
    if (!have) {
      try {
        await jsm.streams.add(want);
        logger.info({ stream: want.name }, 'bus: stream created');
        continue;
      } catch (err) {
        // Another relay instance created it at the same moment (instances may start
        // together): the add is refused, or in a cluster not answered while the first
        // creation runs. The stream is then there.
        const raced =
          err instanceof TimeoutError || (err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE);
        if (!raced) throw err;
        const info = await jsm.streams.info(want.name).catch(() => {
          throw err;
        });
        have = info.config;
      }
    }
    if (want.num_replicas !== undefined && have.num_replicas !== want.num_replicas) {
      // Replicas alone first, and never silently kept: fewer copies than configured is data
      // at risk the operator believes safe.
      await jsm.streams.update(want.name, { ...have, num_replicas: want.num_replicas });
      logger.info({ stream: want.name, replicas: want.num_replicas }, 'bus: stream replicas changed');
      have = { ...have, num_replicas: want.num_replicas };
    }
    if (!differs(have, want)) continue;
    try {
      await jsm.streams.update(want.name, want);
      logger.info({ stream: want.name }, 'bus: stream settings updated');
    } catch (err) {
      // Some settings (max_consumers on 2.9) cannot change in place; the stream still works.
      logger.warn(
        { stream: want.name, err: (err as Error).message },
        'bus: stream settings differ and cannot be updated',
      );
    }
  }
}

function differs(have: StreamConfig, want: TenantStreamConfig): boolean {
  return (
    have.max_age !== want.max_age ||
    have.duplicate_window !== want.duplicate_window ||
    have.max_consumers !== want.max_consumers ||
    have.allow_direct !== want.allow_direct ||
    have.discard !== want.discard ||
    have.max_msgs !== want.max_msgs ||
    have.max_bytes !== want.max_bytes ||
    have.num_replicas !== want.num_replicas ||
    have.subjects.join(',') !== want.subjects.join(',')
  );
}
