/** Webhook delivery: the worker started by startRelay, reading envelopes back from the bus. */
import type { RelayContext } from '../context.js';
import { BusInbox } from '../messages/bus-inbox.js';
import { WebhookDispatcher } from './dispatcher.js';

export { type DispatcherOptions, type EnvelopeLoader, WebhookDispatcher } from './dispatcher.js';

/** The relay's dispatcher, or undefined without a bus (route tests). Call start() on it. */
export function createWebhookDispatcher(ctx: RelayContext): WebhookDispatcher | undefined {
  if (!ctx.bus) return undefined;
  const inbox = new BusInbox(ctx.bus);
  return new WebhookDispatcher({
    ledger: ctx.ledger,
    logger: ctx.logger.child({ subsystem: 'relay:webhooks' }),
    loadEnvelope: (tenantId, seq) => inbox.get(tenantId, seq),
    deleteEnvelope: (tenantId, seq) => inbox.delete(tenantId, seq),
    allowPrivate: ctx.config.allowPrivateWebhooks,
    caPem: ctx.config.webhookCaPem,
    now: ctx.now,
  });
}
