/** The conversation list, and one conversation as a thread with a reply box. */
import { useEffect, useRef } from 'react';
import { api, type ConversationSummary } from '../api.js';
import { Badge, Empty, Loaded, Time, ViewHeader } from '../Components.js';
import { previewText } from '../content.js';
import { useShell } from '../context.js';
import { useLoad } from '../hooks.js';
import { Composer, MessageItem } from '../Message.js';

export function ConversationsView({ id }: { id: string | undefined }) {
  const shell = useShell();
  const [list, retry] = useLoad(() => api.conversations(shell.agent), [shell.agent, shell.rev.messages]);
  return (
    <section className="view split">
      <div className="split-list">
        <ViewHeader title="Conversations" />
        <Loaded load={list} what="conversations" retry={retry}>
          {(items) =>
            items.length === 0 ? (
              <Empty title="No conversations yet">
                Write to another agent with <kbd>c</kbd>, or wait for someone to write to you.
              </Empty>
            ) : (
              <ul className="conv-list">
                {items.map((c) => (
                  <li key={c.conversation_id}>
                    <button
                      type="button"
                      className={`conv-item${c.conversation_id === id ? ' active' : ''}`}
                      onClick={() => shell.go(`conversations/${c.conversation_id}`)}
                    >
                      <span className="conv-peer">
                        {c.conversation_type === 'direct' ? (
                          (c.peer ?? c.conversation_id)
                        ) : (
                          <>
                            <span className="conv-kind">{c.conversation_type}</span> {c.name ?? c.conversation_id}
                          </>
                        )}
                      </span>
                      {c.unread > 0 ? <Badge tone="warn">{c.unread} new</Badge> : null}
                      <span className="conv-time">
                        <Time iso={c.last_message_at} />
                      </span>
                      <span className="conv-preview">
                        {c.last_message?.direction === 'outbound' ? 'You: ' : ''}
                        {c.last_message ? previewText(c.last_message).slice(0, 200) : ''}
                      </span>
                    </button>
                  </li>
                ))}
              </ul>
            )
          }
        </Loaded>
      </div>
      <div className="split-detail">
        {id ? (
          <Thread
            id={id}
            summary={list.state === 'ready' ? list.data.find((c) => c.conversation_id === id) : undefined}
          />
        ) : (
          <Empty title="Choose a conversation">Pick one on the left to read it and reply.</Empty>
        )}
      </div>
    </section>
  );
}

function Thread({ id, summary }: { id: string; summary: ConversationSummary | undefined }) {
  const shell = useShell();
  const [load, retry] = useLoad(() => api.conversation(shell.agent, id), [shell.agent, id, shell.rev.messages]);
  const scroller = useRef<HTMLDivElement>(null);
  const bottom = useRef<HTMLDivElement>(null);
  const count = load.state === 'ready' ? load.data.length : 0;
  useEffect(() => {
    if (count === 0 || !scroller.current) return;
    // the newest message, in the thread's own scroll area: the page and the list stay put
    scroller.current.scrollTop = scroller.current.scrollHeight;
    // one column (a narrow window): the thread is below the list, bring its end into view
    bottom.current?.scrollIntoView?.({ block: 'nearest' });
  }, [count]);
  const messages = load.state === 'ready' ? load.data : [];
  const lastInbound = [...messages].reverse().find((m) => m.direction === 'inbound');
  const peer = messages[0] ? (messages[0].direction === 'inbound' ? messages[0].from : messages[0].to) : undefined;
  // a group or broadcast is named by its roster, and written to as a whole
  const group = messages[0] && messages[0].conversation_type !== 'direct';
  const title = group ? (summary?.name ?? messages[0]!.conversation_id) : peer ? `With ${peer}` : 'Conversation';
  const unacked = messages.filter((m) => m.direction === 'inbound' && m.acked_at === null);
  return (
    <div className="thread">
      <ViewHeader title={title}>
        {unacked.length > 0 ? (
          <button
            type="button"
            onClick={async () => {
              for (const m of unacked) await api.ack(shell.agent, m.message_id);
              shell.toast(`Acknowledged ${unacked.length}.`);
              shell.bump('messages');
            }}
          >
            Acknowledge all ({unacked.length})
          </button>
        ) : null}
      </ViewHeader>
      <Loaded load={load} what="the conversation" retry={retry}>
        {() =>
          messages.length === 0 ? (
            <Empty title="No messages here yet" />
          ) : (
            <div className="thread-messages" data-testid="thread" ref={scroller}>
              {messages.map((m) => (
                <MessageItem key={m.message_id} m={m} conversationName={group ? title : undefined} />
              ))}
            </div>
          )
        }
      </Loaded>
      {peer && summary?.me?.role !== 'observer' && summary?.me?.active !== false ? (
        <Composer
          label={`Message ${group ? title : peer}`}
          onSend={async (text) => {
            if (group) await api.sendInConversation(shell.agent, messages[0]!.conversation_id, text);
            else if (lastInbound) await api.reply(shell.agent, lastInbound.message_id, text);
            else await api.send(shell.agent, peer, text);
            shell.toast(`Sent to ${group ? title : peer}.`);
            shell.bump('messages');
          }}
        />
      ) : null}
      <div className="thread-end" ref={bottom} />
    </div>
  );
}
