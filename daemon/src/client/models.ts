/**
 * The objects of the daemon's socket API as TypeBox schemas; the TypeScript types are
 * derived from them (`Static`). The operations that carry them are in ./api.ts. Request
 * schemas are the daemon's validation; answer schemas type the daemon's handlers and
 * this package's client.
 */
import { type Static, type TLiteral, type TSchema, type TUnion, Type } from '@sinclair/typebox';

const Str = Type.String;
const Opt = Type.Optional;
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
export const Literals = <const T extends string[]>(values: T) =>
  Type.Union(values.map((v) => Type.Literal(v))) as unknown as TUnion<{ [K in keyof T]: TLiteral<T[K]> }>;

/** A local agent name or agent number (`:agent` in every path). */
export const AgentRef = Str({ minLength: 1, maxLength: 128 });
export const AgentParams = Type.Object({ agent: AgentRef });
export const PeerParams = Type.Object({ agent: AgentRef, number: Str({ minLength: 1, maxLength: 128 }) });
export const ConversationParams = Type.Object({ agent: AgentRef, id: Str({ minLength: 1, maxLength: 256 }) });
export const MessageParams = Type.Object({ agent: AgentRef, id: Str({ minLength: 1 }) });
export const DeploymentParams = Type.Object({ name: Str({ minLength: 1, maxLength: 128 }) });
export const Empty = Type.Object({});

const SessionState = Literals(['connected', 'connecting', 'offline', 'refused']);
/** An agent's state in status and summary: its session's, or `unusable` (out of service: see `unusable`). */
const AgentState = Literals(['connected', 'connecting', 'offline', 'refused', 'unusable']);

/**
 * Why an agent is out of service: its archive cannot be used (archive_unusable), or its
 * agent.json cannot be read (config_invalid); the daemon left the file as it is.
 */
export const OutOfService = Type.Object({
  error: Literals(['archive_unusable', 'config_invalid']),
  /** one line: what is wrong with which file, and what to do */
  message: Str(),
  /** the file: the archive, or the agent.json */
  file: Str(),
  /** one line: what to do about it */
  hint: Str(),
});
export type OutOfService = Static<typeof OutOfService>;

// --- daemon
export const DaemonStatus = Type.Object({
  version: Str(),
  pid: Type.Integer(),
  home: Str(),
  started_at: Str(),
  vault: Type.Object({
    kind: Literals(['keyring', 'file-encrypted', 'file-plain']),
    warning: Opt(Str()),
    /** no secret can be read: no agent signs in until the daemon restarts with the vault open (see warning) */
    locked: Opt(Type.Literal(true)),
  }),
  agents: Type.Array(
    Type.Object({
      name: Str(),
      /** absent only for an agent whose agent.json cannot be read (`unusable.error` config_invalid) */
      agent_number: Opt(Str()),
      /** absent only for an agent whose agent.json cannot be read */
      deployment: Opt(Str()),
      /** `unusable`: the agent is out of service (no session; every command for it but deregister answers `unusable.error`) */
      session: AgentState,
      /** why the last attempt to connect failed, while not connected; for an unusable agent, why it is */
      session_error: Opt(Str()),
      /** only for an unusable agent: the code, the file and what to do */
      unusable: Opt(OutOfService),
      /** `uplink`: a machine's nats-relay identity, `local`: a --local agent; neither has a relay session */
      kind: Opt(Literals(['agent', 'uplink', 'local'])),
      /** where its messages come from: the relay's HTTP stream, or its named source over the leaf uplink */
      receive: Opt(Literals(['relay-stream', 'source'])),
      /** the durable consumer on the hub, when receiving through a named source */
      source: Opt(Str()),
    }),
  ),
});
export type DaemonStatus = Static<typeof DaemonStatus>;

