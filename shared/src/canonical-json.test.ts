import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';

describe('canonicalJson (RFC 8785)', () => {
  it('sorts keys by UTF-16 code units at every depth and drops whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
    // "é" (U+00E9) sorts after "z"; an astral character sorts by its surrogates
    expect(canonicalJson({ é: 1, z: 2, '😀': 3, '\uffff': 4 })).toBe('{"z":2,"é":1,"😀":3,"\uffff":4}');
  });

  it('serializes numbers the ECMAScript way', () => {
    expect(canonicalJson([1e21, 1e-7, -0, 0.1 + 0.2, 100])).toBe('[1e+21,1e-7,0,0.30000000000000004,100]');
  });

  it('escapes strings minimally', () => {
    expect(canonicalJson('a"b\\c\n\u0001é')).toBe('"a\\"b\\\\c\\n\\u0001é"');
  });

  it('omits undefined members and refuses what JSON cannot carry', () => {
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson({ a: 1n })).toThrow(TypeError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/cycle/);
  });
});
