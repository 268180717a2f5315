/**
 * The contract between the daemon and its clients (cli, tui, desktop, the dashboard page),
 * declared once: DAEMON_API below has one entry per operation (method, path, the params,
 * query and body schemas, the answer's schema). The daemon's routes register these
 * entries (server/routes/*, with the TypeBox type provider), `DaemonClient` (./index.ts)
 * calls them by name and implements `DaemonApi`. Served as JSON over HTTP on
 * `$SVC_HOME/run/daemon.sock`; `:agent` is a local agent name or agent number. Every
 * failure is `{error, message}` with a code of the shared error catalog (or a daemon code
 * of DAEMON_ERROR_CODES) and a non-2xx status. `verified=true` on the reading operations
 * adds `verified` (MessageVerification) to every inbound message.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import {
  BlockedList,
  Contact,
  ContactList,
  ContactRequest,
  HeartbeatRequest,
  HeartbeatResponse,
  MutedList,
  OwnProfile,
  ProfileUpdate,
  PublicProfile,
  RelationEntry,
  ReportAccepted,
  ReportRequest,
} from '@svc/shared';
import * as M from './models.js';

export { errorOfBody } from './error-body.js';
export * from './models.js';

export const DAEMON_ERROR_CODES = [
  'daemon_unavailable', // no daemon answers on the socket (CLI side)
  'daemon_already_running',
  'unknown_agent', // no local agent by that name/number
  'agent_required', // several local agents and neither --as nor SVC_AGENT
  'unknown_deployment',
  'deployment_exists',
  'deployment_in_use', // remove of a deployment local agents are registered on
  'vault_locked', // the file vault needs SVC_VAULT_PASSPHRASE
  'archive_unusable', // an agent's archive written by a newer svc, or damaged (left as it is)
  'home_not_writable', // a file under SVC_HOME cannot be changed (deregister could not set the agent's directory aside)
  'peer_key_changed', // a pinned peer key changed: `svc keys status` shows it, accept to continue
  'envelope_rejected', // an inbound envelope failed verification (reported, never archived)
  'not_supported_self_hosted', // hosted-only commands
  'relay_unreachable', // the relay does not answer (network, relay down); retry later
  'peer_directory_mismatch', // the relay's key directory answered for another agent/deployment/tenant
  'enrollment_answer_mismatch', // the relay's enrollment answer relabels the agent its code names (nothing saved)
  'peer_key_invalid', // the directory served a small-order or malformed key, or a new signing key its record is not signed by (never pinned or sealed to)
  'peer_key_unsigned', // the peer's only key record is unsigned (enrolled before records were signed): nothing sealed until it publishes a signed one
  'own_key_mismatch', // the relay publishes keys for one of our agents that its vault did not sign (nothing uploaded)
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

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
interface Parts {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
}

/** One operation: its route, and the Fastify schema (request parts and the 2xx answer). */
export interface Operation<S extends Parts = Parts, R extends TSchema = TSchema> {
  method: Method;
  path: string;
  schema: S & { response: { '2xx': R } };
}

const op = <const S extends Parts, R extends TSchema>(
  method: Method,
  path: string,
  parts: S,
  answer: R,
): Operation<S, R> => ({ method, path, schema: { ...parts, response: { '2xx': answer } } });

const Verified = { verified: Type.Optional(Type.Boolean()) };
const Done = M.Empty;
const agentOnly = { params: M.AgentParams };
const peerOnly = { params: M.PeerParams };

