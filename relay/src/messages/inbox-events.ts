/**
 * Inbox changes shared between relay instances. Each instance wakes its own waiting
 * readers (long-polls, event streams) directly; the others learn of an envelope recorded
 * or acknowledged elsewhere from one small core-NATS message per request on the tenant's
 * account, which wakes theirs and drops their cached pending totals. Nothing is stored:
 * the ledger stays the truth, and a missed event only delays a reader until its next poll.
 */
import { randomUUID } from 'node:crypto';

/** Core subject in each tenant account (no stream captures it). */
export const INBOX_EVENTS_SUBJECT = 'svc.relay.inbox';

export interface InboxEvent {
  /** the instance that sent it: an instance ignores its own */
  from: string;
  kind: 'recorded' | 'acked';
  /** recipient rows (ledger ids) whose inbox changed */
  rows: string[];
}

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
  if (typeof e.from !== 'string' || (e.kind !== 'recorded' && e.kind !== 'acked')) return undefined;
  if (!Array.isArray(e.rows) || !e.rows.every((r) => typeof r === 'string')) return undefined;
  return { from: e.from, kind: e.kind, rows: e.rows };
}
