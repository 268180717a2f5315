/**
 * The page's only door: the daemon's dashboard API on its own origin. The session cookie
 * (HttpOnly) rides along, with the page key: a browser sends a loopback cookie to every
 * port of the host, the key only goes where this page sends it. The page holds no other
 * credential and no key of an agent.
 */
import type { Contact, OwnProfile, RelationEntry } from '@svc/shared';
import type {
  ArchivedMessage,
  ConversationSummary,
  DaemonStatus,
  DeploymentInfo,
  KeyStatus,
  LocalAgent,
  PeerKey,
  SentMessage,
} from '../../src/client/api.js';
import { errorOfBody } from '../../src/client/error-body.js';

/** The daemon's types (the one contract), for the views. */
export type * from '../../src/client/api.js';

const PAGE_KEY_ITEM = 'svc.dashboard.page-key';
let keptKey: string | null = null;

/**
 * The page key: the sign-in link's redirect brings it in the fragment (`/#key=…`), which is
 * kept in this origin's storage (other ports cannot read it; other tabs and a reload can)
 * and taken out of the address bar at once.
 */
function takeKeyFromAddress(): void {
  const m = /^#key=([A-Za-z0-9_-]{20,256})$/.exec(window.location.hash);
  if (!m) return;
  keptKey = m[1] as string;
  try {
    window.localStorage.setItem(PAGE_KEY_ITEM, keptKey);
  } catch {
    // no storage (a locked-down profile): this tab keeps it in memory
  }
  window.history.replaceState(null, '', window.location.pathname + window.location.search);
}
takeKeyFromAddress();

/** Read at each call: a sign-in in another tab replaced the session cookie and the key together. */
export function pageKey(): string {
  try {
    return window.localStorage.getItem(PAGE_KEY_ITEM) ?? keptKey ?? '';
  } catch {
    return keptKey ?? '';
  }
}

export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, message: string, status: number) {
    super(message);
    this.code = code;
    this.status = status;
  }
}

async function call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`/api${path}`, {
      method,
      credentials: 'same-origin',
      headers: {
        'x-svc-page-key': pageKey(),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(
      'daemon_unavailable',
      'The daemon does not answer. Start it with `svc start -b`, then open the link `svc dashboard` prints.',
      0,
    );
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const e = errorOfBody(parsed, res.status, 'The daemon');
    throw new ApiError(e.code, e.message, res.status);
  }
  return parsed as T;
}

const enc = encodeURIComponent;

/** The relay's answers the page shows, as the relay declares them. */
export type { Contact, OwnProfile, RelationEntry } from '@svc/shared';

export const api = {
  status: () => call<DaemonStatus>('GET', '/v1/status'),
  agents: () => call<LocalAgent[]>('GET', '/v1/agents'),
  deployments: () => call<DeploymentInfo[]>('GET', '/v1/deployments'),
  keys: (agent: string) => call<KeyStatus>('GET', `/v1/agents/${enc(agent)}/keys`),
  acceptKey: (agent: string, peer: string) =>
    call<PeerKey>('POST', `/v1/agents/${enc(agent)}/peers/${enc(peer)}/accept-key`, {}),
  inbox: (agent: string) => call<ArchivedMessage[]>('GET', `/v1/agents/${enc(agent)}/inbox?source=local`),
  conversations: (agent: string) => call<ConversationSummary[]>('GET', `/v1/agents/${enc(agent)}/conversations`),
  conversation: (agent: string, id: string) =>
    call<ArchivedMessage[]>('GET', `/v1/agents/${enc(agent)}/conversations/${enc(id)}/messages?last=200`),
  send: (agent: string, to: string, content: string) =>
    call<SentMessage>('POST', `/v1/agents/${enc(agent)}/send`, { to, content }),
  sendInConversation: (agent: string, conversationId: string, content: string) =>
    call<SentMessage>('POST', `/v1/agents/${enc(agent)}/send`, { conversation_id: conversationId, content }),
  reply: (agent: string, messageId: string, content: string) =>
    call<SentMessage>('POST', `/v1/agents/${enc(agent)}/reply`, { message_id: messageId, content }),
  ack: (agent: string, messageId: string) =>
    call<{ message_id: string; acked_at: string }>(
      'POST',
      `/v1/agents/${enc(agent)}/messages/${enc(messageId)}/ack`,
      {},
    ),
  sync: (agent: string) => call<{ fetched: number; archived: number }>('POST', `/v1/agents/${enc(agent)}/sync`, {}),
  search: (agent: string, q: string) =>
    call<ArchivedMessage[]>('GET', `/v1/agents/${enc(agent)}/search?q=${enc(q)}&limit=50`),
  // the agent on its relay: the daemon's named operations, as the CLI uses them
  profile: (agent: string) => call<OwnProfile>('GET', `/v1/agents/${enc(agent)}/profile`),
  contacts: (agent: string) =>
    call<{ contacts: Contact[] }>('GET', `/v1/agents/${enc(agent)}/contacts`).then((b) => b.contacts),
  blocked: (agent: string) =>
    call<{ blocked: RelationEntry[] }>('GET', `/v1/agents/${enc(agent)}/blocked`).then((b) => b.blocked),
  muted: (agent: string) =>
    call<{ muted: RelationEntry[] }>('GET', `/v1/agents/${enc(agent)}/muted`).then((b) => b.muted),
  relate: (agent: string, peer: string, relation: 'block' | 'mute') =>
    call<RelationEntry>('POST', `/v1/agents/${enc(agent)}/peers/${enc(peer)}/${relation}`, {}),
  unrelate: (agent: string, peer: string, relation: 'block' | 'mute') =>
    call<unknown>('DELETE', `/v1/agents/${enc(agent)}/peers/${enc(peer)}/${relation}`),
};
