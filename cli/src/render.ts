/** Human renderings of the daemon's answers shared by several command modules. */
import {
  type ArchivedMessage,
  addressee,
  type DaemonStatus,
  type LocalAgent,
  messageText,
  type SentMessage,
} from '@svc/daemon/client';
import { printable, truncated } from '@svc/shared';
import { keyValues, table, type Writer, warn } from './output.js';

const short = (text: string, max = 60) => truncated(text.replace(/\s+/g, ' ').trim(), max);

/** queued / sent / delivered / failed for sent messages; received / read for inbound, with /muted from a muted sender. */
export const stateText = (m: ArchivedMessage): string => `${m.state}${m.muted ? '/muted' : ''}`;

/** A span of numbers as `3` or `3-5`. */
const span = (from: number, to: number) => (from === to ? `${from}` : `${from}-${to}`);

/**
 * A group message's number and what its arrival showed: a gap before it (and which of it
 * is still missing), a late arrival, repeats. Empty for direct messages.
 */
export function sequenceText(m: ArchivedMessage): string {
  if (m.seq === undefined) return '';
  const marks: string[] = [];
  const q = m.sequence;
  if (q?.gap) {
    const missing = q.missing ?? [];
    marks.push(
      missing.length === 0
        ? `gap ${span(q.gap.from, q.gap.to)} filled`
        : `GAP: ${missing.length === 1 ? `#${missing[0]}` : `${missing.length} messages (#${missing.join(', #')})`} missing`,
    );
  }
  if (q?.late) marks.push('late (reordered)');
  if (q?.duplicates) marks.push(`repeated ${q.duplicates}x`);
  return `#${m.seq}${marks.length ? ` ${marks.join('; ')}` : ''}`;
}

export function messagesTable(messages: readonly ArchivedMessage[], empty = 'No messages.'): string {
  const numbered = messages.some((m) => m.seq !== undefined);
  return table(
    [
      ['sent', 'sent_at'],
      ['from', 'from'],
      ['to', 'to'],
      ['type', 'content_type'],
      ['id', 'message_id'],
      ['state', 'state'],
      // sent messages: when the recipient acknowledged it ('-' until then); inbound: when it reached this machine
      ['delivered', 'delivered'],
      // groups: the sender's number and any gap, late arrival or repeat seen on arrival
      ...(numbered ? [['seq', 'sequence_text'] as [string, string]] : []),
      ['content', 'content'],
    ],
    messages.map((m) => ({
      ...m,
      to: addressee(m),
      sequence_text: sequenceText(m),
      state: stateText(m),
      delivered: m.direction === 'inbound' ? m.received_at : m.delivered_at,
      // an attachment as its name, size and caption, not the descriptor JSON
      content: short(messageText(m)),
    })),
    empty,
  );
}

/** One line per message, for watch and msg check --stream in human mode. */
export function messageLine(m: ArchivedMessage): string {
  const where = m.conversation_type === 'direct' ? '' : ` [${m.conversation_type} ${m.conversation_id}]`;
  const head = printable(`${m.sent_at}  ${m.from} → ${m.to}${where}  (${m.message_id})`);
  return `${head}\n  ${printable(messageText(m), true).replace(/\n/g, '\n  ')}\n`;
}

export function sentText(s: SentMessage): string {
  // a group or broadcast is both the recipient and the conversation: named once
  const where = s.to === s.conversation_id ? s.to : `${s.to} (conversation ${s.conversation_id})`;
  if (s.status === 'queued') {
    return `Queued ${s.message_id} for ${where}: the relay cannot be reached now; the daemon sends it when it answers.\n`;
  }
  const left = s.skipped?.length
    ? `Left out ${s.skipped.join(', ')}: the relay no longer lists them (revoked or deregistered without leaving).\n`
    : '';
  if (s.status === 'duplicate') {
    // its id is new (the daemon made it for this message): an honest relay cannot have had it
    return `Sent ${s.message_id} to ${where}, but the relay answered that it already had it, which it cannot have: if no delivery receipt comes (svc read shows it delivered), send it again.\n${left}`;
  }
  return `Sent ${s.message_id} to ${where}.\n${left}`;
}

export function agentText(a: LocalAgent): string {
  return keyValues([
    ['name', a.name],
    ['agent number', a.agent_number],
    ['agent id', a.agent_id],
    ['tenant', a.tenant_id],
    ['deployment', `${a.deployment} (${a.deployment_id})`],
    ['api url', a.api_url],
    ['capabilities', a.capabilities],
    ['signing key', a.signing_public_key],
    ['encryption key', a.encryption_public_key],
    ['registered', a.registered_at],
  ]);
}

/**
 * An agent the daemon keeps out of service (its archive cannot be used): one line with the
 * code, and the daemon's message (the file, what is wrong with it, what to do); undefined
 * for an agent in service.
 */
export function outOfServiceText(a: DaemonStatus['agents'][number]): string | undefined {
  if (!a.unusable) return undefined;
  return `agent ${a.name} is out of service (${a.unusable.error}): ${a.unusable.message}`;
}

/** While no secret can be read, no agent signs in: said by the commands that show the daemon's agents. */
export function warnIfVaultLocked(stderr: Writer, status: Pick<DaemonStatus, 'vault'>): void {
  if (status.vault.locked) warn(stderr, `no agent can sign in: ${status.vault.warning ?? 'the vault is locked'}`);
}