export const DaemonSummary = Type.Object({
  agents: Type.Array(
    Type.Object({
      name: Str(),
      /** absent only for an agent whose agent.json cannot be read */
      agent_number: Opt(Str()),
      session: AgentState,
      /** inbound, unacknowledged, not muted (0 for an unusable agent: its archive is not read) */
      unread: Type.Integer(),
    }),
  ),
});
export type DaemonSummary = Static<typeof DaemonSummary>;

// --- deployments
export const DeploymentInfo = Type.Object({
  name: Str(),
  deployment_id: Str(),
  api_url: Str(),
  tenants: Type.Array(Str()),
  relay_key_ids: Type.Array(Str()),
  issued_at: Str(),
  expires_at: Str(),
  fetched_at: Str(),
  /** fetch/add without a name only: the deployment was trusted here already; that entry was renewed, none added */
  already_trusted: Opt(Type.Boolean()),
});
export type DeploymentInfo = Static<typeof DeploymentInfo>;

/** What trusting a deployment takes besides the document or where to fetch it. */
const TrustInputs = {
  /** trust bundle JSON text (the CLI reads the file) */
  trust_bundle: Str({ minLength: 1 }),
  name: Opt(Str({ minLength: 1, maxLength: 128 })),
  /** PEM text of an extra CA bundle */
  ca_bundle: Opt(Str()),
};

export const FetchDeploymentInput = Type.Object({ url: Str({ minLength: 1 }), ...TrustInputs });
export type FetchDeploymentInput = Static<typeof FetchDeploymentInput>;

/** `document`: the signed document (JWS text). */
export const AddDeploymentInput = Type.Object({ document: Str({ minLength: 1 }), ...TrustInputs });
export type AddDeploymentInput = Static<typeof AddDeploymentInput>;

export const RenewDeploymentInput = Type.Object({
  url: Opt(Str()),
  document: Opt(Str()),
  trust_bundle: Opt(Str()),
  ca_bundle: Opt(Str()),
});
export type RenewDeploymentInput = Static<typeof RenewDeploymentInput>;

export const DeploymentAudit = Type.Object({
  name: Str(),
  deployment_id: Str(),
  ok: Type.Boolean(),
  problems: Type.Array(Str()),
});
export type DeploymentAudit = Static<typeof DeploymentAudit>;

/** An archive's integrity check (svc doctor): run now, or read from a receipt of the last six hours. */
export const ArchiveIntegrity = Type.Object({
  agent: Str(),
  file: Str(),
  /** quick: every page's structure; full: also every index against its table */
  kind: Type.Union([Type.Literal('quick'), Type.Literal('full')]),
  checked_at: Str(),
  ok: Type.Boolean(),
  /** SQLite's words for the first problems found (at most 20) */
  problems: Type.Array(Str()),
  from_receipt: Type.Boolean(),
});
export type ArchiveIntegrity = Static<typeof ArchiveIntegrity>;

/** svc recover reset-db: where the old archive went, and how many pinned peer keys the new one kept (null: the old file could not be read). */
export const ArchiveReset = Type.Object({
  agent: Str(),
  set_aside: Str(),
  pins_kept: Type.Union([Type.Integer(), Type.Null()]),
});
export type ArchiveReset = Static<typeof ArchiveReset>;

/** One check of a diagnosis: a step of verifying the document, or a rule of this daemon's. */
export const DeploymentCheck = Type.Object({
  check: Str(),
  /** skipped: not checked, because an earlier step failed (see detail) */
  status: Type.Union([Type.Literal('ok'), Type.Literal('warn'), Type.Literal('fail'), Type.Literal('skipped')]),
  detail: Str(),
});
export type DeploymentCheck = Static<typeof DeploymentCheck>;

/** svc doctor --api-url: a relay's address checked (reachable, ready, a trusted deployment's). */
export const RelayCheck = Type.Object({
  url: Str(),
  ok: Type.Boolean(),
  checks: Type.Array(DeploymentCheck),
});
export type RelayCheck = Static<typeof RelayCheck>;

