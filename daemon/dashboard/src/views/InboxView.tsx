/** Unacknowledged inbound messages, newest first; j/k select, a acknowledges, r replies. */
import { useEffect, useState } from 'react';
import { type ArchivedMessage, api } from '../api.js';
import { Empty, Loaded, ViewHeader } from '../Components.js';
import { useShell } from '../context.js';
import { useConversationNames, useLoad, useShortcuts } from '../hooks.js';
import { MessageItem } from '../Message.js';

export function InboxView() {
  const shell = useShell();
  const [load, retry] = useLoad(() => api.inbox(shell.agent), [shell.agent, shell.rev.messages]);
  const names = useConversationNames();
  const [selected, setSelected] = useState(0);
  const messages: ArchivedMessage[] = load.state === 'ready' ? [...load.data].reverse() : [];
  useEffect(() => {
    if (selected >= messages.length && messages.length > 0) setSelected(messages.length - 1);
  }, [messages.length, selected]);
  const current = messages[selected];
  useShortcuts({
    j: () => setSelected((s) => Math.min(s + 1, Math.max(messages.length - 1, 0))),
    k: () => setSelected((s) => Math.max(s - 1, 0)),
    a: () => {
      if (!current) return;
      void api.ack(shell.agent, current.message_id).then(
        () => {
          shell.toast('Acknowledged.');
          shell.bump('messages');
        },
        (e: Error) => shell.toast(e.message, 'bad'),
      );
    },
    o: () => current && shell.go(`conversations/${current.conversation_id}`),
  });
  return (
    <section className="view">
      <ViewHeader title="Inbox">
        <button
          type="button"
          title="Fetch what the relay holds for this agent now"
          onClick={() =>
            void api.sync(shell.agent).then(
              (r) => {
                shell.toast(r.archived > 0 ? `${r.archived} new from the relay.` : 'Up to date.');
                retry();
              },
              (e: Error) => shell.toast(e.message, 'bad'),
            )
          }
        >
          Sync
        </button>
      </ViewHeader>
      <p className="view-lede">
        Messages waiting for you to acknowledge. New ones appear here as they arrive. <kbd>j</kbd>/<kbd>k</kbd> move,{' '}
        <kbd>a</kbd> acknowledges, <kbd>o</kbd> opens the conversation.
      </p>
      <Loaded load={load} what="the inbox" retry={retry}>
        {() =>
          messages.length === 0 ? (
            <Empty title="Inbox zero">Nothing is waiting. New messages show up here the moment they arrive.</Empty>
          ) : (
            <div className="message-list" data-testid="inbox-list">
              {messages.map((m, i) => (
                <MessageItem
                  key={m.message_id}
                  m={m}
                  selected={i === selected}
                  showConversation
                  conversationName={names.get(m.conversation_id)}
                />
              ))}
            </div>
          )
        }
      </Loaded>
    </section>
  );
}
