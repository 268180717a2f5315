/**
 * Named sources on the bus: one durable pull consumer per source on the tenant's
 * SVC_MSGS stream, filtered to the agent's subject. The edge machine that claimed the
 * source pulls from it across its leaf link (JetStream domain `hub`).
 */
import { AckPolicy, DeliverPolicy, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
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
