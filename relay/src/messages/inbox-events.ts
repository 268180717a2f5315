/**
 * Inbox changes shared between relay instances. Each instance wakes its own waiting
 * readers (long-polls, event streams) directly; the others learn of an envelope recorded
 * or acknowledged elsewhere from one small core-NATS message per request on the tenant's
 * account, which wakes theirs and drops their cached pending totals. A revocation is
 * announced the same way, so every instance's event streams of that agent ask the ledger
 * at once (a hint only: the ledger decides, and a forged one just costs a lookup). Nothing is stored:
 * the ledger stays the truth, and a missed event only delays a reader until its next poll.
 */
import { randomUUID } from 'node:crypto';

/** Core subject in each tenant account (no stream captures it). */
export const INBOX_EVENTS_SUBJECT = 'svc.relay.inbox';

export interface InboxEvent {
  /** the instance that sent it: an instance ignores its own */
  from: string;
  kind: 'recorded' | 'acked' | 'revoked';
  /** agent rows (ledger ids) whose inbox changed, or that were revoked */
  rows: string[];
}

const INBOX_EVENT_KINDS: readonly InboxEvent['kind'][] = ['recorded', 'acked', 'revoked'];

/** One id per relay process. */
export const newInstanceId = (): string => randomUUID();

/** The event, or undefined for anything that is not one (the subject is the relay's own, but be strict). */
export function parseInboxEvent(data: Uint8Array): InboxEvent | undefined {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder().decode(data));
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const e = v as Partial<InboxEvent>;
  const kind = INBOX_EVENT_KINDS.find((k) => k === e.kind);
  if (typeof e.from !== 'string' || kind === undefined) return undefined;
  if (!Array.isArray(e.rows) || !e.rows.every((r) => typeof r === 'string')) return undefined;
  return { from: e.from, kind, rows: e.rows };
}
