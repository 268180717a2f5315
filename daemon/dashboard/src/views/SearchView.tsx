/** Full-text search over this agent's archive (on this machine; the relay is not asked). */
import { useEffect, useRef, useState } from 'react';
import { type ArchivedMessage, api } from '../api.js';
import { Empty, Failure, Loading, ViewHeader } from '../Components.js';
import { useShell } from '../context.js';
import { matchCount } from '../format.js';
import { useConversationNames } from '../hooks.js';
import { MessageItem } from '../Message.js';

type Result =
  | { state: 'idle' }
  | { state: 'loading' }
  | { state: 'done'; q: string; items: ArchivedMessage[] }
  | { state: 'error'; code: string; message: string };

export function SearchView() {
  const shell = useShell();
  const [q, setQ] = useState('');
  const [result, setResult] = useState<Result>({ state: 'idle' });
  const names = useConversationNames();
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  const run = async () => {
    const text = q.trim();
    if (!text) return;
    setResult({ state: 'loading' });
    try {
      setResult({ state: 'done', q: text, items: await api.search(shell.agent, text) });
    } catch (e) {
      const err = e as { code?: string; message: string };
      setResult({ state: 'error', code: err.code ?? 'error', message: err.message });
    }
  };
  return (
    <section className="view">
      <ViewHeader title="Search" />
      <search>
        <form
          className="search-bar"
          onSubmit={(e) => {
            e.preventDefault();
            void run();
          }}
        >
          <label className="sr-only" htmlFor="search-q">
            Search messages
          </label>
          <input
            id="search-q"
            ref={input}
            type="search"
            value={q}
            placeholder="Words to find in your messages"
            onChange={(e) => setQ(e.target.value)}
          />
          <button type="submit" className="primary" disabled={!q.trim()}>
            Search
          </button>
        </form>
      </search>
      {result.state === 'idle' ? (
        <Empty title="Search your archive">
          Every word of every message this agent sent or received, searched on this machine.
        </Empty>
      ) : result.state === 'loading' ? (
        <Loading what="results" />
      ) : result.state === 'error' ? (
        <Failure code={result.code} message={result.message} retry={run} />
      ) : result.items.length === 0 ? (
        <Empty title={`Nothing matches “${result.q}”`}>Try fewer or other words.</Empty>
      ) : (
        <div className="message-list" data-testid="search-results">
          <p className="muted small">
            {matchCount(result.items.length)} “{result.q}”
          </p>
          {result.items.map((m) => (
            <MessageItem key={m.message_id} m={m} showConversation conversationName={names.get(m.conversation_id)} />
          ))}
        </div>
      )}
    </section>
  );
}
