import { describe, expect, it } from 'vitest';
import { StreamSlots } from './stream-slots.js';

describe('StreamSlots', () => {
  it('refuses the slot past the cap with too_many_streams, per agent', () => {
    const slots = new StreamSlots(2);
    slots.take('a');
    slots.take('a');
    expect(() => slots.take('a')).toThrow(expect.objectContaining({ code: 'too_many_streams', status: 429 }));
    slots.take('b');
    expect(slots.count('a')).toBe(2);
    expect(slots.count('b')).toBe(1);
  });

  it('a slot given back can be taken again; giving it back twice frees only one', () => {
    const slots = new StreamSlots(2);
    const first = slots.take('a');
    slots.take('a');
    first();
    first();
    expect(slots.count('a')).toBe(1);
    slots.take('a');
    expect(() => slots.take('a')).toThrow(expect.objectContaining({ code: 'too_many_streams' }));
  });

  it('forgets an agent with no stream open, and a cap of 0 is no limit', () => {
    const slots = new StreamSlots(1);
    slots.take('a')();
    expect(slots.count('a')).toBe(0);
    const open = new StreamSlots(0);
    for (let i = 0; i < 50; i++) open.take('a');
    expect(open.count('a')).toBe(50);
  });
});

describe('StreamSlots.recheck', () => {
  it('calls the recheck of each open stream of that agent only, and no more once its slot is given back', () => {
    const slots = new StreamSlots(0);
    const calls: string[] = [];
    const first = slots.take('a', () => calls.push('a1'));
    slots.take('a', () => calls.push('a2'));
    slots.take('b', () => calls.push('b1'));
    slots.recheck('a');
    expect(calls.sort()).toEqual(['a1', 'a2']);
    first();
    calls.length = 0;
    slots.recheck('a');
    slots.recheck('nobody');
    expect(calls).toEqual(['a2']);
  });
});
