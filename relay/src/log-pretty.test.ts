import { describe, expect, it } from 'vitest';
import { prettyDestination, prettyLine } from './log-pretty.js';

const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

describe('prettyLine', () => {
  it('turns a pino JSON line into time, level, subsystem, message and fields', () => {
    const line = JSON.stringify({
      level: 30,
      time: at,
      pid: 1,
      hostname: 'h',
      name: 'svc-relay',
      subsystem: 'relay:http',
      msg: 'request completed',
      method: 'GET',
      status: 200,
      path: '/a b',
    });
    expect(prettyLine(line)).toBe(
      '03:04:05.678 INFO  relay:http: request completed method=GET status=200 path="/a b"\n',
    );
  });

  it('does not repeat a subsystem the message already names', () => {
    const line = JSON.stringify({ level: 30, time: at, subsystem: 'relay:bus', msg: 'bus: ready', tenants: 1 });
    expect(prettyLine(line)).toBe('03:04:05.678 INFO  bus: ready tenants=1\n');
  });

  it('shows an error with its message and stack, and leaves text that is not JSON as it is', () => {
    const line = JSON.stringify({
      level: 50,
      time: at,
      msg: 'failed',
      err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at x' },
    });
    expect(prettyLine(line)).toBe('03:04:05.678 ERROR failed err="Error: boom"\n    Error: boom\n        at x\n');
    expect(prettyLine('plain text')).toBe('plain text\n');
  });

  it('as a destination, formats whole lines however the writes split them', () => {
    const written: string[] = [];
    const dest = prettyDestination({ write: (s: string) => written.push(s) > 0 } as unknown as NodeJS.WritableStream);
    const a = JSON.stringify({ level: 40, time: at, msg: 'one' });
    const b = JSON.stringify({ level: 20, time: at, msg: 'two' });
    dest.write(`${a}\n${b.slice(0, 5)}`);
    dest.write(`${b.slice(5)}\n`);
    expect(written).toEqual(['03:04:05.678 WARN  one\n', '03:04:05.678 DEBUG two\n']);
  });
});