export const DeploymentDiagnosis = Type.Object({
  name: Str(),
  deployment_id: Str(),
  /** the time the checks were made for (ISO) */
  at: Str(),
  /** the document verifies against the trust bundle at that time */
  verifies: Type.Boolean(),
  /** every check is ok: nothing fails, nothing to renew */
  ok: Type.Boolean(),
  checks: Type.Array(DeploymentCheck),
});
export type DeploymentDiagnosis = Static<typeof DeploymentDiagnosis>;

// --- agents and keys
export const RegisterInput = Type.Object({
  enrollment_code: Str({ minLength: 1 }),
  /** deployment name; default: the one whose id the code names */
  deployment: Opt(Str({ minLength: 1 })),
  /** local name of the agent; default: the agent number */
  name: Opt(Str({ minLength: 1, maxLength: 128 })),
  display_name: Opt(Str()),
  description: Opt(Str()),
  discoverable: Opt(Type.Boolean()),
  /**
   * answer once the agent receives (its session connected), at most 10 s; the answer's
   * `receiving` says whether it did (the CLI asks, unless --no-autostart)
   */
  wait_receiving: Opt(Type.Boolean()),
});
export type RegisterInput = Static<typeof RegisterInput>;

/** `svc register --local`: an offline agent of this machine (no relay, no login). */
export const LocalRegisterInput = Type.Object(
  {
    /** local name, also its agent number among the local agents */
    name: Str({ minLength: 1, maxLength: 128 }),
  },
  { additionalProperties: false },
);
export type LocalRegisterInput = Static<typeof LocalRegisterInput>;

export const LocalAgent = Type.Object({
  name: Str(),
  agent_id: Str(),
  agent_number: Str(),
  tenant_id: Str(),
  deployment: Str(),
  deployment_id: Str(),
  api_url: Str(),
  capabilities: Type.Array(Str()),
  signing_public_key: Str(),
  encryption_public_key: Str(),
  registered_at: Str(),
});
export type LocalAgent = Static<typeof LocalAgent>;

/** A registration's answer: with wait_receiving, whether it receives already, else why not yet. */
export const RegisteredAgent = Type.Intersect([
  LocalAgent,
  Type.Object({ receiving: Opt(Type.Boolean()), session_error: Opt(Str()) }),
]);
export type RegisteredAgent = Static<typeof RegisteredAgent>;

export const AccessToken = Type.Object({ access_token: Str(), expires_at: Str() });
export type AccessToken = Static<typeof AccessToken>;

export const PeerKey = Type.Object({
  agent_number: Str(),
  signing_public_key: Str(),
  encryption_public_key: Str(),
  pinned_at: Str(),
  /** set when the relay now serves a different key than the pinned one */
  changed: Opt(Type.Object({ signing_public_key: Str(), encryption_public_key: Str(), seen_at: Str() })),
  /** true when pinned from an unsigned record: its messages verify, nothing is sealed to it (peer_key_unsigned) */
  unsigned: Opt(Type.Literal(true)),
});
export type PeerKey = Static<typeof PeerKey>;

export const KeyStatus = Type.Object({
  agent: Str(),
  signing_public_key: Str(),
  encryption_public_key: Str(),
  rotation: Type.Integer(),
  /** the relay's current version of this agent's key record; null when it has none or could not be asked */
  relay_version: Nullable(Type.Integer()),
  /** why the relay's record could not be had (its error code, e.g. relay_unreachable) */
  relay_error: Opt(Str()),
  peers: Type.Array(PeerKey),
});
export type KeyStatus = Static<typeof KeyStatus>;

/**
 * svc keys backfill, one agent: what the relay published for it before, and the version
 * uploaded (null: nothing was, for a dry run, a record that needs nothing, or one that
 * cannot be mended from here).
 */