export const DAEMON_API = {
  // --- the daemon
  status: op('GET', '/v1/status', {}, M.DaemonStatus),
  /** sessions and unread counts, no relay call (status lines) */
  summary: op('GET', '/v1/summary', {}, M.DaemonSummary),
  shutdown: op('POST', '/v1/shutdown', {}, Done),

  // --- trusted deployments
  listDeployments: op('GET', '/v1/deployments', {}, Type.Array(M.DeploymentInfo)),
  fetchDeployment: op('POST', '/v1/deployments/fetch', { body: M.FetchDeploymentInput }, M.DeploymentInfo),
  addDeployment: op('POST', '/v1/deployments/add', { body: M.AddDeploymentInput }, M.DeploymentInfo),
  getDeployment: op('GET', '/v1/deployments/:name', { params: M.DeploymentParams }, M.DeploymentInfo),
  removeDeployment: op('DELETE', '/v1/deployments/:name', { params: M.DeploymentParams }, Done),
  renewDeployment: op(
    'POST',
    '/v1/deployments/:name/renew',
    { params: M.DeploymentParams, body: M.RenewDeploymentInput },
    M.DeploymentInfo,
  ),
  auditDeployments: op('GET', '/v1/deployments-audit', {}, Type.Array(M.DeploymentAudit)),
  diagnoseDeployment: op(
    'GET',
    '/v1/deployments/:name/diagnose',
    { params: M.DeploymentParams, querystring: Type.Object({ at: Type.Optional(Type.String({ minLength: 1 })) }) },
    M.DeploymentDiagnosis,
  ),

  /** whether a relay answers at an address, is ready, and serves a document trusted here */
  checkRelay: op(
    'POST',
    '/v1/relay-check',
    { body: Type.Object({ url: Type.String({ minLength: 1, maxLength: 2048 }) }) },
    M.RelayCheck,
  ),
  /** each in-service agent's archive (or the one asked for): quick unless full, from a receipt when recent */
  archiveIntegrity: op(
    'GET',
    '/v1/archives/integrity',
    { querystring: Type.Object({ agent: Type.Optional(M.AgentRef), full: Type.Optional(Type.Boolean()) }) },
    Type.Array(M.ArchiveIntegrity),
  ),

  /** sets the agent's archive aside and starts an empty one, pinned peer keys carried over */
  resetArchive: op('POST', '/v1/agents/:agent/archive/reset', agentOnly, M.ArchiveReset),

  // --- local agents and keys
  register: op('POST', '/v1/agents/register', { body: M.RegisterInput }, M.RegisteredAgent),
  /** an offline agent of this machine: no relay, no login */
  registerLocal: op('POST', '/v1/agents/local', { body: M.LocalRegisterInput }, M.LocalAgent),
  listAgents: op('GET', '/v1/agents', {}, Type.Array(M.LocalAgent)),
  getAgent: op('GET', '/v1/agents/:agent', agentOnly, M.LocalAgent),
  /** revokes the agent on its relay, then forgets it here; revoke=false only forgets it */
  deregister: op(
    'DELETE',
    '/v1/agents/:agent',
    { ...agentOnly, querystring: Type.Object({ revoke: Type.Optional(Type.Boolean()) }) },
    Done,
  ),
  token: op('POST', '/v1/agents/:agent/token', agentOnly, M.AccessToken),
  keys: op('GET', '/v1/agents/:agent/keys', agentOnly, M.KeyStatus),
  /** rotates the X25519 key and uploads it */
  generateKeys: op('POST', '/v1/agents/:agent/keys/generate', agentOnly, M.KeyStatus),
  uploadSigningKey: op('POST', '/v1/agents/:agent/keys/upload-signing', agentOnly, M.KeyStatus),
  /** svc keys backfill: has the relay publish a signed record of the vault's keys where it does not yet */
  backfillKeys: op(
    'POST',
    '/v1/agents/:agent/keys/backfill',
    { ...agentOnly, body: Type.Object({ dry_run: Type.Optional(Type.Boolean()) }, { additionalProperties: false }) },
    M.KeyBackfill,
  ),
  acceptPeerKey: op('POST', '/v1/agents/:agent/peers/:number/accept-key', peerOnly, M.PeerKey),

  // --- messages
  /** status queued: the relay was unreachable; the outbox sends it */
  send: op('POST', '/v1/agents/:agent/send', { ...agentOnly, body: M.SendInput }, M.SentMessage),
  reply: op('POST', '/v1/agents/:agent/reply', { ...agentOnly, body: M.ReplyInput }, M.SentMessage),
  /** unacknowledged inbound */
  inbox: op(
    'GET',
    '/v1/agents/:agent/inbox',
    {
      ...agentOnly,
      querystring: Type.Object({ source: Type.Optional(M.Literals(['auto', 'local', 'api'])), ...Verified }),
    },
    M.ArchivedMessages,
  ),
  /** :id = conversation id or peer number; unknown: 404 unknown_conversation */
  read: op(
    'GET',
    '/v1/agents/:agent/conversations/:id/messages',
    {
      params: M.ConversationParams,
      querystring: Type.Object({
        last: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
        /** an ISO-8601 time */
        since: Type.Optional(Type.String()),
        /** a message id of the conversation: only the messages before it (to page back) */
        before: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
        ...Verified,
      }),
    },
    M.ArchivedMessages,
  ),
  /** new, unacknowledged, unmuted inbound since the last check; long-polls up to `wait` seconds */
  check: op(
    'GET',
    '/v1/agents/:agent/check',
    {
      ...agentOnly,
      querystring: Type.Object({
        wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 300 })),
        ack: Type.Optional(Type.Boolean()),
        ...Verified,
      }),
    },
    M.ArchivedMessages,
  ),
  ack: op('POST', '/v1/agents/:agent/messages/:id/ack', { params: M.MessageParams }, M.AckResult),
  /** FTS5 over the archive */
  search: op(
    'GET',
    '/v1/agents/:agent/search',
    {
      ...agentOnly,
      querystring: Type.Object({
        q: Type.String({ minLength: 1 }),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
        ...Verified,
      }),
    },
    M.ArchivedMessages,
  ),
  /** most recent first, with unread counts, the last message and (groups) the roster */
  conversations: op(
    'GET',
    '/v1/agents/:agent/conversations',
    {
      ...agentOnly,
      querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })), ...Verified }),
    },
    Type.Array(M.ConversationSummary),
  ),
  /** fingerprints, changed peer keys, held envelopes */
  trust: op('GET', '/v1/agents/:agent/trust', agentOnly, M.TrustStatus),
  sync: op('POST', '/v1/agents/:agent/sync', agentOnly, M.SyncResult),
  /** fetches, checks and decrypts a message's attachment into `dir` (absolute) */
  saveAttachment: op(
    'POST',
    '/v1/agents/:agent/messages/:id/attachment',
    { params: M.MessageParams, body: Type.Object({ dir: Type.String({ minLength: 1, maxLength: 4096 }) }) },
    M.SavedAttachment,
  ),

  // --- groups and broadcasts (client-side rosters), paging, search
  createConversation: op(
    'POST',
    '/v1/agents/:agent/conversations',
    { ...agentOnly, body: M.CreateConversationInput },
    M.ConversationInfo,
  ),
  /** the roster as this agent derives it */
  getConversation: op(
    'GET',
    '/v1/agents/:agent/conversations/:id',
    { params: M.ConversationParams },
    M.ConversationInfo,
  ),
  /** creator only */
  invite: op(
    'POST',
    '/v1/agents/:agent/conversations/:id/invite',
    { params: M.ConversationParams, body: M.InviteInput },
    M.ConversationInfo,
  ),
  leave: op('POST', '/v1/agents/:agent/conversations/:id/leave', { params: M.ConversationParams }, M.ConversationInfo),
  /** sort-key order; `since` is the sort key of an earlier page */
  conversationMessages: op(
    'GET',
    '/v1/agents/:agent/conversations/:id/page',
    {
      params: M.ConversationParams,
      querystring: Type.Object({
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        since: Type.Optional(Type.String({ maxLength: 512 })),
      }),
    },
    M.ArchivedMessages,
  ),
  searchConversations: op(
    'GET',
    '/v1/agents/:agent/conversation-search',
    { ...agentOnly, querystring: M.ConversationSearchInput },
    M.ArchivedMessages,
  ),

  // --- the agent on its relay (the daemon builds the relay paths and adds the access JWT)
  profile: op('GET', '/v1/agents/:agent/profile', agentOnly, OwnProfile),
  updateProfile: op('PATCH', '/v1/agents/:agent/profile', { ...agentOnly, body: ProfileUpdate }, OwnProfile),
  heartbeat: op('POST', '/v1/agents/:agent/heartbeat', { ...agentOnly, body: HeartbeatRequest }, HeartbeatResponse),
  /** another agent's directory entry (`:number` = agent number or id) */
  peerProfile: op('GET', '/v1/agents/:agent/peers/:number/profile', peerOnly, PublicProfile),
  block: op('POST', '/v1/agents/:agent/peers/:number/block', peerOnly, RelationEntry),
  unblock: op('DELETE', '/v1/agents/:agent/peers/:number/block', peerOnly, Done),
  mute: op('POST', '/v1/agents/:agent/peers/:number/mute', peerOnly, RelationEntry),
  unmute: op('DELETE', '/v1/agents/:agent/peers/:number/mute', peerOnly, Done),
  blocked: op('GET', '/v1/agents/:agent/blocked', agentOnly, BlockedList),
  muted: op('GET', '/v1/agents/:agent/muted', agentOnly, MutedList),
  /** to the relay operator */
  report: op('POST', '/v1/agents/:agent/peers/:number/report', { ...peerOnly, body: ReportRequest }, ReportAccepted),
  contacts: op('GET', '/v1/agents/:agent/contacts', agentOnly, ContactList),
  /** adds a contact or updates its alias and notes (created: it was new) */
  saveContact: op(
    'POST',
    '/v1/agents/:agent/contacts',
    { ...agentOnly, body: ContactRequest },
    Type.Object({ created: Type.Boolean(), contact: Contact }),
  ),
  removeContact: op('DELETE', '/v1/agents/:agent/contacts/:number', peerOnly, Done),

  // --- the event stream, the dashboard page, the local stack
  /** NDJSON, one DaemonEvent per line, until the client goes away */
  events: op('GET', '/v1/events', { querystring: Type.Object({ agent: Type.Optional(M.AgentRef) }) }, M.DaemonEvent),
  /** serves the page on loopback (if not yet) and answers a fresh one-time sign-in link */
  openDashboard: op('POST', '/v1/dashboard', { body: M.DashboardOpenInput }, M.DashboardLaunch),
  /** the local nats-server of `svc start` */
  localStackStatus: op('GET', '/v1/local-stack', {}, M.LocalStackStatus),
  localStackStart: op('POST', '/v1/local-stack/start', { body: M.LocalStackStartInput }, M.LocalStackStatus),
  localStackStop: op('POST', '/v1/local-stack/stop', {}, Type.Object({ stopped: Type.Boolean() })),
} as const;

