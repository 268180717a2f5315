// Node-only code of @svc/shared (imports node:*); the browser-safe code is in `..`.

export * from './ed25519.js';
export {
  deriveIdentityKeys,
  nativeEnvelope,
  openEnvelope,
  sealEnvelope,
  verifyEnvelope,
} from './envelope.js';
export { findFreePort, type PortsTaken } from './free-port.js';
export {
  nativeHpke,
  x25519Generate,
  x25519PublicFromPrivate,
} from './hpke.js';
export { generatePrivateKey, privateKeyFromRaw } from './key-objects.js';
export { latin1Text } from './scan-text.js';
export {
  signWebhook,
  type VerifyWebhookOptions,
  verifyWebhook,
  WEBHOOK_EVENT_MESSAGE_RECEIVED,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  WEBHOOK_TOLERANCE_SECONDS,
  WebhookDeduper,
  type WebhookEvent,
  type WebhookFailureCode,
  type WebhookVerifyResult,
  webhookFailureStatus,
  webhookSignature,
} from './webhooks.js';