export const KeyBackfill = Type.Object({
  agent: Str(),
  agent_number: Str(),
  /**
   * signed: the vault's keys, signed by its key (nothing to do); unsigned: version 1 of an
   * agent enrolled before key records were signed; stale: another encryption key than this
   * daemon's; foreign: a signing key this vault does not hold; bad_signature: the vault's
   * keys under a signature that does not verify (the last two: own_key_mismatch)
   */
  state: Literals(['signed', 'unsigned', 'stale', 'foreign', 'bad_signature']),
  relay_version: Type.Integer(),
  uploaded_version: Nullable(Type.Integer()),
});
export type KeyBackfill = Static<typeof KeyBackfill>;

// --- messages
/** What a sender may declare (the envelope's `control` is the daemon's own). */
export const CONTENT_TYPES = ['text', 'structured', 'media'] as const;
export const ContentType = Literals([...CONTENT_TYPES]);
export type ContentType = Static<typeof ContentType>;

export const SendInput = Type.Object({
  /** the recipient's agent number; may be left out with conversation_id */
  to: Opt(Str({ maxLength: 256 })),
  /**
   * with file_path: the caption (may be empty). Its limit is in UTF-8 bytes, checked by the
   * send (envelope_too_large, naming its size); the request's body limit bounds it here
   */
  content: Str(),
  content_type: Opt(ContentType),
  conversation_id: Opt(Str({ minLength: 1, maxLength: 256 })),
  /** an absolute path: the file is encrypted here, uploaded as a blob, and the message carries its key (direct only) */
  file_path: Opt(Str({ minLength: 1, maxLength: 4096 })),
});
export type SendInput = Static<typeof SendInput>;

export const ReplyInput = Type.Object({
  message_id: Str({ minLength: 1 }),
  /**
   * with file_path: the caption (may be empty). Its limit is in UTF-8 bytes, checked by the
   * send (envelope_too_large, naming its size); the request's body limit bounds it here
   */
  content: Str(),
  to: Opt(Str({ minLength: 1, maxLength: 256 })),
  content_type: Opt(ContentType),
  /** as for a send: an absolute path, attached to a direct reply */
  file_path: Opt(Str({ minLength: 1, maxLength: 4096 })),
});
export type ReplyInput = Static<typeof ReplyInput>;

export const SentMessage = Type.Object({
  message_id: Str(),
  conversation_id: Str(),
  to: Str(),
  sent_at: Str(),
  /** accepted/duplicate: the relay has it; queued: the relay was unreachable, the daemon sends it when it answers */
  status: Literals(['accepted', 'duplicate', 'queued']),
  state: Literals(['sent', 'queued']),
  /** group and broadcast messages: the members it was sealed to */
  recipients: Opt(Type.Array(Str())),
  /** group and broadcast messages: members left out, as the relay's directory no longer lists them (revoked or deregistered) */
  skipped: Opt(Type.Array(Str())),
});
export type SentMessage = Static<typeof SentMessage>;

/**
 * Where a message stands. Outbound: queued (kept in the outbox until the relay answers),
 * sent (the relay has it), delivered (the recipient's daemon archived it: the relay's receipt,
 * not that it was read), failed (the relay
 * refused it; see send_error). Inbound: received (archived, not yet acknowledged here) or
 * read (acknowledged here).
 */
export const MessageState = Literals(['queued', 'sent', 'delivered', 'failed', 'received', 'read']);
export type MessageState = Static<typeof MessageState>;

/**
 * Where the sender's key stands for one message. pinned: signed by the key pinned for the
 * sender, and the relay serves no other. changed: the relay now serves a key nobody
 * accepted, or the message was signed by a key since replaced. held: an envelope signed by
 * a changed key, kept unopened until the owner accepts that key.
 */
export const SenderTrust = Literals(['pinned', 'changed', 'held']);
export type SenderTrust = Static<typeof SenderTrust>;