export type DaemonApiName = keyof typeof DAEMON_API;
type Op<K extends DaemonApiName> = (typeof DAEMON_API)[K];
type Part<K extends DaemonApiName, P extends keyof Parts> = Op<K>['schema'] extends {
  [Q in P]: infer S extends TSchema;
}
  ? Static<S>
  : undefined;
/** What an operation takes and answers, derived from its schemas. */
export type ApiParams<K extends DaemonApiName> = Part<K, 'params'>;
export type ApiQuery<K extends DaemonApiName> = Part<K, 'querystring'>;
export type ApiBody<K extends DaemonApiName> = Part<K, 'body'>;
export type ApiAnswer<K extends DaemonApiName> = Static<Op<K>['schema']['response']['2xx']>;

export type ContactSaved = ApiAnswer<'saveContact'>;
export type AgentRelation = 'block' | 'mute';

/** Options of a long-poll: `signal` cancels it (Ctrl-C); the daemon then moves no cursor and acks nothing. */
export interface Cancellable {
  signal?: AbortSignal;
}

export interface DaemonEventStream extends AsyncIterable<M.DaemonEvent> {
  close(): void;
}

/**
 * What a client of the daemon can do: `DaemonClient` implements it over the socket, the
 * CLI's commands and its test double use it. Arguments and answers are the operations'
 * schemas above.
 */
