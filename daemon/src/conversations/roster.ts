/**
 * A group's or broadcast's roster, derived by every member from the signed, encrypted
 * control messages it holds (the relay keeps no conversation state). The derivation is
 * a pure function of the SET of control messages, so members converge on the same roster
 * whatever order the messages arrived in:
 *
 * - Authority never depends on order: only the creator (named in the conversation id and
 *   the sender of `create`) may create, invite or send a snapshot; a `leave` counts only
 *   from the member it removes.
 * - Each member's entry is a last-writer-wins register keyed by the deciding message id
 *   (UUIDv7, time-ordered and unique), so any two members holding the same messages hold
 *   the same entries.
 */
export const MEMBER_ROLES = ['member', 'observer'] as const;
export type MemberRole = (typeof MEMBER_ROLES)[number];
export type Role = 'creator' | MemberRole;
export type GroupKind = 'group' | 'broadcast';

export interface RosterEntry {
  number: string;
  role: Role;
  active: boolean;
  /** the message id that decided this entry */
  op: string;
}

export interface GroupMeta {
  kind: GroupKind;
  name: string;
  description?: string;
}

/** The control payloads (inside the ciphertext; the archive keeps them as JSON text). */
export type ControlBody =
  | ({ op: 'create'; members: Array<{ number: string; role: MemberRole }> } & GroupMeta)
  | ({ op: 'invite'; number: string; role: MemberRole; snapshot: RosterEntry[] } & GroupMeta)
  | { op: 'leave' };

export interface ControlMessage {
  message_id: string;
  sender: string;
  body: ControlBody;
}

export interface Roster {
  conversation_id: string;
  kind: GroupKind;
  name: string;
  description?: string;
  creator: string;
  members: RosterEntry[];
}

const GROUP_ID = /^(grp|bc):([A-Za-z0-9_-]{1,128}):([A-Za-z0-9_-]{16,64})$/;
/** GROUP_ID in words, for a refusal. */
const GROUP_ID_IN_WORDS = 'grp:CREATOR:ID or bc:CREATOR:ID (ID of 16 to 64 letters, digits, _ or -)';

/** Why `id`, which starts as a group's or broadcast's does, is not one; undefined when it is, or does not start so. */
export function malformedGroupId(id: string): string | undefined {
  if (!/^(grp|bc):/.test(id) || GROUP_ID.test(id)) return undefined;
  return `${id} is not a group or broadcast id: those are ${GROUP_ID_IN_WORDS}, as svc conv list shows them.`;
}

/**
 * The kind and creator a group or broadcast id names: `grp:<creator>:<random>` or
 * `bc:<creator>:<random>`. Never `dm:`, so a group id can neither be nor pass for a
 * direct conversation's id; and its creator is fixed by the id itself.
 */
export function parseGroupId(id: string): { kind: GroupKind; creator: string } | undefined {
  const m = GROUP_ID.exec(id);
  if (!m) return undefined;
  return { kind: m[1] === 'grp' ? 'group' : 'broadcast', creator: m[2] as string };
}

export const newGroupId = (kind: GroupKind, creator: string, random: string): string =>
  `${kind === 'group' ? 'grp' : 'bc'}:${creator}:${random}`;

/** Rebuilds the roster from the control messages; undefined while neither create nor a snapshot is known. */
export function deriveRoster(conversationId: string, controls: readonly ControlMessage[]): Roster | undefined {
  const id = parseGroupId(conversationId);
  if (!id) return undefined;
  let meta: GroupMeta | undefined;
  // two registers per member, each last-writer-wins by message id: presence and role
  const presence = new Map<string, { active: boolean; op: string }>();
  const roles = new Map<string, { role: MemberRole; op: string }>();
  const setPresence = (number: string, active: boolean, op: string) => {
    const cur = presence.get(number);
    if (!cur || cur.op < op) presence.set(number, { active, op });
  };
  const setRole = (number: string, role: Role, op: string) => {
    if (role === 'creator' || number === id.creator) return;
    const cur = roles.get(number);
    if (!cur || cur.op < op) roles.set(number, { role, op });
  };
  for (const c of controls) {
    const b = c.body;
    if (b.op === 'leave') {
      setPresence(c.sender, false, c.message_id);
      continue;
    }
    if (c.sender !== id.creator || b.kind !== id.kind) continue;
    // name and description come from the creator alone; every statement of them is the same
    meta ??= { kind: b.kind, name: b.name, ...(b.description !== undefined ? { description: b.description } : {}) };
    if (b.op === 'create') {
      setPresence(id.creator, true, c.message_id);
      for (const m of b.members) {
        setPresence(m.number, true, c.message_id);
        setRole(m.number, m.role, c.message_id);
      }
    } else {
      for (const e of b.snapshot) {
        setPresence(e.number, e.active, e.op);
        setRole(e.number, e.role, e.op);
      }
      setPresence(b.number, true, c.message_id);
      setRole(b.number, b.role, c.message_id);
    }
  }
  if (!meta) return undefined;
  const members: RosterEntry[] = [...presence.entries()]
    .map(([number, p]) => ({
      number,
      role: number === id.creator ? ('creator' as const) : (roles.get(number)?.role ?? 'member'),
      active: p.active,
      op: p.op,
    }))
    .sort((a, b) => (a.number < b.number ? -1 : a.number > b.number ? 1 : 0));
  return {
    conversation_id: conversationId,
    kind: meta.kind,
    name: meta.name,
    ...(meta.description !== undefined ? { description: meta.description } : {}),
    creator: id.creator,
    members,
  };
}

export const activeMember = (r: Roster, number: string): RosterEntry | undefined =>
  r.members.find((m) => m.number === number && m.active);

/**
 * Whether `sender` may post a message (text, structured) in the conversation, and to
 * whom it goes. Group: the creator and members post to every active member; observers
 * read only. Broadcast: the broadcaster posts to every subscriber; a subscriber of role
 * member replies to the broadcaster only; observers read only.
 */
export function mayPost(r: Roster, sender: string): boolean {
  const e = activeMember(r, sender);
  return e !== undefined && e.role !== 'observer';
}

/** Who a message from `sender` is sealed to (never the sender itself). */
export function recipientsOf(r: Roster, sender: string, control: boolean): string[] {
  const active = r.members.filter((m) => m.active && m.number !== sender).map((m) => m.number);
  // broadcast replies go to the broadcaster only; roster changes go to everyone
  if (r.kind === 'broadcast' && sender !== r.creator && !control) return active.filter((n) => n === r.creator);
  return active;
}

/** Whether a message from `sender` may reach `me` in this conversation (the receiver's check). */
export function mayReach(r: Roster, sender: string, me: string): boolean {
  if (!activeMember(r, me)) return false;
  if (!mayPost(r, sender)) return false;
  return r.kind === 'group' || sender === r.creator || me === r.creator;
}
