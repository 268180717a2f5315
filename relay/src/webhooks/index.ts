/** Webhook delivery: the worker createRelay builds and start() runs, reading envelopes back from the bus. */
import type { RelayBase } from '../context.js';
import { WebhookDispatcher } from './dispatcher.js';

export { type DispatcherOptions, type EnvelopeLoader, WebhookDispatcher } from './dispatcher.js';

/** The relay's dispatcher, with the attempt schedule of the configuration. Call start() on it. */
export function createWebhookDispatcher(ctx: RelayBase): WebhookDispatcher {
  const inbox = ctx.inbox;
  return new WebhookDispatcher({
    ledger: ctx.ledger,
    store: ctx.stores.webhooks,
    relations: ctx.stores.relations,
    logger: ctx.logger.child({ subsystem: 'relay:webhooks' }),
    loadEnvelope: (tenantId, seq) => inbox.get(tenantId, seq),
    deleteEnvelope: (tenantId, seq) => inbox.delete(tenantId, seq),
    allowPrivate: ctx.config.allowPrivateWebhooks,
    caPem: ctx.config.webhookCaPem,
    timeoutMs: ctx.config.webhooks.timeoutMs,
    retryDelaysMs: ctx.config.webhooks.retryDelaysMs,
    now: ctx.now,
  });
}
