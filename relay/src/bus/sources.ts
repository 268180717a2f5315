/**
 * Named sources on the bus: one durable pull consumer per source on the tenant's
 * SVC_MSGS stream, filtered to the agent's subject. The edge machine that claimed the
 * source pulls from it across its leaf link (JetStream domain `hub`).
 */
import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import type { Export } from '@nats-io/jwt';
import type { NatsConnection } from '@nats-io/transport-node';
import { JETSTREAM_DOMAIN } from './server-config.js';
import { MSGS_STREAM } from './streams.js';

// JetStream API error: consumer not found.
const CONSUMER_NOT_FOUND = 10014;

/** The durable consumer's name: one per agent of a tenant (agent numbers are valid consumer names). */
export function sourceDurable(agentNumber: string): string {
  return `src_${agentNumber}`;
}

/**
 * The reply-inbox prefix of an edge's clients. Each edge gets its own: with the shared
 * `_INBOX.>` an edge's subscription would draw every reply in the tenant account across
 * its link, the other edges' pulled messages included.
 */
export function uplinkInboxPrefix(edgeNumber: string): string {
  return `_INBOX_${edgeNumber}`;
}

/**
 * The subjects a leaf uplink may use for its sources, and nothing else of the hub's
 * JetStream API: pull the next messages and read the consumer's info, acknowledge
 * through `$JS.ACK`, get replies on the edge's own inbox prefix. Never all of
 * `$JS.hub.API.>`.
 */
export function uplinkSubjects(edgeNumber: string, durables: readonly string[]): string[] {
  const api = `$JS.${JETSTREAM_DOMAIN}.API`;
  return [
    `${uplinkInboxPrefix(edgeNumber)}.>`,
    ...durables.flatMap((d) => [
      `${api}.CONSUMER.MSG.NEXT.${MSGS_STREAM}.${d}`,
      `${api}.CONSUMER.INFO.${MSGS_STREAM}.${d}`,
      `$JS.ACK.${MSGS_STREAM}.${d}.>`,
    ]),
  ];
}

/**
 * What a source's consumer offers an edge, as services the tenant account exports and an
 * edge's uplink account imports (see uplinkImports): pull the next messages, read the
 * consumer's info, acknowledge. Each is importable only with an activation the tenant
 * account signs for one uplink account and one durable.
 *
 * Why another account at all: a pull's reply subject is where the consumer delivers, and
 * nothing in nats-server checks it against the puller's permissions. Inside the tenant
 * account an edge could name `msg.<agent>` (the stream stores what it delivers again) or
 * another edge's inbox. Across a service import the server gives the request a reply of its
 * own (`_R_.…`) that leads back into the importing account, so whatever an edge names, the
 * hub delivers only into the edge's own account.
 */
export interface SourceService {
  /** the subject in the tenant account; `*` stands for the durable */
  subject: string;
  /** the subject the edge publishes to, and the uplink account imports it under */
  local: string;
  /**
   * The hub adds JetStream domain mappings to every account a leaf node binds to,
   * `$JS.hub.API.CONSUMER.>` to `$JS.API.CONSUMER.>` among them, and every account imports
   * the system account's `$JS.API.>`, which answers "JetStream not enabled" for one without
   * JetStream (as the uplink account is), before the import's answer. The uplink account
   * maps such a subject to itself: its own mappings come first, so the domain mapping never
   * takes it.
   */
  shield: boolean;
  /** MSG.NEXT answers with many messages (the batch, heartbeats, a final status) */
  responseType: 'Singleton' | 'Stream';
}

export const SOURCE_SERVICES: readonly SourceService[] = [
  {
    subject: `$JS.API.CONSUMER.MSG.NEXT.${MSGS_STREAM}.*`,
    local: `$JS.${JETSTREAM_DOMAIN}.API.CONSUMER.MSG.NEXT.${MSGS_STREAM}.*`,
    shield: true,
    responseType: 'Stream',
  },
  {
    subject: `$JS.API.CONSUMER.INFO.${MSGS_STREAM}.*`,
    local: `$JS.${JETSTREAM_DOMAIN}.API.CONSUMER.INFO.${MSGS_STREAM}.*`,
    shield: true,
    responseType: 'Singleton',
  },
  // the reply subject of a pulled message; nats-server passes `$JS.ACK.` replies through a
  // service import unchanged (so that cross-account pulls can ack) and the edge acks there
  {
    subject: `$JS.ACK.${MSGS_STREAM}.*.>`,
    local: `$JS.ACK.${MSGS_STREAM}.*.>`,
    shield: false,
    responseType: 'Singleton',
  },
];

/** The tenant account's source services, each importable only with the tenant's activation. */
export function sourceExports(): Export[] {
  return SOURCE_SERVICES.map((s) => ({
    name: s.subject,
    subject: s.subject,
    type: 'service',
    token_req: true,
    response_type: s.responseType,
  }));
}

/** A service the tenant account exports, imported by an uplink account under `local`. */
export interface UplinkImport {
  subject: string;
  local: string;
  shield: boolean;
}

/** The imports an edge's uplink account holds for its sources, and nothing else. */
export function uplinkImports(durables: readonly string[]): UplinkImport[] {
  return durables.flatMap((d) =>
    SOURCE_SERVICES.map((s) => ({
      subject: s.subject.replace('*', d),
      local: s.local.replace('*', d),
      shield: s.shield,
    })),
  );
}

/** Consumers the tenant account holds on all its streams (what the account ceiling counts). */
export async function accountConsumerCount(nc: NatsConnection, timeoutMs: number): Promise<number> {
  const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
  const info = await jsm.getAccountInfo();
  return info.consumers;
}

/** Durable names of the SVC_MSGS consumers that are named sources. */
export async function sourceConsumerNames(nc: NatsConnection, timeoutMs: number): Promise<string[]> {
  const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
  const names: string[] = [];
  for await (const c of jsm.consumers.list(MSGS_STREAM)) {
    if (c.name.startsWith('src_')) names.push(c.name);
  }
  return names.sort();
}

export async function createSourceConsumer(
  nc: NatsConnection,
  durable: string,
  agentNumber: string,
  timeoutMs: number,
): Promise<void> {
  const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
  await jsm.consumers.add(MSGS_STREAM, {
    durable_name: durable,
    filter_subject: `msg.${agentNumber}`,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
  });
}

/** Deletes the consumer; one that is already gone counts as deleted. */
export async function deleteSourceConsumer(nc: NatsConnection, durable: string, timeoutMs: number): Promise<void> {
  const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
  try {
    await jsm.consumers.delete(MSGS_STREAM, durable);
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === CONSUMER_NOT_FOUND) return;
    throw err;
  }
}

/** The ceiling the bus itself holds: SVC_MSGS's max_consumers (the relay sets it from its setting). */
export async function streamConsumerCap(nc: NatsConnection, timeoutMs: number): Promise<number> {
  const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
  return (await jsm.streams.info(MSGS_STREAM)).config.max_consumers;
}
