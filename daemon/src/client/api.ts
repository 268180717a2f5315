/**
 * The contract between the daemon and its clients (cli, tui, desktop). The daemon serves
 * it as JSON over HTTP on `$SVC_HOME/run/daemon.sock`; `DaemonClient` (./index.ts)
 * implements it for Node callers. Every failure is `{error, message}` with a code of the
 * shared error catalog (or a daemon code listed in DAEMON_ERROR_CODES) and a non-2xx status.
 *
 * Paths (all JSON; `:agent` = local agent name or agent number):
 *   GET    /v1/status                                   → DaemonStatus
 *   GET    /v1/summary                                  → DaemonSummary (sessions and unread counts; no relay call)
 *   POST   /v1/shutdown                                 → {}
 *   GET    /v1/deployments                              → DeploymentInfo[]
 *   POST   /v1/deployments/fetch   FetchDeploymentInput → DeploymentInfo
 *   POST   /v1/deployments/add     AddDeploymentInput   → DeploymentInfo
 *   GET    /v1/deployments/:name                        → DeploymentInfo
 *   DELETE /v1/deployments/:name                        → {}
 *   POST   /v1/deployments/:name/renew RenewDeploymentInput → DeploymentInfo
 *   GET    /v1/deployments-audit                        → DeploymentAudit[]
 *   POST   /v1/agents/register     RegisterInput        → LocalAgent
 *   POST   /v1/agents/local        LocalRegisterInput   → LocalAgent (an offline agent of this machine: no relay)
 *   GET    /v1/agents                                   → LocalAgent[]
 *   GET    /v1/agents/:agent                            → LocalAgent (whoami)
 *   DELETE /v1/agents/:agent?revoke=                    → {}   (deregister: revokes on the relay, then forgets locally; revoke=false only forgets)
 *   POST   /v1/agents/:agent/token                      → {access_token, expires_at}
 *   GET    /v1/agents/:agent/keys                       → KeyStatus
 *   POST   /v1/agents/:agent/keys/generate              → KeyStatus (rotates the X25519 key, uploads it)
 *   POST   /v1/agents/:agent/keys/upload-signing        → KeyStatus
 *   POST   /v1/agents/:agent/peers/:number/accept-key   → PeerKey
 *   POST   /v1/agents/:agent/send   SendInput           → SentMessage (status queued: the relay was unreachable; the outbox sends it)
 *   POST   /v1/agents/:agent/reply  ReplyInput          → SentMessage
 *   GET    /v1/agents/:agent/inbox?source=auto|local|api → ArchivedMessage[] (unacknowledged inbound)
 *   GET    /v1/agents/:agent/conversations/:id/messages?last=&since= → ArchivedMessage[]  (:id = conversation id or peer number; unknown: 404 unknown_conversation)
 *   GET    /v1/agents/:agent/check?wait=&ack=           → ArchivedMessage[] (new, unacknowledged, unmuted inbound since the last check; long-poll)
 *   POST   /v1/agents/:agent/messages/:id/ack           → {message_id, acked_at}
 *   GET    /v1/agents/:agent/search?q=&limit=           → ArchivedMessage[] (FTS5 over the archive)
 *   POST   /v1/agents/:agent/sync                       → SyncResult
 *   POST   /v1/agents/:agent/relay  RelayCall           → {status, body}  (the daemon adds the access JWT)
 *   GET    /v1/agents/:agent/conversations?limit=       → ConversationSummary[] (most recent first)
 *   GET    /v1/agents/:agent/trust                      → TrustStatus (fingerprints, changed peer keys, held envelopes)
 *   GET    /v1/events?agent=                            → NDJSON stream of DaemonEvent, one per line
 *   POST   /v1/dashboard           DashboardOpenInput   → DashboardLaunch (serves the page on loopback; a fresh sign-in link)
 *   GET    /v1/local-stack                              → LocalStackStatus (the local nats-server of `svc start`)
 *   POST   /v1/local-stack/start   LocalStackStartInput → LocalStackStatus
 *   POST   /v1/local-stack/stop                         → {stopped}
 *
 * `verified=true` on inbox, conversations (their last messages), conversations/:id/messages,
 * check and search adds `verified` (MessageVerification) to every inbound message.
 */

