import { describe, expect, it } from 'vitest';
import { DeliveredWindow } from './delivered-window.js';

const GRACE = 10_000;

describe('DeliveredWindow', () => {
  it('a lower sequence recorded after a higher one was sent is found by the next full read', () => {
    const w = new DeliveredWindow(10, GRACE);
    expect(w.open).toBe(false);
    w.add(12, 0);
    // the usual read goes on after 12; 11, recorded late, is below it …
    expect(w.after).toBe(12);
    expect(w.open).toBe(true);
    // … and a full read from the floor (10) has it as new, 12 as sent
    expect(w.floor).toBe(10);
    expect(w.fullReadIn(0)).toBeLessThanOrEqual(0);
    expect(w.has(11)).toBe(false);
    expect(w.has(12)).toBe(true);
    w.fullRead(0, [11, 12], true);
    expect(w.fullReadIn(0)).toBe(1000);
    w.add(11, 0);
    expect(w.after).toBe(12);
    expect(w.has(11)).toBe(true);
  });

  it('forgets what was acknowledged (absent from a full read) and keeps what is still pending', () => {
    const w = new DeliveredWindow(0, GRACE);
    for (const seq of [1, 2, 3, 4]) w.add(seq, 0);
    expect(w.size).toBe(4);
    w.fullRead(0, [2, 4], true);
    expect(w.size).toBe(2);
    expect(w.has(2)).toBe(true);
    // a read cut at its limit says nothing about what lies beyond what it returned
    w.add(5, 0);
    w.add(6, 0);
    w.fullRead(1, [2], false);
    expect(w.size).toBe(4); // 4, 5, 6 lie beyond the cut: kept
    w.fullRead(2, [2, 6], true);
    expect([2, 4, 5, 6].map((s) => w.has(s))).toEqual([true, false, false, true]);
  });

  it('moves the floor past what was sent once the grace has passed, after a complete read only', () => {
    const w = new DeliveredWindow(0, GRACE);
    w.add(5, 0);
    w.add(7, 2000);
    w.fullRead(GRACE, [5, 7], true);
    expect(w.floor).toBe(0);
    w.fullRead(GRACE + 1, [5, 7], false);
    expect(w.floor).toBe(0);
    w.fullRead(GRACE + 1, [5, 7], true);
    expect(w.floor).toBe(5);
    expect(w.has(4)).toBe(true);
    expect(w.size).toBe(1);
    w.fullRead(2000 + GRACE + 1, [7], true);
    expect(w.floor).toBe(7);
    expect(w.size).toBe(0);
    expect(w.open).toBe(false);
    expect(w.fullReadIn(1e9)).toBe(Number.POSITIVE_INFINITY);
  });

  it('never moves the floor down, whatever order sequences are sent in', () => {
    const w = new DeliveredWindow(20, GRACE);
    w.add(3, 0); // below the floor: ignored
    expect(w.size).toBe(0);
    w.add(30, 0);
    w.add(25, 500);
    w.fullRead(500 + GRACE + 1, [25, 30], true);
    expect(w.floor).toBe(30);
    expect(w.size).toBe(0);
  });
});
