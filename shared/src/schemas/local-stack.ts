/** The local stack: an edge machine's leaf uplink credentials and its named sources. */
import { type Static, Type } from '@sinclair/typebox';

export const UplinkCreds = Type.Object(
  {
    kind: Type.Literal('relay-uplink/v1'),
    creds: Type.String({ description: 'NATS creds file (user JWT + seed): leaf connections only' }),
    user_public_key: Type.String(),
    leaf_url: Type.String({ description: "the hub's leaf node URL (nats-leaf://host:port)" }),
    jetstream_domain: Type.String({ description: 'JetStream domain of the hub; edges name it for JetStream calls' }),
    inbox_prefix: Type.String({
      description: "the reply-inbox prefix the edge's clients must use (connect option inboxPrefix)",
    }),
    subjects: Type.Array(Type.String(), { description: 'the only subjects the uplink may publish and subscribe to' }),
    sources: Type.Array(Type.String(), { description: 'consumer names of the sources the edge holds' }),
    expires_at: Type.String({ format: 'date-time' }),
    revoked_users: Type.Integer({ description: 'earlier uplink users of this edge revoked by this issue' }),
  },
  { additionalProperties: false },
);
export type UplinkCreds = Static<typeof UplinkCreds>;

export const SourceClaim = Type.Object(
  {
    agent: Type.String({ minLength: 1, maxLength: 256, description: 'agent number or agent id, same tenant' }),
    issued_at: Type.String({ format: 'date-time', description: 'when the agent signed its consent (5 minutes skew)' }),
    proof: Type.String({
      minLength: 1,
      maxLength: 128,
      description: "the agent's Ed25519 signature (base64url) over the svc.source-claim/v1 statement naming this edge",
    }),
  },
  { additionalProperties: false },
);
export type SourceClaim = Static<typeof SourceClaim>;

export const NamedSource = Type.Object(
  {
    agent_id: Type.String(),
    agent_number: Type.String(),
    durable: Type.String({ description: 'the durable consumer to pull from (JetStream domain hub)' }),
    stream: Type.String(),
    filter_subject: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
export type NamedSource = Static<typeof NamedSource>;
