/**
 * What the dashboard shows, loaded from the daemon through its client only. `Source` is
 * the part of `DaemonClient` the dashboard reads (a DaemonClient is one); nothing here
 * writes: the dashboard is read-only. Without Ink or React (`@svc/tui/model`): `svc tui`
 * asks for the first snapshot before it loads them.
 */
import type {
  ArchivedMessage,
  ConversationSummary,
  DaemonApi,
  DaemonStatus,
  DeploymentInfo,
  TrustStatus,
} from '@svc/daemon/client';

export type Source = { readonly home: string } & Pick<
  DaemonApi,
  'status' | 'listDeployments' | 'inbox' | 'conversations' | 'read' | 'search' | 'trust' | 'profile' | 'events'
>;

/** The agent's own relay profile, as far as the dashboard needs it. */
export interface Profile {
  presence: string | null;
  status_text: string | null;
  endpoint_url: string | null;
  webhook_secret_set: boolean;
}

export interface AgentView {
  status: DaemonStatus;
  deployments: DeploymentInfo[];
  /** the agent shown (local name); undefined when there is none */
  agent?: string;
  /** the agent asked for (--as, SVC_AGENT) when no local agent has that name or number */
  missing?: string;
  inbox: ArchivedMessage[];
  conversations: ConversationSummary[];
  trust?: TrustStatus;
  /** undefined: not loaded (relay unreachable, or the agent is out of service) */
  profile?: Profile;
}

export type Snapshot =
  | { daemon: 'connecting' }
  | { daemon: 'down'; home: string; reason: string }
  | ({ daemon: 'up' } & AgentView);

const daemonDown = (err: unknown) => (err as { code?: string } | undefined)?.code === 'daemon_unavailable';

/** Everything about one agent (or the first), tolerating a relay that does not answer. */
export async function loadSnapshot(source: Source, wanted?: string, withProfile = true): Promise<Snapshot> {
  let status: DaemonStatus;
  // asked together: one round trip to the daemon before the agent's own calls, not two
  const deploymentsAsked = source.listDeployments();
  deploymentsAsked.catch(() => undefined); // a daemon that is down fails both: reported once, below
  try {
    status = await source.status();
  } catch (err) {
    if (daemonDown(err)) return { daemon: 'down', home: source.home, reason: (err as Error).message };
    throw err;
  }
  const deployments = await deploymentsAsked;
  // --as takes a name or a number, as every command does; one that is not here is said, not dropped
  const found =
    wanted === undefined ? undefined : status.agents.find((a) => a.name === wanted || a.agent_number === wanted);
  const missing = wanted !== undefined && !found ? { missing: wanted } : {};
  const agent = found?.name ?? status.agents[0]?.name;
  if (agent === undefined) return { daemon: 'up', status, deployments, inbox: [], conversations: [], ...missing };
  // out of service (its archive or config cannot be used): every call for it would fail;
  // the status says why, and the dashboard shows that
  if (status.agents.find((a) => a.name === agent)?.session === 'unusable') {
    return { daemon: 'up', status, deployments, agent, ...missing, inbox: [], conversations: [] };
  }
  const [inbox, conversations, trust, profile] = await Promise.all([
    source.inbox(agent, { source: 'local', verified: true }),
    source.conversations(agent, { limit: 100, verified: true }),
    source.trust(agent),
    withProfile ? loadProfile(source, agent) : Promise.resolve(undefined),
  ]);
  return {
    daemon: 'up',
    status,
    deployments,
    agent,
    ...missing,
    inbox,
    conversations,
    trust,
    ...(profile ? { profile } : {}),
  };
}

/** The agent's relay profile; undefined when the relay does not answer. */
export async function loadProfile(source: Source, agent: string): Promise<Profile | undefined> {
  try {
    const p = await source.profile(agent);
    return {
      presence: p.presence ?? null,
      status_text: p.status_text ?? null,
      endpoint_url: p.endpoint_url ?? null,
      webhook_secret_set: p.webhook_secret_set === true,
    };
  } catch {
    return undefined;
  }
}