export const MessageVerification = Type.Object({
  /** the sender's agent number: authenticated by the relay and named by the signed header */
  sender: Str(),
  /** fingerprint of the signing key the envelope verified under (null: no pin known) */
  key_fingerprint: Nullable(Str()),
  trust: SenderTrust,
  /** the key the relay serves now, when it differs from the pin and is not accepted */
  changed_key_fingerprint: Opt(Str()),
});
export type MessageVerification = Static<typeof MessageVerification>;

const ConversationType = Literals(['direct', 'group', 'broadcast']);

export const ArchivedMessage = Type.Object({
  message_id: Str(),
  conversation_id: Str(),
  conversation_type: ConversationType,
  direction: Literals(['inbound', 'outbound']),
  from: Str(),
  to: Str(),
  content_type: Str(),
  content: Str(),
  sent_at: Str(),
  received_at: Nullable(Str()),
  acked_at: Nullable(Str()),
  /** outbound: the relay's receipt, when the recipient's daemon archived it (not read); inbound: null */
  delivered_at: Nullable(Str()),
  state: MessageState,
  /** inbound from a sender this agent muted: archived without any notification */
  muted: Type.Boolean(),
  /** failed outbound: why the relay refused it */
  send_error: Opt(Str()),
  /** inbound, when asked for with `verified=true`: what the daemon verified about the sender */
  verified: Opt(MessageVerification),
  /** the cursor of `conv messages --since`: sent time and message id */
  sort_key: Opt(Str()),
  /** group and broadcast messages: the sender's number for it (signed, inside the ciphertext) */
  seq: Opt(Type.Integer()),
  /** what the receiver saw when it arrived: a gap before it, a late arrival, duplicates */
  sequence: Opt(
    Type.Object({
      gap: Opt(Type.Object({ from: Type.Integer(), to: Type.Integer() })),
      late: Opt(Type.Literal(true)),
      duplicates: Opt(Type.Integer()),
      missing: Opt(Type.Array(Type.Integer())),
    }),
  ),
});
export type ArchivedMessage = Static<typeof ArchivedMessage>;
export const ArchivedMessages = Type.Array(ArchivedMessage);

export const AckResult = Type.Object({ message_id: Str(), acked_at: Str() });
export type AckResult = Static<typeof AckResult>;

/** An envelope signed by a changed sender key: not opened, not archived, until accepted. */
export const HeldMessage = Type.Object({
  message_id: Str(),
  from: Str(),
  held_at: Str(),
  trust: Type.Literal('held'),
  /** fingerprint of the changed key it is signed with */
  key_fingerprint: Nullable(Str()),
});
export type HeldMessage = Static<typeof HeldMessage>;

export const TrustStatus = Type.Object({
  agent: Str(),
  agent_number: Str(),
  signing_key_fingerprint: Str(),
  peers: Type.Array(
    Type.Object({
      agent_number: Str(),
      key_fingerprint: Str(),
      pinned_at: Str(),
      trust: Literals(['pinned', 'changed']),
      changed: Opt(Type.Object({ key_fingerprint: Str(), seen_at: Str() })),
      /** pinned from an unsigned key record: its messages verify, nothing is sent to it (peer_key_unsigned) */
      unsigned: Opt(Type.Literal(true)),
      /** envelopes held for this peer */
      held: Type.Integer(),
    }),
  ),
  held: Type.Array(HeldMessage),
});
export type TrustStatus = Static<typeof TrustStatus>;

export const SyncResult = Type.Object({
  agent: Str(),
  fetched: Type.Integer(),
  archived: Type.Integer(),
  rejected: Type.Integer(),
  /** delivery receipts of sent messages newly recorded */
  receipts: Type.Integer(),
});
export type SyncResult = Static<typeof SyncResult>;