export const DAEMON_ERROR_CODES = [
  'daemon_unavailable', // no daemon answers on the socket (CLI side)
  'daemon_already_running',
  'unknown_agent', // no local agent by that name/number
  'agent_required', // several local agents and neither --as nor SVC_AGENT
  'unknown_deployment',
  'deployment_exists',
  'vault_locked', // the file vault needs SVC_VAULT_PASSPHRASE
  'peer_key_changed', // a pinned peer key changed: `svc keys status` shows it, accept to continue
  'envelope_rejected', // an inbound envelope failed verification (reported, never archived)
  'not_supported_self_hosted', // hosted-only commands
  'relay_unreachable', // the relay does not answer (network, relay down); retry later
  'peer_directory_mismatch', // the relay's key directory answered for another agent/deployment/tenant
  'peer_key_invalid', // the directory served a small-order or malformed key (never pinned or sealed to)
  'conversation_mismatch', // a conversation id that is not the direct one of sender and recipient
  'relay_answer_too_large', // a relay answer or stream event larger than any valid one
  'deployment_stale', // renew offered a document older than the trusted one
  'not_a_member', // a group or broadcast this agent is not (or no longer) in
  'not_allowed_to_post', // an observer posting
  'not_conversation_creator', // an invite by someone other than the creator
  'attachment_digest_mismatch', // the blob served is not the one the sender signed for (never saved)
  'not_an_attachment',
] as const;
export type DaemonErrorCode = (typeof DAEMON_ERROR_CODES)[number];

/** `svc start [--local-only] [--port] [--monitor-port] [--listen] [--as UPLINK]`. */
export interface LocalStackStartInput {
  local_only: boolean;
  /** the nats-relay identity of this machine (default: the only one) */
  as?: string;
  port: number;
  monitor_port: number;
  listen: string;
}

export interface LocalStackStatus {
  running: boolean;
  pid?: number;
  local_only?: boolean;
  url?: string;
  monitor_url?: string;
  uplink?: string;
  /** the uplink's reply-inbox prefix: local clients of the hub's JetStream connect with it */
  inbox_prefix?: string;
  sources?: string[];
  creds_expire_at?: string;
}

export interface DaemonStatus {
  version: string;
  pid: number;
  home: string;
  started_at: string;
  vault: { kind: 'keyring' | 'file-encrypted' | 'file-plain'; warning?: string };
  agents: Array<{
    name: string;
    agent_number: string;
    deployment: string;
    session: 'connected' | 'connecting' | 'offline';
    /** `uplink`: a machine's nats-relay identity, `local`: a --local agent; neither has a relay session */
    kind?: 'agent' | 'uplink' | 'local';
    /** where its messages come from: the relay's HTTP stream, or its named source over the leaf uplink */
    receive?: 'relay-stream' | 'source';
    /** the durable consumer on the hub, when receiving through a named source */
    source?: string;
  }>;
}

export interface DaemonSummary {
  agents: Array<{
    name: string;
    agent_number: string;
    session: 'connected' | 'connecting' | 'offline';
    /** inbound, unacknowledged, not muted */
    unread: number;
  }>;
}

export interface DeploymentInfo {
  name: string;
  deployment_id: string;
  api_url: string;
  tenants: string[];
  relay_key_ids: string[];
  issued_at: string;
  expires_at: string;
  fetched_at: string;
}
export interface FetchDeploymentInput {
  url: string;
  /** trust bundle JSON text (the CLI reads the file) */
  trust_bundle: string;
  name?: string;
  /** PEM text of an extra CA bundle */
  ca_bundle?: string;
}
export interface AddDeploymentInput {
  /** the signed document (JWS text) */
  document: string;
  trust_bundle: string;
  name?: string;
  ca_bundle?: string;
}
export interface RenewDeploymentInput {
  url?: string;
  document?: string;
  trust_bundle?: string;
  ca_bundle?: string;
}
export interface DeploymentAudit {
  name: string;
  deployment_id: string;
  ok: boolean;
  problems: string[];
}

export interface RegisterInput {
  enrollment_code: string;
  /** deployment name; default: the one whose id the code names */
  deployment?: string;
  /** local name of the agent; default: the agent number */
  name?: string;
  display_name?: string;
  description?: string;
  discoverable?: boolean;
}

/** `svc register --local`: an offline agent of this machine (no relay, no login). */
export interface LocalRegisterInput {
  /** local name, also its agent number among the local agents */
  name: string;
}

export interface LocalAgent {
  name: string;
  agent_id: string;
  agent_number: string;
  tenant_id: string;
  deployment: string;
  deployment_id: string;
  api_url: string;
  capabilities: string[];
  signing_public_key: string;
  encryption_public_key: string;
  registered_at: string;
}

