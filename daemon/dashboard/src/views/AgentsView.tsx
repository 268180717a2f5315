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

async function loadRows(): Promise<{ status: DaemonStatus; rows: Row[] }> {
  const [status, agents] = await Promise.all([api.status(), api.agents()]);
  const rows = await Promise.all(
    agents.map(async (agent) => ({
      agent,
      session: status.agents.find((s) => s.name === agent.name)?.session ?? 'offline',
      profile: await api.profile(agent.name).catch(() => null),
    })),
  );
  return { status, rows };
}

export function AgentsView() {
  const shell = useShell();
  const [load, retry] = useLoad(loadRows, [shell.rev.sessions]);
  return (
    <section className="view">
      <ViewHeader title="Agents" />
      <Loaded load={load} what="agents" retry={retry}>
        {({ status, rows }) => (
          <>
            <p className="view-lede">
              Daemon {status.version}, pid {status.pid}, vault {status.vault.kind}
              {status.vault.warning ? ` (${status.vault.warning})` : ''}.
            </p>
            {rows.length === 0 ? (
              <Empty title="No agents on this machine">
                Register one with <code>svc register --enrollment-grant CODE</code>.
              </Empty>
            ) : (
              <div className="cards">
                {rows.map(({ agent, session, profile }) => (
                  <article
                    key={agent.name}
                    className={`card${agent.name === shell.agent ? ' current' : ''}`}
                    data-testid={`agent-${agent.name}`}
                  >
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
                          <span className="muted">unknown (relay not reachable)</span>
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
                ))}
              </div>
            )}
          </>
        )}
      </Loaded>
    </section>
  );
}