export interface DaemonApi {
  status(): Promise<ApiAnswer<'status'>>;
  summary(): Promise<ApiAnswer<'summary'>>;
  shutdown(): Promise<void>;

  listDeployments(): Promise<ApiAnswer<'listDeployments'>>;
  fetchDeployment(input: ApiBody<'fetchDeployment'>): Promise<ApiAnswer<'fetchDeployment'>>;
  addDeployment(input: ApiBody<'addDeployment'>): Promise<ApiAnswer<'addDeployment'>>;
  getDeployment(name: string): Promise<ApiAnswer<'getDeployment'>>;
  removeDeployment(name: string): Promise<void>;
  renewDeployment(name: string, input?: ApiBody<'renewDeployment'>): Promise<ApiAnswer<'renewDeployment'>>;
  auditDeployments(): Promise<ApiAnswer<'auditDeployments'>>;
  diagnoseDeployment(nameOrId: string, at?: string): Promise<ApiAnswer<'diagnoseDeployment'>>;
  archiveIntegrity(options?: { agent?: string; full?: boolean }): Promise<ApiAnswer<'archiveIntegrity'>>;
  checkRelay(url: string): Promise<ApiAnswer<'checkRelay'>>;
  resetArchive(agent: string): Promise<ApiAnswer<'resetArchive'>>;

