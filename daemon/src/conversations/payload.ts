/**
 * The plaintext of a group or broadcast envelope: the sender's number for the message
 * and either the body (text, structured) or a roster change (control). It is sealed and
 * signed with the header, so neither the relay nor another member can change either.
 */
import { type ControlBody, MEMBER_ROLES, type RosterEntry } from './roster.js';

export const GROUP_PAYLOAD = 'group/v1';
const MAX_SEQ = Number.MAX_SAFE_INTEGER;
const NUMBER = /^[A-Za-z0-9_-]{1,128}$/;

export type GroupPayload = { svc: typeof GROUP_PAYLOAD; seq: number } & (
  | { body: string; control?: undefined }
  | { control: ControlBody; body?: undefined }
);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isRole = (v: unknown) => typeof v === 'string' && (MEMBER_ROLES as readonly string[]).includes(v);
const isText = (v: unknown, max: number) => typeof v === 'string' && v.length <= max;

/**
 * C0 and C1 controls (a description's line breaks and tabs aside) and the bidirectional
 * marks, embeddings, overrides and isolates: a name or description is shown in lists
 * where no one expects a terminal escape or text that reads in another order than stored.
 */
const UNSHOWABLE = /[\p{Cc}\p{Bidi_Control}]/u;
/** A group's name (one line) or description (line breaks allowed) that any terminal shows as stored. */
export const isShowable = (v: string, multiline: boolean): boolean =>
  !UNSHOWABLE.test(multiline ? v.replace(/[\n\t]/g, '') : v);

function isEntry(v: unknown): v is RosterEntry {
  return (
    isObject(v) &&
    typeof v.number === 'string' &&
    NUMBER.test(v.number) &&
    (v.role === 'creator' || isRole(v.role)) &&
    typeof v.active === 'boolean' &&
    isText(v.op, 64)
  );
}

function isControl(v: unknown): v is ControlBody {
  if (!isObject(v)) return false;
  if (v.op === 'leave') return true;
  const meta =
    (v.kind === 'group' || v.kind === 'broadcast') &&
    isText(v.name, 200) &&
    isShowable(v.name as string, false) &&
    (v.description === undefined || (isText(v.description, 2000) && isShowable(v.description as string, true)));
  if (!meta) return false;
  if (v.op === 'create') {
    return (
      Array.isArray(v.members) &&
      v.members.every((m) => isObject(m) && typeof m.number === 'string' && NUMBER.test(m.number) && isRole(m.role))
    );
  }
  if (v.op === 'invite') {
    return (
      typeof v.number === 'string' &&
      NUMBER.test(v.number) &&
      isRole(v.role) &&
      Array.isArray(v.snapshot) &&
      v.snapshot.every(isEntry)
    );
  }
  return false;
}

/** The payload, or undefined when the plaintext is not one (the envelope is then refused). */
export function decodePayload(text: string): GroupPayload | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(v) || v.svc !== GROUP_PAYLOAD) return undefined;
  if (typeof v.seq !== 'number' || !Number.isInteger(v.seq) || v.seq < 1 || v.seq > MAX_SEQ) return undefined;
  if (typeof v.body === 'string' && v.control === undefined) return { svc: GROUP_PAYLOAD, seq: v.seq, body: v.body };
  if (v.body === undefined && isControl(v.control)) return { svc: GROUP_PAYLOAD, seq: v.seq, control: v.control };
  return undefined;
}

export const encodePayload = (p: GroupPayload): string => JSON.stringify(p);
