import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toBase64url } from '@svc/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { Archive } from '../archive/archive.js';
import { keyFingerprint } from '../client/fingerprint.js';
import { listConversations, unreadCount } from './conversations.js';
import { heldMessages, recordSenderKey, withVerification } from './trust.js';

let archive: Archive | undefined;
afterEach(() => archive?.close());
const open = () => {
  archive = Archive.open(join(mkdtempSync(join(tmpdir(), 'svc-trust-')), 'archive.db'));
  return archive;
};

const key = (byte: number) => toBase64url(new Uint8Array(32).fill(byte));
const K1 = key(1);
const K2 = key(2);

const inbound = (id: string, from = 'alice') => ({
  message_id: id,
  conversation_id: `dm:${from}:bob`,
  conversation_type: 'direct' as const,
  direction: 'inbound' as const,
  from,
  to: 'bob',
  content_type: 'text',
  content: `text of ${id}`,
  sent_at: `2026-01-01T00:00:0${id.length % 10}.000Z`,
  received_at: '2026-01-01T00:00:10.000Z',
  acked_at: null,
  delivered_at: null,
});

const pin = (a: Archive, number: string, signing: string) =>
  a.pinPeer({
    agent_number: number,
    agent_id: null,
    signing_public_key: signing,
    encryption_public_key: signing,
    key_version: 1,
  });

describe('message verification', () => {
  it('fingerprints are 8 groups of 4 hex digits of the key hash, distinct per key', () => {
    expect(keyFingerprint(K1)).toMatch(/^([0-9a-f]{4}:){7}[0-9a-f]{4}$/);
    expect(keyFingerprint(K1)).not.toBe(keyFingerprint(K2));
    expect(keyFingerprint(K1)).toBe(keyFingerprint(K1));
  });

  it('pinned: signed by the key pinned now, and the relay serves no other', () => {
    const a = open();
    pin(a, 'alice', K1);
    a.insertMessage(inbound('m1'));
    recordSenderKey(a, 'm1', K1);
    const [m] = withVerification(a, a.inbox());
    expect(m!.verified).toEqual({ sender: 'alice', key_fingerprint: keyFingerprint(K1), trust: 'pinned' });
  });

  it('changed: the relay serves a key nobody accepted; the message is never shown as pinned', () => {
    const a = open();
    pin(a, 'alice', K1);
    a.insertMessage(inbound('m1'));
    recordSenderKey(a, 'm1', K1);
    a.markPeerChanged('alice', K2, K2);
    const [m] = withVerification(a, a.inbox());
    expect(m!.verified).toEqual({
      sender: 'alice',
      key_fingerprint: keyFingerprint(K1),
      trust: 'changed',
      changed_key_fingerprint: keyFingerprint(K2),
    });
  });

  it('changed: signed by a key since replaced (the new one accepted later)', () => {
    const a = open();
    pin(a, 'alice', K1);
    a.insertMessage(inbound('m1'));
    recordSenderKey(a, 'm1', K1);
    a.markPeerChanged('alice', K2, K2);
    a.acceptPeerChange('alice', { signing_public_key: K2, encryption_public_key: K2, version: 2 });
    a.insertMessage(inbound('m22'));
    recordSenderKey(a, 'm22', K2);
    const byId = new Map(withVerification(a, a.inbox()).map((m) => [m.message_id, m.verified]));
    expect(byId.get('m1')).toMatchObject({ key_fingerprint: keyFingerprint(K1), trust: 'changed' });
    expect(byId.get('m22')).toMatchObject({ key_fingerprint: keyFingerprint(K2), trust: 'pinned' });
  });

  it('a sender with no pin is not trusted; outbound messages carry no verification', () => {
    const a = open();
    a.insertMessage(inbound('m1', 'mallory'));
    a.insertMessage({ ...inbound('o1'), direction: 'outbound', from: 'bob', to: 'alice' });
    const all = withVerification(a, a.conversation('dm:mallory:bob').concat(a.conversation('dm:alice:bob')));
    expect(all.find((m) => m.message_id === 'm1')!.verified).toEqual({
      sender: 'mallory',
      key_fingerprint: null,
      trust: 'changed',
    });
    expect(all.find((m) => m.message_id === 'o1')!.verified).toBeUndefined();
  });

  it('held envelopes are listed unopened with the changed key they are signed with', () => {
    const a = open();
    pin(a, 'alice', K1);
    a.markPeerChanged('alice', K2, K2);
    a.hold('h1', 'alice', '{}');
    expect(heldMessages(a)).toEqual([
      {
        message_id: 'h1',
        from: 'alice',
        held_at: expect.any(String),
        trust: 'held',
        key_fingerprint: keyFingerprint(K2),
      },
    ]);
  });
});

describe('conversation list', () => {
  it('most recent first, with unread inbound (unmuted, unacknowledged) and the last message', () => {
    const a = open();
    a.insertMessage(inbound('m1', 'alice'));
    a.insertMessage(inbound('m22', 'alice'));
    a.insertMessage({ ...inbound('m333', 'carol'), muted: true });
    a.ack('m1', '2026-01-01T00:01:00.000Z');
    // a group's messages come from several members: it has no peer (its name comes from its roster)
    a.insertMessage({
      ...inbound('g4444', 'dave'),
      conversation_id: 'grp:dave:x',
      conversation_type: 'group',
      acked_at: '2026-01-01T00:01:00.000Z',
    });
    const list = listConversations(a, 10);
    expect(list.map((c) => [c.conversation_id, c.peer, c.message_count, c.unread, c.last_message?.message_id])).toEqual(
      [
        ['grp:dave:x', null, 1, 0, 'g4444'],
        ['dm:carol:bob', 'carol', 1, 0, 'm333'],
        ['dm:alice:bob', 'alice', 2, 1, 'm22'],
      ],
    );
    expect(unreadCount(a)).toBe(1);
  });
});
