/**
 * The CLI's one door to the daemon: the `DaemonLink` interface the commands use, backed by
 * the daemon's `DaemonClient` (`@svc/daemon/client`, which speaks the socket API of
 * api.ts). Commands depend only on the interface, so tests hand in a fake.
 */

import type {
  ConversationInfo,
  ConversationSearchInput,
  ConversationSummary,
  CreateConversationInput,
  InviteInput,
  SavedAttachment,
} from '@svc/daemon/client';
import {
  type AddDeploymentInput,
  type ArchivedMessage,
  type DaemonClient,
  DaemonClientError,
  type DaemonEvent,
  type DaemonStatus,
  type DashboardLaunch,
  type DashboardOpenInput,
  type DeploymentAudit,
  type DeploymentInfo,
  ensureDaemon,
  type FetchDeploymentInput,
  type KeyStatus,
  type LocalAgent,
  type LocalRegisterInput,
  type PeerKey,
  type RegisterInput,
  type RelayCall,
  type RenewDeploymentInput,
  type ReplyInput,
  type SendInput,
  type SentMessage,
  type SyncResult,
} from '@svc/daemon/client';
import { CliError } from './errors.js';
import { socketPath } from './home.js';

export type InboxSource = 'auto' | 'local' | 'api';

export interface DaemonLink {
  status(): Promise<DaemonStatus>;
  shutdown(): Promise<void>;
  listDeployments(): Promise<DeploymentInfo[]>;
  fetchDeployment(input: FetchDeploymentInput): Promise<DeploymentInfo>;
  addDeployment(input: AddDeploymentInput): Promise<DeploymentInfo>;
  getDeployment(name: string): Promise<DeploymentInfo>;
  removeDeployment(name: string): Promise<void>;
  renewDeployment(name: string, input: RenewDeploymentInput): Promise<DeploymentInfo>;
  auditDeployments(): Promise<DeploymentAudit[]>;
  register(input: RegisterInput): Promise<LocalAgent>;
  registerLocal(input: LocalRegisterInput): Promise<LocalAgent>;
  listAgents(): Promise<LocalAgent[]>;
  getAgent(agent: string): Promise<LocalAgent>;
  deregister(agent: string, opts?: { revoke?: boolean }): Promise<void>;
  token(agent: string): Promise<{ access_token: string; expires_at: string }>;
  keyStatus(agent: string): Promise<KeyStatus>;
  generateKeys(agent: string): Promise<KeyStatus>;
  uploadSigningKey(agent: string): Promise<KeyStatus>;
  acceptPeerKey(agent: string, peer: string): Promise<PeerKey>;
  send(agent: string, input: SendInput): Promise<SentMessage>;
  reply(agent: string, input: ReplyInput): Promise<SentMessage>;
  inbox(agent: string, source: InboxSource): Promise<ArchivedMessage[]>;
  conversation(agent: string, id: string, query: { last?: number; since?: string }): Promise<ArchivedMessage[]>;
  check(agent: string, query: { wait?: number; ack?: boolean; signal?: AbortSignal }): Promise<ArchivedMessage[]>;
  ack(agent: string, messageId: string): Promise<{ message_id: string; acked_at: string }>;
  search(agent: string, query: string, limit: number): Promise<ArchivedMessage[]>;
  sync(agent: string): Promise<SyncResult>;
  relay(agent: string, call: RelayCall): Promise<{ status: number; body: unknown }>;
  events(agent: string | undefined, signal?: AbortSignal): AsyncIterable<DaemonEvent>;
  /** serves the dashboard on loopback (if not yet) and answers a fresh one-time sign-in link */
  openDashboard(input: DashboardOpenInput): Promise<DashboardLaunch>;
  // conversations: groups and broadcasts, paging, search
  createConversation(agent: string, input: CreateConversationInput): Promise<ConversationInfo>;
  listConversations(agent: string, limit: number): Promise<ConversationSummary[]>;
  invite(agent: string, id: string, input: InviteInput): Promise<ConversationInfo>;
  leave(agent: string, id: string): Promise<ConversationInfo>;
  conversationMessages(agent: string, id: string, q: { limit?: number; since?: string }): Promise<ArchivedMessage[]>;
  searchConversations(agent: string, q: ConversationSearchInput): Promise<ArchivedMessage[]>;
  saveAttachment(agent: string, messageId: string, dir: string): Promise<SavedAttachment>;
  /** the local stack's nats-server (`svc start --local-only`, `svc stop --local`) */
  localStack: DaemonClient['localStack'];
}

