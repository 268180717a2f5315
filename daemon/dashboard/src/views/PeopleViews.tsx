/** Contacts, and the blocked and muted lists (kept by the relay, read through the daemon). */
import { useState } from 'react';
import { api, type RelationEntry } from '../api.js';
import { Empty, Loaded, Time, ViewHeader } from '../Components.js';
import { useShell } from '../context.js';
import { useLoad } from '../hooks.js';

export function ContactsView() {
  const shell = useShell();
  const [load, retry] = useLoad(() => api.contacts(shell.agent), [shell.agent]);
  return (
    <section className="view">
      <ViewHeader title="Contacts" />
      <Loaded load={load} what="contacts" retry={retry}>
        {(contacts) =>
          contacts.length === 0 ? (
            <Empty title="No contacts yet">
              Add one with <code>svc contacts add AGENT --alias NAME</code>; they appear here.
            </Empty>
          ) : (
            <table className="table">
              <thead>
                <tr>
                  <th>Agent</th>
                  <th>Alias</th>
                  <th>Notes</th>
                  <th>Added</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {contacts.map((c) => (
                  <tr key={c.agent_number}>
                    <td>
                      <strong>{c.display_name ?? c.agent_number}</strong>
                      <div className="muted small mono">{c.agent_number}</div>
                    </td>
                    <td>{c.alias ?? <span className="muted">—</span>}</td>
                    <td>{c.notes ? <div className="notes">{c.notes}</div> : <span className="muted">—</span>}</td>
                    <td>
                      <Time iso={c.added_at} />
                    </td>
                    <td className="actions">
                      <button type="button" onClick={() => shell.go(`conversations/${c.agent_number}`)}>
                        Open
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
    </section>
  );
}

function RelationList({ relation }: { relation: 'block' | 'mute' }) {
  const shell = useShell();
  const [load, retry] = useLoad(
    () => (relation === 'block' ? api.blocked(shell.agent) : api.muted(shell.agent)),
    [shell.agent],
  );
  const word = relation === 'block' ? 'Blocked' : 'Muted';
  const undo = async (e: RelationEntry) => {
    try {
      await api.unrelate(shell.agent, e.agent_number, relation);
      shell.toast(`${relation === 'block' ? 'Unblocked' : 'Unmuted'} ${e.agent_number}.`);
      retry();
    } catch (err) {
      shell.toast((err as Error).message, 'bad');
    }
  };
  return (
    <div className="panel">
      <h3 className="section-title">{word}</h3>
      <p className="muted small">
        {relation === 'block'
          ? 'The relay refuses their messages to you.'
          : 'Their messages arrive and are archived, without notification.'}
      </p>
      <Loaded load={load} what={`${word.toLowerCase()} agents`} retry={retry}>
        {(entries) =>
          entries.length === 0 ? (
            <Empty title={`Nobody is ${word.toLowerCase()}`} />
          ) : (
            <ul className="plain-list">
              {entries.map((e) => (
                <li key={e.agent_number} className="row spread">
                  <span>
                    <strong>{e.display_name ?? e.agent_number}</strong>{' '}
                    <span className="muted small">
                      since <Time iso={e.since} />
                    </span>
                  </span>
                  <button type="button" onClick={() => void undo(e)}>
                    {relation === 'block' ? 'Unblock' : 'Unmute'}
                  </button>
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <AddRelation relation={relation} onDone={retry} />
    </div>
  );
}

function AddRelation({ relation, onDone }: { relation: 'block' | 'mute'; onDone: () => void }) {
  const shell = useShell();
  const [who, setWho] = useState('');
  return (
    <form
      className="row"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!who.trim()) return;
        try {
          await api.relate(shell.agent, who.trim(), relation);
          shell.toast(`${relation === 'block' ? 'Blocked' : 'Muted'} ${who.trim()}.`);
          setWho('');
          onDone();
        } catch (err) {
          shell.toast((err as Error).message, 'bad');
        }
      }}
    >
      <label className="sr-only" htmlFor={`add-${relation}`}>
        Agent number to {relation}
      </label>
      <input id={`add-${relation}`} placeholder="agent number" value={who} onChange={(e) => setWho(e.target.value)} />
      <button type="submit" disabled={!who.trim()}>
        {relation === 'block' ? 'Block' : 'Mute'}
      </button>
    </form>
  );
}

export function RelationsView() {
  return (
    <section className="view">
      <ViewHeader title="Blocked and muted" />
      <div className="two-col">
        <RelationList relation="block" />
        <RelationList relation="mute" />
      </div>
    </section>
  );
}