  register(input: ApiBody<'register'>): Promise<ApiAnswer<'register'>>;
  registerLocal(input: ApiBody<'registerLocal'>): Promise<ApiAnswer<'registerLocal'>>;
  listAgents(): Promise<ApiAnswer<'listAgents'>>;
  getAgent(agent: string): Promise<ApiAnswer<'getAgent'>>;
  deregister(agent: string, options?: ApiQuery<'deregister'>): Promise<void>;
  token(agent: string): Promise<ApiAnswer<'token'>>;
  keys(agent: string): Promise<ApiAnswer<'keys'>>;
  generateKeys(agent: string): Promise<ApiAnswer<'generateKeys'>>;
  uploadSigningKey(agent: string): Promise<ApiAnswer<'uploadSigningKey'>>;
  backfillKeys(agent: string, options?: { dryRun?: boolean }): Promise<ApiAnswer<'backfillKeys'>>;
  acceptPeerKey(agent: string, peerNumber: string): Promise<ApiAnswer<'acceptPeerKey'>>;

  send(agent: string, input: ApiBody<'send'>): Promise<ApiAnswer<'send'>>;
  reply(agent: string, input: ApiBody<'reply'>): Promise<ApiAnswer<'reply'>>;
  inbox(agent: string, options?: ApiQuery<'inbox'>): Promise<ApiAnswer<'inbox'>>;
  /** `conversation` = conversation id or peer number */
  read(agent: string, conversation: string, options?: ApiQuery<'read'>): Promise<ApiAnswer<'read'>>;
  check(agent: string, options?: ApiQuery<'check'> & Cancellable): Promise<ApiAnswer<'check'>>;
  ack(agent: string, messageId: string): Promise<ApiAnswer<'ack'>>;
  search(agent: string, q: string, options?: Omit<ApiQuery<'search'>, 'q'>): Promise<ApiAnswer<'search'>>;
  conversations(agent: string, options?: ApiQuery<'conversations'>): Promise<ApiAnswer<'conversations'>>;
  trust(agent: string): Promise<ApiAnswer<'trust'>>;
  sync(agent: string): Promise<ApiAnswer<'sync'>>;
  saveAttachment(agent: string, messageId: string, dir: string): Promise<ApiAnswer<'saveAttachment'>>;

  createConversation(agent: string, input: ApiBody<'createConversation'>): Promise<ApiAnswer<'createConversation'>>;
  getConversation(agent: string, id: string): Promise<ApiAnswer<'getConversation'>>;
  invite(agent: string, id: string, input: ApiBody<'invite'>): Promise<ApiAnswer<'invite'>>;
  leave(agent: string, id: string): Promise<ApiAnswer<'leave'>>;
  conversationMessages(
    agent: string,
    id: string,
    options?: ApiQuery<'conversationMessages'>,
  ): Promise<ApiAnswer<'conversationMessages'>>;
  searchConversations(
    agent: string,
    input?: ApiQuery<'searchConversations'>,
  ): Promise<ApiAnswer<'searchConversations'>>;

  profile(agent: string): Promise<ApiAnswer<'profile'>>;
  updateProfile(agent: string, update: ApiBody<'updateProfile'>): Promise<ApiAnswer<'updateProfile'>>;
  heartbeat(agent: string, input?: ApiBody<'heartbeat'>): Promise<ApiAnswer<'heartbeat'>>;
  peerProfile(agent: string, peer: string): Promise<ApiAnswer<'peerProfile'>>;
  /** block or mute `peer` (idempotent) */
  relate(agent: string, relation: AgentRelation, peer: string): Promise<ApiAnswer<'block'>>;
  /** lift a block or mute (idempotent) */
  unrelate(agent: string, relation: AgentRelation, peer: string): Promise<void>;
  blocked(agent: string): Promise<ApiAnswer<'blocked'>>;
  muted(agent: string): Promise<ApiAnswer<'muted'>>;
  report(agent: string, peer: string, input: ApiBody<'report'>): Promise<ApiAnswer<'report'>>;
  contacts(agent: string): Promise<ApiAnswer<'contacts'>>;
  saveContact(agent: string, input: ApiBody<'saveContact'>): Promise<ContactSaved>;
  removeContact(agent: string, number: string): Promise<void>;

  events(options?: ApiQuery<'events'>): Promise<DaemonEventStream>;
  openDashboard(input?: ApiBody<'openDashboard'>): Promise<ApiAnswer<'openDashboard'>>;
  localStack(action: 'start', input: ApiBody<'localStackStart'>): Promise<ApiAnswer<'localStackStart'>>;
  localStack(action: 'stop'): Promise<ApiAnswer<'localStackStop'>>;
  localStack(action: 'status'): Promise<ApiAnswer<'localStackStatus'>>;
}
