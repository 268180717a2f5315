/** The local agents: relay connection, presence, deployment and key fingerprints. */
import { api, type DaemonStatus, type LocalAgent, type OwnProfile } from '../api.js';
import { Dot, Empty, Fingerprint, Loaded, Time, ViewHeader } from '../Components.js';
import { useShell } from '../context.js';
import { useLoad } from '../hooks.js';

type Row = { agent: LocalAgent; session: string; profile: OwnProfile | null };

const SESSION_TONE: Record<string, 'ok' | 'warn' | 'bad'> = {
  connected: 'ok',
  connecting: 'warn',
  offline: 'bad',
  refused: 'bad',
};

/** An agent out of service whose agent.json cannot be read: status knows its name and why, nothing else. */
type Unreadable = DaemonStatus['agents'][number];

async function loadRows(): Promise<{ status: DaemonStatus; rows: Row[]; unreadable: Unreadable[] }> {
  const [status, agents] = await Promise.all([api.status(), api.agents()]);
  const rows = await Promise.all(
    agents.map(async (agent) => ({
      agent,
      session: status.agents.find((s) => s.name === agent.name)?.session ?? 'offline',
      profile: await api.profile(agent.name).catch(() => null),
    })),
  );
  const unreadable = status.agents.filter((s) => s.unusable && !agents.some((a) => a.name === s.name));
  return { status, rows, unreadable };
}

export function AgentsView() {
  const shell = useShell();
  const [load, retry] = useLoad(loadRows, [shell.rev.sessions]);
  return (
    <section className="view">
      <ViewHeader title="Agents" />
      <Loaded load={load} what="agents" retry={retry}>
        {({ status, rows, unreadable }) => {
          // by name, whether the daemon can describe the agent or not
          const cards = [...rows, ...unreadable].sort((x, y) =>
            ('agent' in x ? x.agent.name : x.name).localeCompare('agent' in y ? y.agent.name : y.name),
          );
          return (
            <>
              <p className="view-lede">
                Daemon {status.version}, pid {status.pid}, vault {status.vault.kind}
                {status.vault.warning ? ` (${status.vault.warning})` : ''}.
              </p>
              {rows.length + unreadable.length === 0 ? (
                <Empty title="No agents on this machine">
                  Register one with <code>svc register --enrollment-grant CODE</code>.
                </Empty>
              ) : (
                <div className="cards">
                  {cards.map((card) =>
                    'agent' in card ? (
                      <AgentCard key={card.agent.name} row={card} current={card.agent.name === shell.agent} />
                    ) : (
                      <UnreadableCard key={card.name} agent={card} current={card.name === shell.agent} />
                    ),
                  )}
                </div>
              )}
            </>
          );
        }}
      </Loaded>
    </section>
  );
}

function AgentCard({ row, current }: { row: Row; current: boolean }) {
  const { agent, session, profile } = row;
  return (
    <article className={`card${current ? ' current' : ''}`} data-testid={`agent-${agent.name}`}>
      <header className="card-header">
        <h3>{profile?.display_name || agent.name}</h3>
        <Dot tone={SESSION_TONE[session] ?? 'bad'} label={session} />
      </header>
      <dl className="facts">
        <dt>Agent number</dt>
        <dd className="mono">{agent.agent_number}</dd>
        <dt>Presence</dt>
        <dd>
          {profile ? (
            <>
              {profile.presence}
              {profile.last_seen_at ? (
                <span className="muted">
                  {' '}
                  · seen <Time iso={profile.last_seen_at} />
                </span>
              ) : null}
            </>
          ) : (
            <span className="muted">
              {session === 'unusable' ? 'unknown (out of service)' : 'unknown (relay not reachable)'}
            </span>
          )}
        </dd>
        <dt>Deployment</dt>
        <dd>
          {agent.deployment} <span className="muted small mono">{agent.tenant_id}</span>
        </dd>
        <dt>Relay</dt>
        <dd className="mono small wrap">{agent.api_url}</dd>
        <dt>Signing key</dt>
        <dd>
          <Fingerprint publicKey={agent.signing_public_key} />
        </dd>
        <dt>Encryption key</dt>
        <dd>
          <Fingerprint publicKey={agent.encryption_public_key} />
        </dd>
        <dt>Registered</dt>
        <dd>
          <Time iso={agent.registered_at} />
        </dd>
      </dl>
    </article>
  );
}

/** An agent out of service whose agent.json cannot be read: its name and why, all the daemon knows. */
function UnreadableCard({ agent, current }: { agent: Unreadable; current: boolean }) {
  return (
    <article className={`card${current ? ' current' : ''}`} data-testid={`agent-${agent.name}`}>
      <header className="card-header">
        <h3>{agent.name}</h3>
        <Dot tone="bad" label={agent.session} />
      </header>
      <p className="muted small wrap">{agent.unusable?.message}</p>
    </article>
  );
}
