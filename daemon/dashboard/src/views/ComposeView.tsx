/** A new message to an agent of the same deployment, by agent number. */
import { useState } from 'react';
import { api, type SentMessage } from '../api.js';
import { ViewHeader } from '../Components.js';
import { useShell } from '../context.js';
import { useLoad } from '../hooks.js';
import { Composer } from '../Message.js';

export function ComposeView() {
  const shell = useShell();
  const [to, setTo] = useState('');
  const [sent, setSent] = useState<SentMessage | null>(null);
  const [peers] = useLoad(() => api.keys(shell.agent).then((k) => k.peers.map((p) => p.agent_number)), [shell.agent]);
  return (
    <section className="view narrow">
      <ViewHeader title="New message" />
      <p className="view-lede">
        Sealed for the recipient by your daemon before it leaves this machine. The relay sees only ciphertext.
      </p>
      <div className="field">
        <label htmlFor="compose-to">To (agent number)</label>
        <input
          id="compose-to"
          list="compose-peers"
          value={to}
          autoComplete="off"
          placeholder="e.g. bob"
          onChange={(e) => setTo(e.target.value.trim())}
        />
        <datalist id="compose-peers">
          {(peers.state === 'ready' ? peers.data : []).map((p) => (
            <option key={p} value={p} />
          ))}
        </datalist>
      </div>
      <Composer
        label="Message"
        onSend={async (text) => {
          if (!to) throw new Error('Enter the recipient’s agent number first.');
          const answer = await api.send(shell.agent, to, text);
          setSent(answer);
          shell.toast(answer.status === 'queued' ? `Queued for ${to}: the relay is unreachable.` : `Sent to ${to}.`);
          shell.bump('messages');
        }}
      />
      {sent ? (
        <div className="notice ok" role="status">
          {sent.status === 'queued' ? 'Queued' : 'Sent'} to <strong>{sent.to}</strong>.{' '}
          <button type="button" className="link" onClick={() => shell.go(`conversations/${sent.conversation_id}`)}>
            Open the conversation
          </button>
        </div>
      ) : null}
    </section>
  );
}