/** An attachment written by `read --save`. */
export const SavedAttachment = Type.Object({
  message_id: Str(),
  path: Str(),
  size: Type.Integer(),
  media_type: Str(),
  /** the name the sender gave */
  name: Str(),
  /** the relay had deleted it (it was saved before), and `path` is a copy already in the directory */
  already_saved: Opt(Type.Boolean()),
});
export type SavedAttachment = Static<typeof SavedAttachment>;

// --- conversations: groups and broadcasts (client-side rosters)
export const CONVERSATION_LIMITS = { listDefault: 20, messagesDefault: 50, searchMax: 100, offsetMax: 10_000 } as const;

export const CreateConversationInput = Type.Object({
  kind: Literals(['group', 'broadcast']),
  name: Str({ minLength: 1, maxLength: 200 }),
  description: Opt(Str({ maxLength: 2000 })),
  /** participants (group) or subscribers (broadcast): agent numbers */
  members: Opt(Type.Array(Str({ minLength: 1, maxLength: 128 }), { maxItems: 1000 })),
});
export type CreateConversationInput = Static<typeof CreateConversationInput>;

const MemberRole = Literals(['creator', 'member', 'observer']);
export const InviteInput = Type.Object({
  number: Str({ minLength: 1, maxLength: 128 }),
  role: Opt(Literals(['member', 'observer'])),
});
export type InviteInput = Static<typeof InviteInput>;

export const ConversationMember = Type.Object({ number: Str(), role: MemberRole, active: Type.Boolean() });
export type ConversationMember = Static<typeof ConversationMember>;

/** What a group's or broadcast's roster says, as this agent derives it. */
const RosterFields = {
  conversation_id: Str(),
  conversation_type: ConversationType,
  name: Opt(Str()),
  description: Opt(Str()),
  creator: Opt(Str()),
  members: Opt(Type.Array(ConversationMember)),
  /** this agent's place in it (groups and broadcasts) */
  me: Opt(Type.Object({ role: MemberRole, active: Type.Boolean() })),
};

export const ConversationInfo = Type.Object({
  ...RosterFields,
  /** direct: the other party */
  peer: Opt(Str()),
  last_message_at: Opt(Str()),
  message_count: Opt(Type.Integer()),
});
export type ConversationInfo = Static<typeof ConversationInfo>;

/** One conversation in the list: what the archive knows of it and, for a group or broadcast, its roster. */
export const ConversationSummary = Type.Object({
  ...RosterFields,
  /** the other agent of a direct conversation */
  peer: Nullable(Str()),
  last_message_at: Str(),
  message_count: Type.Integer(),
  /** inbound, unacknowledged, not muted */
  unread: Type.Integer(),
  last_message: Opt(ArchivedMessage),
});
export type ConversationSummary = Static<typeof ConversationSummary>;

export const ConversationSearchInput = Type.Object({
  participant: Opt(Str({ pattern: '^[A-Za-z0-9_-]{1,128}$' })),
  after: Opt(Str()),
  before: Opt(Str()),
  type: Opt(Literals(['text', 'media', 'structured'])),
  sort: Opt(Literals(['recent', 'oldest'])),
  /** 1 to 100, default 20 */
  limit: Opt(Type.Integer({ minimum: 1, maximum: CONVERSATION_LIMITS.searchMax })),
  /** 0 to 10000, default 0 */
  offset: Opt(Type.Integer({ minimum: 0, maximum: CONVERSATION_LIMITS.offsetMax })),
});
export type ConversationSearchInput = Static<typeof ConversationSearchInput>;

