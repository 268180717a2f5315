/**
 * Keys: this agent's own fingerprints and every pinned peer. A peer whose key changed is
 * shown first and loudly; accepting takes two clicks, because it decides whom you trust.
 */
import { useState } from 'react';
import { api, type PeerKey } from '../api.js';
import { Badge, Empty, Fingerprint, Loaded, Time, ViewHeader } from '../Components.js';
import { useShell } from '../context.js';
import { useLoad } from '../hooks.js';

export function KeysView() {
  const shell = useShell();
  const [load, retry] = useLoad(() => api.keys(shell.agent), [shell.agent, shell.rev.keys]);
  return (
    <section className="view">
      <ViewHeader title="Keys" />
      <Loaded load={load} what="keys" retry={retry}>
        {(k) => {
          const changed = k.peers.filter((p) => p.changed);
          return (
            <>
              {changed.map((p) => (
                <KeyWarning key={p.agent_number} peer={p} />
              ))}
              <h3 className="section-title">This agent</h3>
              <dl className="facts">
                <dt>Signing key</dt>
                <dd>
                  <Fingerprint publicKey={k.signing_public_key} />
                </dd>
                <dt>Encryption key</dt>
                <dd>
                  <Fingerprint publicKey={k.encryption_public_key} />{' '}
                  <span className="muted small">
                    rotation {k.rotation}
                    {k.relay_version !== null ? `, directory version ${k.relay_version}` : ''}
                  </span>
                </dd>
              </dl>
              <h3 className="section-title">Pinned peers</h3>
              {k.peers.length === 0 ? (
                <Empty title="No peers pinned yet">
                  A peer’s key is pinned the first time you exchange a message with it.
                </Empty>
              ) : (
                <table className="table">
                  <thead>
                    <tr>
                      <th>Agent</th>
                      <th>Signing key</th>
                      <th>Pinned</th>
                      <th>State</th>
                    </tr>
                  </thead>
                  <tbody>
                    {k.peers.map((p) => (
                      <tr key={p.agent_number}>
                        <td>{p.agent_number}</td>
                        <td>
                          <Fingerprint publicKey={p.signing_public_key} />
                        </td>
                        <td>
                          <Time iso={p.pinned_at} />
                        </td>
                        <td>{p.changed ? <Badge tone="bad">key changed</Badge> : <Badge tone="ok">pinned</Badge>}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </>
          );
        }}
      </Loaded>
    </section>
  );
}

export function KeyWarning({ peer }: { peer: PeerKey }) {
  const shell = useShell();
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  if (!peer.changed) return null;
  const accept = async () => {
    setBusy(true);
    try {
      await api.acceptKey(shell.agent, peer.agent_number);
      shell.toast(`Accepted the new key of ${peer.agent_number}.`);
      shell.bump('keys');
      shell.bump('messages');
    } catch (e) {
      shell.toast((e as Error).message, 'bad');
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="key-warning" role="alert" data-testid={`key-warning-${peer.agent_number}`}>
      <h3>The key of {peer.agent_number} changed</h3>
      <p>
        The relay now serves a different signing key for <strong>{peer.agent_number}</strong> (seen{' '}
        <Time iso={peer.changed.seen_at} />
        ). Its messages are held and nothing is sent to it until you accept. Compare the new fingerprint with{' '}
        {peer.agent_number}’s owner by another channel first.
      </p>
      <dl className="facts">
        <dt>Pinned</dt>
        <dd>
          <Fingerprint publicKey={peer.signing_public_key} />
        </dd>
        <dt>New</dt>
        <dd>
          <Fingerprint publicKey={peer.changed.signing_public_key} />
        </dd>
      </dl>
      {confirming ? (
        <div className="row">
          <button type="button" className="danger" onClick={accept} disabled={busy}>
            I compared it: trust the new key
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      ) : (
        <button type="button" className="danger" onClick={() => setConfirming(true)}>
          Accept new key…
        </button>
      )}
    </div>
  );
}