export interface KeyStatus {
  agent: string;
  signing_public_key: string;
  encryption_public_key: string;
  rotation: number;
  relay_version: number | null;
  peers: PeerKey[];
}
export interface PeerKey {
  agent_number: string;
  signing_public_key: string;
  encryption_public_key: string;
  pinned_at: string;
  /** set when the relay now serves a different key than the pinned one */
  changed?: { signing_public_key: string; encryption_public_key: string; seen_at: string };
}

export type ContentType = 'text' | 'structured' | 'media';
export interface SendInput {
  to: string;
  /** with file_path: the caption (may be empty) */
  content: string;
  content_type?: ContentType;
  conversation_id?: string;
  /** an absolute path: the file is encrypted here, uploaded as a blob, and the message carries its key (direct only) */
  file_path?: string;
}
export interface ReplyInput {
  message_id: string;
  content: string;
  to?: string;
  content_type?: ContentType;
}
export interface SentMessage {
  message_id: string;
  conversation_id: string;
  to: string;
  sent_at: string;
  /** accepted/duplicate: the relay has it; queued: the relay was unreachable, the daemon sends it when it answers */
  status: 'accepted' | 'duplicate' | 'queued';
  state: 'sent' | 'queued';
  /** group and broadcast messages: the members it was sealed to */
  recipients?: string[];
}

/**
 * Where a message stands. Outbound: queued (kept in the outbox until the relay answers),
 * sent (the relay has it), delivered (the recipient acknowledged it), failed (the relay
 * refused it; see send_error). Inbound: received (archived, not yet acknowledged here) or
 * read (acknowledged here).
 */
export type MessageState = 'queued' | 'sent' | 'delivered' | 'failed' | 'received' | 'read';

export interface ArchivedMessage {
  message_id: string;
  conversation_id: string;
  conversation_type: 'direct' | 'group' | 'broadcast';
  direction: 'inbound' | 'outbound';
  from: string;
  to: string;
  content_type: string;
  content: string;
  sent_at: string;
  received_at: string | null;
  acked_at: string | null;
  /** outbound: when the recipient acknowledged it (the relay's receipt); inbound: null */
  delivered_at: string | null;
  state: MessageState;
  /** inbound from a sender this agent muted: archived without any notification */
  muted: boolean;
  /** failed outbound: why the relay refused it */
  send_error?: string;
  /** inbound, when asked for with `verified=true`: what the daemon verified about the sender */
  verified?: MessageVerification;
  /** the cursor of `conv messages --since`: sent time and message id */
  sort_key?: string;
  /** group and broadcast messages: the sender's number for it (signed, inside the ciphertext) */
  seq?: number;
  /** what the receiver saw when it arrived: a gap before it, a late arrival, duplicates */
  sequence?: { gap?: { from: number; to: number }; late?: true; duplicates?: number; missing?: number[] };
}

/**
 * Where the sender's key stands for one message. pinned: signed by the key pinned for the
 * sender, and the relay serves no other. changed: the relay now serves a key nobody
 * accepted, or the message was signed by a key since replaced. held: an envelope signed by
 * a changed key, kept unopened until the owner accepts that key.
 */
export type SenderTrust = 'pinned' | 'changed' | 'held';

export interface MessageVerification {
  /** the sender's agent number: authenticated by the relay and named by the signed header */
  sender: string;
  /** fingerprint of the signing key the envelope verified under (null: no pin known) */
  key_fingerprint: string | null;
  trust: SenderTrust;
  /** the key the relay serves now, when it differs from the pin and is not accepted */
  changed_key_fingerprint?: string;
}

/** An envelope signed by a changed sender key: not opened, not archived, until accepted. */
export interface HeldMessage {
  message_id: string;
  from: string;
  held_at: string;
  trust: 'held';
  /** fingerprint of the changed key it is signed with */
  key_fingerprint: string | null;
}

export interface TrustStatus {
  agent: string;
  agent_number: string;
  signing_key_fingerprint: string;
  peers: Array<{
    agent_number: string;
    key_fingerprint: string;
    pinned_at: string;
    trust: 'pinned' | 'changed';
    changed?: { key_fingerprint: string; seen_at: string };
    /** envelopes held for this peer */
    held: number;
  }>;
  held: HeldMessage[];
}

/**
 * One conversation in the list (GET /v1/agents/:agent/conversations): what the archive
 * knows of it and, for a group or broadcast, the roster as this agent derives it.
 */
export interface ConversationSummary extends Omit<ConversationInfo, 'peer' | 'last_message_at' | 'message_count'> {
  /** the other agent of a direct conversation */
  peer: string | null;
  last_message_at: string;
  message_count: number;
  /** inbound, unacknowledged, not muted */
  unread: number;
  last_message?: ArchivedMessage;
}

