import { describe, expect, it } from 'vitest';
import { type ControlMessage, deriveRoster, mayReach, parseGroupId, recipientsOf } from './roster.js';
import { classifyArrival } from './sequence.js';

const ID = 'grp:alice:AAAAAAAAAAAAAAAAAAAAAA';
const meta = { kind: 'group' as const, name: 'team' };
// message ids sort in time order, like UUIDv7
const ops: ControlMessage[] = [
  {
    message_id: '01',
    sender: 'alice',
    body: { op: 'create', ...meta, members: [{ number: 'bob', role: 'member' }] },
  },
  {
    message_id: '02',
    sender: 'alice',
    body: { op: 'invite', ...meta, number: 'carol', role: 'observer', snapshot: [] },
  },
  { message_id: '03', sender: 'bob', body: { op: 'leave' } },
  { message_id: '04', sender: 'alice', body: { op: 'invite', ...meta, number: 'dave', role: 'member', snapshot: [] } },
  { message_id: '05', sender: 'dave', body: { op: 'leave' } },
  {
    message_id: '06',
    sender: 'alice',
    body: { op: 'invite', ...meta, number: 'dave', role: 'observer', snapshot: [] },
  },
  // not the creator: ignored whatever its place
  { message_id: '07', sender: 'bob', body: { op: 'invite', ...meta, number: 'mallory', role: 'member', snapshot: [] } },
];

function* permutations<T>(xs: T[]): Generator<T[]> {
  if (xs.length <= 1) {
    yield xs;
    return;
  }
  for (let i = 0; i < xs.length; i++) {
    const rest = [...xs.slice(0, i), ...xs.slice(i + 1)];
    for (const p of permutations(rest)) yield [xs[i] as T, ...p];
  }
}

describe('roster derivation', () => {
  it('converges on one roster for every arrival order of the same control messages', () => {
    const expected = deriveRoster(ID, ops);
    expect(expected?.members.map((m) => [m.number, m.role, m.active])).toEqual([
      ['alice', 'creator', true],
      ['bob', 'member', false],
      ['carol', 'observer', true],
      ['dave', 'observer', true],
    ]);
    let n = 0;
    for (const order of permutations(ops)) {
      expect(deriveRoster(ID, order)).toEqual(expected);
      n++;
    }
    expect(n).toBe(5040);
  });

  it('every subset converges too (members that miss different messages agree on what they share)', () => {
    for (let mask = 0; mask < 1 << ops.length; mask++) {
      const subset = ops.filter((_, i) => mask & (1 << i));
      expect(deriveRoster(ID, [...subset].reverse())).toEqual(deriveRoster(ID, subset));
    }
  });

  it('a create by anyone but the creator the id names counts for nothing', () => {
    expect(deriveRoster(ID, [{ ...(ops[0] as ControlMessage), sender: 'bob' }])).toBeUndefined();
  });

  it('an invitee starts from the snapshot the creator sent', () => {
    const r = deriveRoster(ID, [
      {
        message_id: '09',
        sender: 'alice',
        body: {
          op: 'invite',
          ...meta,
          number: 'erin',
          role: 'member',
          snapshot: [
            { number: 'alice', role: 'creator', active: true, op: '01' },
            { number: 'bob', role: 'member', active: false, op: '03' },
          ],
        },
      },
    ]);
    expect(r?.members.map((m) => [m.number, m.active])).toEqual([
      ['alice', true],
      ['bob', false],
      ['erin', true],
    ]);
  });

  it('group ids are never direct ids and name their creator', () => {
    expect(parseGroupId('dm:alice:bob')).toBeUndefined();
    expect(parseGroupId('grp:alice:AAAAAAAAAAAAAAAA')).toEqual({ kind: 'group', creator: 'alice' });
    expect(parseGroupId('bc:alice:AAAAAAAAAAAAAAAA')).toEqual({ kind: 'broadcast', creator: 'alice' });
    expect(parseGroupId('grp:alice:short')).toBeUndefined();
  });

  it('observers read but do not post; broadcast replies reach the broadcaster only', () => {
    const r = deriveRoster(ID, ops.slice(0, 2));
    if (!r) throw new Error('no roster');
    expect(mayReach(r, 'carol', 'bob')).toBe(false);
    expect(mayReach(r, 'bob', 'carol')).toBe(true);
    const B = 'bc:alice:AAAAAAAAAAAAAAAAAAAAAA';
    const b = deriveRoster(B, [
      {
        message_id: '01',
        sender: 'alice',
        body: {
          op: 'create',
          kind: 'broadcast',
          name: 'news',
          members: [
            { number: 'bob', role: 'member' },
            { number: 'carol', role: 'member' },
          ],
        },
      },
    ]);
    if (!b) throw new Error('no roster');
    expect(recipientsOf(b, 'alice', false)).toEqual(['bob', 'carol']);
    expect(recipientsOf(b, 'bob', false)).toEqual(['alice']);
    expect(mayReach(b, 'bob', 'carol')).toBe(false);
    expect(mayReach(b, 'bob', 'alice')).toBe(true);
  });
});

describe('sequence arrival', () => {
  const heldOf = (xs: number[]) => (n: number) => xs.includes(n);
  it('tells in order, gap, reordered and duplicate apart', () => {
    expect(classifyArrival(1, undefined, heldOf([]))).toEqual({ kind: 'in_order' });
    expect(classifyArrival(3, 2, heldOf([1, 2]))).toEqual({ kind: 'in_order' });
    expect(classifyArrival(5, 2, heldOf([1, 2]))).toEqual({ kind: 'gap', note: { gap: { from: 3, to: 4 } } });
    expect(classifyArrival(3, 5, heldOf([1, 2, 5]))).toEqual({ kind: 'reordered', note: { late: true } });
    expect(classifyArrival(2, 5, heldOf([1, 2, 5]))).toEqual({ kind: 'duplicate' });
  });
});
