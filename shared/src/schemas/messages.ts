import { type Static, Type } from '@sinclair/typebox';

/** Per-envelope and per-request limits of the send route. */
export const MESSAGE_LIMITS = {
  /** serialized envelope, bytes */
  maxEnvelopeBytes: 256 * 1024,
  /**
   * The most UTF-8 bytes of content one message holds: sealing (encryption, base64url, the
   * signed header) adds about a third to it. Measured at 196,232 bytes with short names; the
   * margin covers the longest names.
   */
  maxContentBytes: 190_000,
  /** envelopes in one send request */
  maxEnvelopesPerRequest: 100,
  /** long-poll of the pending inbox, seconds */
  maxWaitSeconds: 30,
  maxPendingLimit: 100,
} as const;

/** What a sender is told of content over `maxContentBytes`: its size, the limit, and to split it. */
export const contentTooLargeMessage = (bytes: number): string =>
  `The message is too large: its content is ${bytes} bytes of UTF-8, and one message holds at most ${MESSAGE_LIMITS.maxContentBytes}; split it into several messages.`;

// Shape only: the service's parseEnvelope checks canonical base64url and lengths once.
const B64 = Type.String({ description: 'base64url, no padding' });

/** Shape only; the service checks every field strictly with parseEnvelope. */
export const EnvelopeSchema = Type.Object(
  {
    header: Type.Object(
      {
        v: Type.Literal(1),
        message_id: Type.String({ description: 'UUIDv7; the idempotency key of the send' }),
        sender: Type.String(),
        recipient: Type.String(),
        conversation_id: Type.String(),
        conversation_type: Type.Union([Type.Literal('direct'), Type.Literal('group'), Type.Literal('broadcast')]),
        content_type: Type.Union([
          Type.Literal('text'),
          Type.Literal('structured'),
          Type.Literal('media'),
          Type.Literal('control'),
        ]),
        sent_at: Type.String(),
        deployment_id: Type.String(),
        tenant_id: Type.String(),
      },
      { additionalProperties: false },
    ),
    enc: B64,
    ciphertext: B64,
    signature: B64,
  },
  {
    additionalProperties: false,
    description: 'A sealed envelope for one recipient (HPKE + Ed25519); the relay cannot read it',
  },
);

export const SendRequest = Type.Object(
  { envelopes: Type.Array(EnvelopeSchema, { minItems: 1, maxItems: MESSAGE_LIMITS.maxEnvelopesPerRequest }) },
  { additionalProperties: false },
);
export type SendRequest = Static<typeof SendRequest>;

export const SendResult = Type.Object({
  message_id: Type.String(),
  recipient: Type.String(),
  status: Type.Union([Type.Literal('accepted'), Type.Literal('duplicate')]),
});
export const SendResponse = Type.Object({ results: Type.Array(SendResult) });
export type SendResponse = Static<typeof SendResponse>;

export const PendingQuery = Type.Object(
  {
    wait: Type.Optional(
      Type.String({ pattern: '^(?:[0-9]|[12][0-9]|30)$', description: 'long-poll seconds, 0 to 30' }),
    ),
    limit: Type.Optional(Type.String({ pattern: '^(?:[1-9][0-9]?|100)$', description: '1 to 100, default 50' })),
    after: Type.Optional(
      Type.String({ pattern: '^[0-9]{1,15}$', description: 'cursor: only envelopes after this one' }),
    ),
  },
  { additionalProperties: false },
);
export type PendingQuery = Static<typeof PendingQuery>;

export const PendingItem = Type.Object({
  cursor: Type.Integer({ description: 'position in the inbox; pass as `after` to page' }),
  message_id: Type.String(),
  sender: Type.String(),
  accepted_at: Type.String({ format: 'date-time' }),
  envelope: EnvelopeSchema,
});
export type PendingItem = Static<typeof PendingItem>;
export const PendingResponse = Type.Object({ envelopes: Type.Array(PendingItem), more: Type.Boolean() });
export type PendingResponse = Static<typeof PendingResponse>;

export const AckResponse = Type.Object({
  message_id: Type.String(),
  acked_at: Type.String({ format: 'date-time' }),
  already: Type.Boolean({ description: 'true when it had been acknowledged before' }),
});

export const ReceiptsQuery = Type.Object(
  {
    since: Type.Optional(Type.String({ pattern: '^[0-9]{1,15}$', description: 'receipt id cursor' })),
    limit: Type.Optional(Type.String({ pattern: '^(?:[1-9][0-9]{0,2}|1000)$' })),
  },
  { additionalProperties: false },
);
export const Receipt = Type.Object({
  id: Type.Integer(),
  message_id: Type.String(),
  recipient: Type.String(),
  acked_at: Type.String({ format: 'date-time' }),
});
export const ReceiptsResponse = Type.Object({ receipts: Type.Array(Receipt), next: Type.Integer() });
export type ReceiptsResponse = Static<typeof ReceiptsResponse>;
