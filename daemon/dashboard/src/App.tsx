/** The shell: header with the agent switcher and live state, the view list, the warnings. */
import { type ReactNode, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { deregisterCommand } from '../../src/client/refused.js';
import { api, type DaemonEvent } from './api.js';
import { Badge, Dot, Empty, Failure, Kbd, Loading, ViewHeader } from './Components.js';
import { type Revisions, type Shell, ShellContext } from './context.js';
import { useEvents, useLoad, useRoute, useShortcuts } from './hooks.js';
import { AgentsView } from './views/AgentsView.js';
import { ComposeView } from './views/ComposeView.js';
import { ConversationsView } from './views/ConversationsView.js';
import { InboxView } from './views/InboxView.js';
import { KeysView } from './views/KeysView.js';
import { ContactsView, RelationsView } from './views/PeopleViews.js';
import { SearchView } from './views/SearchView.js';
import { DeploymentView, WebhookView } from './views/TrustViews.js';

const VIEWS: Array<{ id: string; label: string; key: string }> = [
  { id: 'inbox', label: 'Inbox', key: '1' },
  { id: 'conversations', label: 'Conversations', key: '2' },
  { id: 'compose', label: 'Compose', key: 'c' },
  { id: 'search', label: 'Search', key: '/' },
  { id: 'contacts', label: 'Contacts', key: '3' },
  { id: 'relations', label: 'Blocked & muted', key: '4' },
  { id: 'keys', label: 'Keys', key: '5' },
  { id: 'webhook', label: 'Webhook', key: '6' },
  { id: 'deployment', label: 'Deployment', key: '7' },
  { id: 'agents', label: 'Agents', key: '8' },
];

const STORED_AGENT = 'svc.dashboard.agent';

/** The tab's title says when the page needs the owner (signed out, no agents yet). */
function Title({ text }: { text: string }) {
  useEffect(() => {
    document.title = text;
  }, [text]);
  return null;
}

/** The daemon's reason (lower case, or a sentence with its own full stop) as a clause the page goes on from. */
const clause = (text: string) => text.charAt(0).toUpperCase() + text.slice(1).replace(/[.\s]+$/, '');

/**
 * Every agent of the machine by name: status knows them all, the agent list only those
 * whose agent.json the daemon can read (one that cannot is out of service, and shown so).
 */
const loadAgentNames = () => api.status().then((s) => s.agents.map((a) => a.name));

export function App() {
  const [agentsLoad, retryAgents] = useLoad(loadAgentNames, []);
  if (agentsLoad.state === 'loading') return <Frame>{<Loading what="your agents" />}</Frame>;
  if (agentsLoad.state === 'error') {
    if (agentsLoad.code === 'dashboard_session_required') {
      return (
        <Frame>
          <Title text="Sign in · svc dashboard" />
          <Empty title="Sign in from the terminal">
            This browser is not signed in to the dashboard. Run <code>svc dashboard</code> and open the link it prints;
            links work once, for ten minutes.
          </Empty>
        </Frame>
      );
    }
    return (
      <Frame>
        <Failure code={agentsLoad.code} message={agentsLoad.message} retry={retryAgents} />
      </Frame>
    );
  }
  const agents = agentsLoad.data;
  if (agents.length === 0) {
    return (
      <Frame>
        <Title text="No agents yet · svc dashboard" />
        <Empty title="No agents on this machine yet">
          Register one with <code>svc register --enrollment-grant CODE</code>, then reload this page.
        </Empty>
      </Frame>
    );
  }
  return <Dashboard agentNames={agents} />;
}

function Frame({ children }: { children: ReactNode }) {
  return (
    <div className="frame">
      <header className="topbar">
        <Brand />
      </header>
      <main className="frame-main">{children}</main>
    </div>
  );
}

function Brand() {
  return (
    <div className="brand">
      <img src="/assets/icon.svg" alt="" width="24" height="24" />
      <span>svc</span>
      <span className="muted">dashboard</span>
    </div>
  );
}

function Dashboard({ agentNames: initialNames }: { agentNames: string[] }) {
  const [agentNames, setAgentNames] = useState(initialNames);
  const stored = window.localStorage.getItem(STORED_AGENT);
  const [agent, setAgent] = useState(stored && agentNames.includes(stored) ? stored : agentNames[0]!);
  const [rev, setRev] = useState<Revisions>({ messages: 0, keys: 0, sessions: 0 });
  const [toasts, setToasts] = useState<Array<{ id: number; text: string; tone: 'ok' | 'bad' }>>([]);
  const [help, setHelp] = useState(false);
  const [route, go] = useRoute();
  const view = VIEWS.some((v) => v.id === route[0]) ? route[0]! : 'inbox';
  const nextToast = useRef(0);

  const bump = useCallback((what: keyof Revisions) => setRev((r) => ({ ...r, [what]: r[what] + 1 })), []);
  const toast = useCallback((text: string, tone: 'ok' | 'bad' = 'ok') => {
    const id = ++nextToast.current;
    setToasts((t) => [...t.slice(-2), { id, text, tone }]);
    setTimeout(() => setToasts((t) => t.filter((x) => x.id !== id)), tone === 'bad' ? 8000 : 3500);
  }, []);

  const link = useEvents((e: DaemonEvent) => {
    if (e.type === 'session') bump('sessions');
    // an agent registered since the page loaded joins the picker (its session starts); one
    // removed leaves it (its session stops)
    if (e.type === 'session' && (e.state === 'offline' || !agentNames.includes(e.agent))) {
      loadAgentNames().then(
        setAgentNames,
        () => undefined, // the picker keeps what it has; the next session event asks again
      );
    }
    if (e.agent !== agent) return;
    // `read`: acknowledged elsewhere (the CLI, MCP, another tab): the inbox shown is stale
    if (e.type === 'message' || e.type === 'receipt' || e.type === 'outbox' || e.type === 'read') bump('messages');
    if (e.type === 'peer_key_changed') bump('keys');
    if (e.type === 'message' && e.message.direction === 'inbound' && !e.message.muted) {
      toast(`New message from ${e.message.from}`);
    }
    if (e.type === 'rejected') toast(`A message from ${e.from} failed verification and was dropped.`, 'bad');
  });

  const [inbox] = useLoad(() => api.inbox(agent), [agent, rev.messages]);
  const [keys] = useLoad(() => api.keys(agent), [agent, rev.keys]);
  const [status] = useLoad(() => api.status(), [rev.sessions]);
  const unread = inbox.state === 'ready' ? inbox.data.length : 0;
  const changed = keys.state === 'ready' ? keys.data.peers.filter((p) => p.changed) : [];
  const mine = status.state === 'ready' ? status.data.agents.find((a) => a.name === agent) : undefined;
  const session = status.state === 'ready' ? (mine?.session ?? 'offline') : 'connecting';
  // no secret can be read: every agent is offline until the daemon restarts with the vault open
  const vaultLocked = status.state === 'ready' && status.data.vault.locked === true;

  useEffect(() => {
    document.title = unread > 0 ? `(${unread}) svc dashboard` : 'svc dashboard';
  }, [unread]);
  useEffect(() => window.localStorage.setItem(STORED_AGENT, agent), [agent]);
  // the agent shown was removed: show the first one left
  useEffect(() => {
    if (!agentNames.includes(agent) && agentNames[0] !== undefined) setAgent(agentNames[0]);
  }, [agentNames, agent]);
  // a toast belongs to the view it was raised on
  // biome-ignore lint/correctness/useExhaustiveDependencies: the route is the trigger
  useEffect(() => setToasts([]), [route[0]]);

  useShortcuts(
    Object.fromEntries([
      ['?', () => setHelp((h) => !h)],
      [
        'Escape',
        () => {
          setHelp(false);
          setToasts([]);
        },
      ],
      ...VIEWS.map((v) => [v.key, () => go(v.id)] as const),
    ]),
  );

  const shell: Shell = useMemo(() => ({ agent, rev, go, toast, bump }), [agent, rev, go, toast, bump]);
  // without the daemon nothing on the page is current, the relay's state least of all
  const tone = link === 'lost' ? 'warn' : session === 'connected' ? 'ok' : session === 'connecting' ? 'warn' : 'bad';

  return (
    <ShellContext.Provider value={shell}>
      <div className="app">
        <header className="topbar">
          <Brand />
          <div className="topbar-right">
            <label className="agent-pick">
              <span className="muted small">Agent</span>
              <select value={agent} onChange={(e) => setAgent(e.target.value)} aria-label="Agent">
                {agentNames.map((n) => (
                  <option key={n} value={n}>
                    {n}
                  </option>
                ))}
              </select>
            </label>
            <Dot
              tone={tone}
              label={link === 'lost' ? 'relay unknown' : session === 'unusable' ? 'out of service' : `relay ${session}`}
            />
            <Dot
              tone={link === 'live' ? 'ok' : link === 'connecting' ? 'warn' : 'bad'}
              label={link === 'live' ? 'live' : link === 'connecting' ? 'reconnecting' : 'daemon lost'}
            />
            <button type="button" className="icon" onClick={() => setHelp(true)} aria-label="Keyboard shortcuts">
              ?
            </button>
          </div>
        </header>
        <nav className="sidebar" aria-label="Views">
          {VIEWS.map((v) => (
            <a
              key={v.id}
              href={`#/${v.id}`}
              className={`nav-item${view === v.id ? ' active' : ''}`}
              aria-current={view === v.id ? 'page' : undefined}
            >
              <span>{v.label}</span>
              {v.id === 'inbox' && unread > 0 ? <Badge tone="warn">{unread}</Badge> : null}
              {v.id === 'keys' && changed.length > 0 ? <Badge tone="bad">{changed.length}</Badge> : null}
              <Kbd>{v.key}</Kbd>
            </a>
          ))}
        </nav>
        <main className="main">
          {link === 'lost' ? (
            <div className="banner" role="alert">
              <strong>The daemon does not answer.</strong> What this page shows may be out of date. Start the daemon
              with <code>svc start -b</code> (or run any svc command), then run <code>svc dashboard</code> and open the
              link it prints.
            </div>
          ) : null}
          {session === 'refused' ? (
            <div className="banner" role="alert">
              <strong>The relay refuses {agent}'s identity.</strong> It was probably revoked: nothing is sent or
              received for it. If this persists, remove it here (<code>{deregisterCommand(agent)}</code>) and register
              again with a new enrollment code from the operator.
            </div>
          ) : null}
          {session === 'unusable' ? (
            <div className="banner" role="alert">
              <strong>
                {agent} is out of service:{' '}
                {mine?.unusable?.error === 'config_invalid'
                  ? 'its configuration cannot be read'
                  : 'its archive cannot be used'}
                {mine?.unusable ? ` (${mine.unusable.error})` : ''}.
              </strong>{' '}
              {mine?.unusable?.message ?? mine?.session_error}
            </div>
          ) : null}
          {vaultLocked ? (
            <div className="banner" role="alert">
              <strong>No agent can sign in.</strong> {clause(status.data.vault.warning ?? 'the vault is locked')}.
            </div>
          ) : null}
          {!vaultLocked &&
          session !== 'connected' &&
          session !== 'refused' &&
          session !== 'unusable' &&
          mine?.session_error ? (
            <div className="banner" role="status">
              <strong>{agent} is not connected to its relay.</strong> {clause(mine.session_error)}; sending queues, and
              the daemon keeps trying.
            </div>
          ) : null}
          {changed.length > 0 && view !== 'keys' ? (
            <div className="banner" role="alert">
              <strong>
                {changed.length === 1
                  ? `The key of ${changed[0]!.agent_number} changed.`
                  : `${changed.length} peers changed their keys.`}
              </strong>{' '}
              Their messages are held until you check and accept.{' '}
              <button type="button" className="link" onClick={() => go('keys')}>
                Review keys
              </button>
            </div>
          ) : null}
          {session === 'unusable' && !AGENT_FREE_VIEWS.has(view) ? (
            <OutOfService agent={agent} label={VIEWS.find((v) => v.id === view)?.label ?? view} />
          ) : (
            <CurrentView view={view} arg={route[1]} />
          )}
        </main>
        <div className="toasts" aria-live="polite">
          {toasts.map((t) => (
            <div key={t.id} className={`toast ${t.tone}`}>
              {t.text}
            </div>
          ))}
        </div>
        {help ? <ShortcutHelp onClose={() => setHelp(false)} /> : null}
      </div>
    </ShellContext.Provider>
  );
}

/** Views that show the machine rather than the agent chosen: they work whatever its state. */
const AGENT_FREE_VIEWS: ReadonlySet<string> = new Set(['agents', 'deployment']);

/**
 * A view of an agent out of service: nothing of it can be read (the daemon answers every
 * call for it with the banner's reason), so the view says so once instead of failing.
 */
function OutOfService({ agent, label }: { agent: string; label: string }) {
  return (
    <section className="view">
      <ViewHeader title={label} />
      <Empty title={`Nothing of ${agent} to show`}>
        While it is out of service its messages, contacts and keys cannot be read; the banner above says why and what to
        do. The Agents and Deployment views still work.
      </Empty>
    </section>
  );
}

function CurrentView({ view, arg }: { view: string; arg: string | undefined }) {
  switch (view) {
    case 'conversations':
      return <ConversationsView id={arg} />;
    case 'compose':
      return <ComposeView />;
    case 'search':
      return <SearchView />;
    case 'contacts':
      return <ContactsView />;
    case 'relations':
      return <RelationsView />;
    case 'keys':
      return <KeysView />;
    case 'webhook':
      return <WebhookView />;
    case 'deployment':
      return <DeploymentView />;
    case 'agents':
      return <AgentsView />;
    default:
      return <InboxView />;
  }
}

function ShortcutHelp({ onClose }: { onClose: () => void }) {
  return (
    <div className="overlay">
      <div className="dialog" role="dialog" aria-modal="true" aria-labelledby="help-title">
        <h2 id="help-title">Keyboard shortcuts</h2>
        <dl className="shortcuts">
          {VIEWS.map((v) => (
            <div key={v.id}>
              <dt>
                <Kbd>{v.key}</Kbd>
              </dt>
              <dd>{v.label}</dd>
            </div>
          ))}
          <div>
            <dt>
              <Kbd>j</Kbd> <Kbd>k</Kbd>
            </dt>
            <dd>Next / previous message in the inbox</dd>
          </div>
          <div>
            <dt>
              <Kbd>a</Kbd>
            </dt>
            <dd>Acknowledge the selected message</dd>
          </div>
          <div>
            <dt>
              <Kbd>o</Kbd>
            </dt>
            <dd>Open its conversation</dd>
          </div>
          <div>
            <dt>
              <Kbd>Ctrl</Kbd>+<Kbd>Enter</Kbd>
            </dt>
            <dd>Send what you wrote</dd>
          </div>
          <div>
            <dt>
              <Kbd>?</Kbd>
            </dt>
            <dd>This help</dd>
          </div>
        </dl>
        <button type="button" className="primary" onClick={onClose}>
          Close
        </button>
      </div>
    </div>
  );
}