export interface SyncResult {
  agent: string;
  fetched: number;
  archived: number;
  rejected: number;
  /** delivery receipts of sent messages newly recorded */
  receipts: number;
}

export interface RelayCall {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** a relay path under /api/v1/ */
  path: string;
  body?: unknown;
}

export type DaemonEvent =
  | { type: 'message'; agent: string; message: ArchivedMessage }
  | { type: 'rejected'; agent: string; message_id: string; from: string; reason: string }
  | { type: 'session'; agent: string; state: 'connected' | 'connecting' | 'offline' }
  | { type: 'peer_key_changed'; agent: string; peer: string }
  /** the recipient of a message this agent sent acknowledged it */
  | { type: 'receipt'; agent: string; message_id: string; recipient: string; acked_at: string }
  /** a queued message left the outbox: sent, or refused by the relay (error says why) */
  | { type: 'outbox'; agent: string; message_id: string; state: 'sent' | 'failed'; error?: string }

  /** a group message arrived out of its sender's order: a gap before it, late (reordered), or again (duplicate) */
  | {
      type: 'sequence';
      agent: string;
      conversation_id: string;
      sender: string;
      message_id: string;
      seq: number;
      kind: 'gap' | 'reordered' | 'duplicate';
      missing?: { from: number; to: number };
    }
  /** the roster of a group or broadcast changed (a control message was taken) */
  | { type: 'roster'; agent: string; conversation_id: string }
  /** an attachment moving to or from the relay: bytes done of total (for a progress bar) */
  | { type: 'transfer'; agent: string; direction: 'upload' | 'download'; name: string; done: number; total: number };

export interface DashboardOpenInput {
  /** loopback only: 127.0.0.1 (default), ::1 or localhost */
  host?: string;
  /** default 8191; 0 picks a free port */
  port?: number;
}
export interface DashboardLaunch {
  /** the sign-in link: one-time token, redeemable for 10 minutes */
  url: string;
  /** the page's origin */
  base_url: string;
  host: string;
  port: number;
}

// --- conversations: groups and broadcasts (client-side rosters), search
//   POST /v1/agents/:agent/conversations        CreateConversationInput → ConversationInfo
//   GET  /v1/agents/:agent/conversations?limit=&verified= → ConversationSummary[] (most recent first; groups with their roster)
//   GET  /v1/agents/:agent/conversations/:id     → ConversationInfo (the roster as this agent derives it)
//   POST /v1/agents/:agent/conversations/:id/invite InviteInput → ConversationInfo (creator only)
//   POST /v1/agents/:agent/conversations/:id/leave → ConversationInfo
//   GET  /v1/agents/:agent/conversations/:id/page?limit=&since= → ArchivedMessage[] (sort-key order)
//   GET  /v1/agents/:agent/conversation-search?participant=&after=&before=&type=&sort=&limit=&offset= → ArchivedMessage[]
export interface CreateConversationInput {
  kind: 'group' | 'broadcast';
  name: string;
  description?: string;
  /** participants (group) or subscribers (broadcast): agent numbers */
  members?: string[];
}
export interface InviteInput {
  number: string;
  role?: 'member' | 'observer';
}
export interface ConversationMember {
  number: string;
  role: 'creator' | 'member' | 'observer';
  active: boolean;
}
export interface ConversationInfo {
  conversation_id: string;
  conversation_type: 'direct' | 'group' | 'broadcast';
  name?: string;
  description?: string;
  creator?: string;
  members?: ConversationMember[];
  /** this agent's place in it (groups and broadcasts) */
  me?: { role: ConversationMember['role']; active: boolean };
  /** direct: the other party */
  peer?: string;
  last_message_at?: string;
  message_count?: number;
}
export interface ConversationSearchInput {
  participant?: string;
  after?: string;
  before?: string;
  type?: 'text' | 'media' | 'structured';
  sort?: 'recent' | 'oldest';
  /** 1 to 100, default 20 */
  limit?: number;
  /** 0 to 10000, default 0 */
  offset?: number;
}
/** An attachment written by `read --save`: POST /v1/agents/:agent/messages/:id/attachment {dir} → SavedAttachment */
export interface SavedAttachment {
  message_id: string;
  path: string;
  size: number;
  media_type: string;
  /** the name the sender gave */
  name: string;
}
export const CONVERSATION_LIMITS = { listDefault: 20, messagesDefault: 50, searchMax: 100, offsetMax: 10_000 } as const;
