/**
 * Test data in the daemon's contract, for tests of its clients (CLI, MCP, desktop) that
 * script a daemon: one complete value each, which a test overrides where it matters.
 */
import type { ArchivedMessage } from '@svc/daemon/client';

/** A received direct text message from alice to bob, unread. */
export const archivedMessage = (over: Partial<ArchivedMessage> = {}): ArchivedMessage => ({
  message_id: 'm1',
  conversation_id: 'dm:alice:bob',
  conversation_type: 'direct',
  direction: 'inbound',
  from: 'alice',
  to: 'bob',
  content_type: 'text',
  content: 'hello bob',
  sent_at: '2026-01-01T00:00:00.000Z',
  received_at: '2026-01-01T00:00:01.000Z',
  acked_at: null,
  delivered_at: null,
  state: 'received',
  muted: false,
  ...over,
});

/** A media message's attachment descriptor (its content, as JSON): plan.pdf, 1204 bytes. */
export const attachmentDescriptor = (over: Record<string, unknown> = {}) => ({
  svc: 'attachment/v1',
  blob_id: 'b1',
  name: 'plan.pdf',
  media_type: 'application/pdf',
  size: 1204,
  digest: 'd'.repeat(43),
  key: 'k'.repeat(43),
  nonce: 'n'.repeat(16),
  ...over,
});