export interface ConnectOptions {
  home: string;
  /** start the daemon when none answers (false with --no-autostart) */
  autostart: boolean;
  /** environment of a daemon started here */
  env?: NodeJS.ProcessEnv;
}

/** A link to a running daemon, started (detached) first unless autostart is false. */
export async function connectDaemon(options: ConnectOptions): Promise<DaemonLink> {
  try {
    const client = await ensureDaemon({
      home: options.home,
      autostart: options.autostart,
      ...(options.env ? { env: options.env } : {}),
    });
    return clientLink(client);
  } catch (err) {
    if (err instanceof DaemonClientError && err.code === 'daemon_unavailable' && !options.autostart) {
      throw new CliError(
        'daemon_unavailable',
        `No svc daemon answers on ${socketPath(options.home)}; start it with \`svc start\` (same SVC_HOME) or run the command without --no-autostart.`,
        { cause: err },
      );
    }
    throw err;
  }
}

/** The DaemonLink view of a DaemonClient. */
export function clientLink(client: DaemonClient): DaemonLink {
  return {
    status: () => client.status(),
    shutdown: () => client.shutdown(),
    listDeployments: () => client.listDeployments(),
    fetchDeployment: (input) => client.fetchDeployment(input),
    addDeployment: (input) => client.addDeployment(input),
    getDeployment: (name) => client.getDeployment(name),
    removeDeployment: (name) => client.removeDeployment(name),
    renewDeployment: (name, input) => client.renewDeployment(name, input),
    auditDeployments: () => client.auditDeployments(),
    register: (input) => client.register(input),
    registerLocal: (input) => client.registerLocal(input),
    listAgents: () => client.listAgents(),
    getAgent: (agent) => client.getAgent(agent),
    deregister: (agent, opts) => client.deregister(agent, opts),
    token: (agent) => client.token(agent),
    keyStatus: (agent) => client.keys(agent),
    generateKeys: (agent) => client.generateKeys(agent),
    uploadSigningKey: (agent) => client.uploadSigningKey(agent),
    acceptPeerKey: (agent, peer) => client.acceptPeerKey(agent, peer),
    send: (agent, input) => client.send(agent, input),
    reply: (agent, input) => client.reply(agent, input),
    inbox: (agent, source) => client.inbox(agent, { source }),
    conversation: (agent, id, q) => client.read(agent, id, q),
    check: (agent, q) => client.check(agent, q),
    ack: (agent, id) => client.ack(agent, id),
    search: (agent, q, limit) => client.search(agent, q, { limit }),
    sync: (agent) => client.sync(agent),
    relay: (agent, call) => client.relay(agent, call),
    events: (agent, signal) => eventsUntil(client, agent, signal),
    openDashboard: (input) => client.openDashboard(input),
    // conversations: groups and broadcasts, paging, search
    createConversation: (agent, input) => client.createConversation(agent, input),
    listConversations: (agent, limit) => client.conversations(agent, { limit }),
    invite: (agent, id, input) => client.invite(agent, id, input),
    leave: (agent, id) => client.leave(agent, id),
    conversationMessages: (agent, id, q) => client.conversationMessages(agent, id, q),
    searchConversations: (agent, q) => client.searchConversations(agent, q),
    saveAttachment: (agent, id, dir) => client.saveAttachment(agent, id, dir),
    localStack: client.localStack.bind(client),
  };
}

async function* eventsUntil(client: DaemonClient, agent: string | undefined, signal?: AbortSignal) {
  const stream = await client.events(agent === undefined ? {} : { agent });
  const close = () => stream.close();
  if (signal?.aborted) close();
  signal?.addEventListener('abort', close, { once: true });
  try {
    yield* stream;
  } finally {
    signal?.removeEventListener('abort', close);
    stream.close();
  }
}
