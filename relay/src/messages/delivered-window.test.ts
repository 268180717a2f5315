import { describe, expect, it } from 'vitest';
import { DeliveredWindow } from './delivered-window.js';

const GRACE = 1000;

describe('DeliveredWindow', () => {
  it('a lower sequence recorded after a higher one was sent is still new to the stream', () => {
    const w = new DeliveredWindow(10, GRACE);
    w.add(12, 0);
    w.advance(0);
    // 11 is recorded late (another instance, a retried send): the stream reads from 10
    expect(w.floor).toBe(10);
    expect(w.has(11)).toBe(false);
    expect(w.has(12)).toBe(true);
    expect(w.has(10)).toBe(true);
  });

  it('the floor moves past a sent sequence only once the grace has passed since', () => {
    const w = new DeliveredWindow(0, GRACE);
    w.add(5, 0);
    w.add(7, 500);
    w.advance(GRACE);
    expect(w.floor).toBe(0);
    w.advance(GRACE + 1);
    expect(w.floor).toBe(5);
    expect(w.size).toBe(1);
    w.advance(500 + GRACE + 1);
    expect(w.floor).toBe(7);
    expect(w.size).toBe(0);
    // below the floor counts as sent; above it, only what was added
    expect(w.has(6)).toBe(true);
    expect(w.has(8)).toBe(false);
  });

  it('never moves the floor down, whatever order sequences are sent in', () => {
    const w = new DeliveredWindow(20, GRACE);
    w.add(3, 0); // below the floor: ignored
    expect(w.size).toBe(0);
    w.add(30, 0);
    w.add(25, 10);
    w.advance(10 + GRACE + 1);
    expect(w.floor).toBe(30);
    expect(w.size).toBe(0);
  });
});
