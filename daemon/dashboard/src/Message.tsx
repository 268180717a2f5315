/** One message: sender, time, state and body; the body is untrusted text, rendered as text. */
import { useState } from 'react';
import { type ArchivedMessage, api } from './api.js';
import { Badge, Time } from './Components.js';
import { attachmentOf, byteSize, controlText } from './content.js';
import { useShell } from './context.js';

const STATE_TONE: Record<string, 'ok' | 'warn' | 'bad' | 'idle'> = {
  delivered: 'ok',
  sent: 'idle',
  queued: 'warn',
  failed: 'bad',
  received: 'warn',
  read: 'idle',
};
const STATE_LABEL: Record<string, string> = {
  delivered: 'delivered',
  sent: 'sent',
  queued: 'queued',
  failed: 'failed',
  received: 'new',
  read: 'read',
};

export function MessageItem({
  m,
  selected = false,
  showConversation = false,
  conversationName,
  onReplied,
}: {
  m: ArchivedMessage;
  selected?: boolean;
  showConversation?: boolean;
  /** the group's or broadcast's name as the page shows it (else its id) */
  conversationName?: string | undefined;
  onReplied?: () => void;
}) {
  const shell = useShell();
  const [replying, setReplying] = useState(false);
  const [busy, setBusy] = useState(false);
  const ack = async () => {
    setBusy(true);
    try {
      await api.ack(shell.agent, m.message_id);
      shell.toast('Acknowledged.');
      shell.bump('messages');
    } catch (e) {
      shell.toast((e as Error).message, 'bad');
    } finally {
      setBusy(false);
    }
  };
  const inbound = m.direction === 'inbound';
  // a group's or broadcast's message went to all of it, and a reply to it does too
  const group = m.conversation_type === 'direct' ? undefined : (conversationName ?? m.conversation_id);
  return (
    <article
      className={`message ${inbound ? 'inbound' : 'outbound'}${selected ? ' selected' : ''}`}
      data-message-id={m.message_id}
      aria-current={selected ? 'true' : undefined}
    >
      <header className="message-meta">
        <span className="message-who">
          {inbound ? m.from : `to ${group ?? m.to}`}
          {inbound && group && showConversation ? <span className="message-where"> in {group}</span> : null}
        </span>
        <Time iso={m.sent_at} />
        <Badge tone={STATE_TONE[m.state] ?? 'idle'}>{STATE_LABEL[m.state] ?? m.state}</Badge>
        {m.muted ? <Badge>muted</Badge> : null}
        {showConversation ? (
          <button type="button" className="link" onClick={() => shell.go(`conversations/${m.conversation_id}`)}>
            open conversation
          </button>
        ) : null}
      </header>
      <MessageContent m={m} agent={shell.agent} />
      {m.send_error ? <p className="message-error">The relay refused it: {m.send_error}</p> : null}
      {inbound ? (
        <footer className="message-actions">
          {m.content_type === 'control' ? null : (
            <button type="button" onClick={() => setReplying((r) => !r)}>
              Reply
            </button>
          )}
          {m.acked_at === null ? (
            <button type="button" onClick={ack} disabled={busy}>
              Acknowledge
            </button>
          ) : null}
        </footer>
      ) : null}
      {replying ? (
        <Composer
          label={group ? `Reply in ${group}` : `Reply to ${m.from}`}
          onSend={async (text) => {
            await api.reply(shell.agent, m.message_id, text);
            setReplying(false);
            shell.toast(`Reply sent to ${group ?? m.from}.`);
            shell.bump('messages');
            onReplied?.();
          }}
          autoFocus
        />
      ) : null}
    </article>
  );
}

/**
 * The body as text; an attachment by name, size and type with how to save it (its
 * descriptor holds the file's key: never on screen); a roster change as a sentence.
 */
function MessageContent({ m, agent }: { m: ArchivedMessage; agent: string }) {
  const file = attachmentOf(m);
  if (file) {
    return (
      <div className="message-body attachment" data-testid="attachment">
        <div>
          <Badge>file</Badge> <strong className="attachment-name">{file.name}</strong>{' '}
          <span className="muted small">
            {byteSize(file.size)} · {file.media_type}
          </span>
        </div>
        {file.caption ? <div>{file.caption}</div> : null}
        <div className="muted small">
          The dashboard does not save files. Save it with{' '}
          <code>
            svc read --as {agent} {m.conversation_id} --save DIR
          </code>
          .
        </div>
      </div>
    );
  }
  const change = controlText(m);
  if (change) return <div className="message-body muted">{change}</div>;
  return <div className="message-body">{m.content}</div>;
}

/** A text box with Send; Ctrl+Enter sends. */
export function Composer({
  label,
  onSend,
  autoFocus = false,
  placeholder = 'Write a message…',
}: {
  label: string;
  onSend: (text: string) => Promise<void>;
  autoFocus?: boolean;
  placeholder?: string;
}) {
  const shell = useShell();
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const send = async () => {
    if (!text.trim() || busy) return;
    setBusy(true);
    try {
      await onSend(text);
      setText('');
    } catch (e) {
      shell.toast((e as Error).message, 'bad');
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <label className="sr-only" htmlFor={`composer-${label}`}>
        {label}
      </label>
      <textarea
        id={`composer-${label}`}
        aria-label={label}
        value={text}
        placeholder={placeholder}
        rows={3}
        // biome-ignore lint/a11y/noAutofocus: the reply box opens because the owner asked to type
        autoFocus={autoFocus}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            void send();
          }
        }}
      />
      <div className="composer-bar">
        <span className="muted small">
          <kbd>Ctrl</kbd>+<kbd>Enter</kbd> to send
        </span>
        <button type="submit" className="primary" disabled={busy || !text.trim()}>
          {busy ? 'Sending…' : 'Send'}
        </button>
      </div>
    </form>
  );
}
