import { attachmentDescriptor } from '@svc/test-harness/fixtures';
import { describe, expect, it } from 'vitest';
import { conversationLabel, conversationTitle, messageText } from './message-text.js';

const m = (content_type: string, content: string) => ({ content_type, content, from: 'carol' });

describe('what a person reads of a message', () => {
  it('roster changes as sentences, whatever a peer wrote in them', () => {
    expect(messageText(m('control', '{"op":"create","kind":"group","name":"team"}'))).toBe(
      'carol created the group “team”',
    );
    expect(messageText(m('control', '{"control":{"op":"create","kind":"broadcast"}}'))).toBe(
      'carol created the broadcast',
    );
    expect(messageText(m('control', '{"op":"invite","number":"dave","role":"observer"}'))).toBe(
      'carol added dave as an observer',
    );
    expect(messageText(m('control', '{"op":"leave"}'))).toBe('carol left');
    expect(messageText(m('control', 'not json'))).toBe('carol changed the members');
    expect(messageText(m('control', '[1,2]'))).toBe('carol changed the members');
  });

  it('an attachment by its name, size and type, never its key; text as it is', () => {
    const descriptor = attachmentDescriptor({ caption: 'the plan' });
    const shown = messageText(m('media', JSON.stringify(descriptor)));
    expect(shown).toBe('[file] plan.pdf (1204 bytes, application/pdf): the plan');
    expect(shown).not.toContain(descriptor.key);
    // not a descriptor: shown as the peer wrote it
    expect(messageText(m('media', 'a photo'))).toBe('a photo');
    expect(messageText(m('text', '{"op":"leave"}'))).toBe('{"op":"leave"}');
  });
});

describe('what a conversation is called', () => {
  it('a direct one by its peer, a group or broadcast by its name, else its id', () => {
    expect(conversationTitle({ conversation_id: 'dm:a:b', conversation_type: 'direct', peer: 'alice' })).toBe('alice');
    expect(conversationTitle({ conversation_id: 'dm:a:b', conversation_type: 'direct', peer: null })).toBe('dm:a:b');
    // a group's row may carry a member where a direct one has its peer: the name wins
    expect(
      conversationTitle({ conversation_id: 'grp:a:x', conversation_type: 'group', name: 'team', peer: 'alice' }),
    ).toBe('team');
    expect(conversationTitle({ conversation_id: 'bc:a:y', conversation_type: 'broadcast' })).toBe('bc:a:y');
  });

  it('as a phrase, for MCP and (capitalised) the TUI', () => {
    expect(conversationLabel({ conversation_id: 'dm:a:b', conversation_type: 'direct', peer: 'alice' })).toBe(
      'conversation with alice',
    );
    expect(conversationLabel({ conversation_id: 'grp:a:x', conversation_type: 'group', name: 'team' })).toBe(
      'group team',
    );
    expect(conversationLabel({ conversation_id: 'bc:a:y', conversation_type: 'broadcast', name: 'news' })).toBe(
      'broadcast news',
    );
  });
});