// --- events
export const DaemonEvent = Type.Union([
  Type.Object({ type: Type.Literal('message'), agent: Str(), message: ArchivedMessage }),
  Type.Object({ type: Type.Literal('rejected'), agent: Str(), message_id: Str(), from: Str(), reason: Str() }),
  Type.Object({
    type: Type.Literal('session'),
    agent: Str(),
    state: SessionState,
    /** why it is not connected, when known (a new reason comes as an event of its own) */
    error: Opt(Str()),
  }),
  Type.Object({ type: Type.Literal('peer_key_changed'), agent: Str(), peer: Str() }),
  /** the recipient's daemon archived a message this agent sent (the relay's receipt; not that it was read) */
  Type.Object({ type: Type.Literal('receipt'), agent: Str(), message_id: Str(), recipient: Str(), acked_at: Str() }),
  /** a queued message left the outbox: sent, or refused by the relay (error says why) */
  Type.Object({
    type: Type.Literal('outbox'),
    agent: Str(),
    message_id: Str(),
    state: Literals(['sent', 'failed']),
    error: Opt(Str()),
  }),
  /** a group message arrived out of its sender's order: a gap before it, late (reordered), or again (duplicate) */
  Type.Object({
    type: Type.Literal('sequence'),
    agent: Str(),
    conversation_id: Str(),
    sender: Str(),
    message_id: Str(),
    seq: Type.Integer(),
    kind: Literals(['gap', 'reordered', 'duplicate']),
    missing: Opt(Type.Object({ from: Type.Integer(), to: Type.Integer() })),
  }),
  /** received messages acknowledged here (svc msg ack, check --ack, MCP, the dashboard): an inbox shown elsewhere is stale */
  Type.Object({ type: Type.Literal('read'), agent: Str(), message_ids: Type.Array(Str()) }),
  /** the roster of a group or broadcast changed (a control message was taken) */
  Type.Object({ type: Type.Literal('roster'), agent: Str(), conversation_id: Str() }),
  /** an attachment moving to or from the relay: bytes done of total (for a progress bar) */
  Type.Object({
    type: Type.Literal('transfer'),
    agent: Str(),
    direction: Literals(['upload', 'download']),
    name: Str(),
    done: Type.Integer(),
    total: Type.Integer(),
  }),
]);
export type DaemonEvent = Static<typeof DaemonEvent>;

// --- the dashboard page and the local stack
export const DashboardOpenInput = Type.Object({
  /** loopback only: 127.0.0.1 (default), ::1 or localhost */
  host: Opt(Str({ minLength: 1, maxLength: 255 })),
  /** default 8191; 0 picks a free port */
  port: Opt(Type.Integer({ minimum: 0, maximum: 65535 })),
});
export type DashboardOpenInput = Static<typeof DashboardOpenInput>;

export const DashboardLaunch = Type.Object({
  /** the sign-in link: one-time token, redeemable for 10 minutes */
  url: Str(),
  /** the page's origin */
  base_url: Str(),
  host: Str(),
  port: Type.Integer(),
});
export type DashboardLaunch = Static<typeof DashboardLaunch>;

/** `svc start [--local-only] [--port] [--monitor-port] [--listen] [--as UPLINK]`. */
export const LocalStackStartInput = Type.Object(
  {
    local_only: Type.Boolean(),
    /** the nats-relay identity of this machine (default: the only one) */
    as: Opt(Str({ minLength: 1, maxLength: 256 })),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    monitor_port: Type.Integer({ minimum: 1, maximum: 65535 }),
    listen: Str({ minLength: 1, maxLength: 255 }),
  },
  { additionalProperties: false },
);
export type LocalStackStartInput = Static<typeof LocalStackStartInput>;

export const LocalStackStatus = Type.Object({
  running: Type.Boolean(),
  /** start only: the server already ran with these very settings; nothing was started */
  already_running: Opt(Type.Boolean()),
  pid: Opt(Type.Integer()),
  local_only: Opt(Type.Boolean()),
  url: Opt(Str()),
  monitor_url: Opt(Str()),
  uplink: Opt(Str()),
  /** the uplink's reply-inbox prefix: local clients of the hub's JetStream connect with it */
  inbox_prefix: Opt(Str()),
  sources: Opt(Type.Array(Str())),
  creds_expire_at: Opt(Str()),
});
export type LocalStackStatus = Static<typeof LocalStackStatus>;
