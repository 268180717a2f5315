/**
 * Canonical JSON (RFC 8785 JCS): object keys sorted by UTF-16 code units, no
 * whitespace, ECMAScript number and string serialization. Signatures and the
 * envelope's associated data are computed over these bytes, so both sides must agree.
 */
import { utf8 } from './base64url.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export function canonicalJson(value: unknown): string {
  return serialize(value, new Set());
}

export function canonicalJsonBytes(value: unknown): Uint8Array {
  return utf8(canonicalJson(value));
}

function serialize(value: unknown, seen: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('canonical JSON cannot encode a non-finite number');
      return JSON.stringify(value);
    case 'string':
      return JSON.stringify(value);
    case 'object': {
      if (seen.has(value)) throw new TypeError('canonical JSON cannot encode a cycle');
      seen.add(value);
      let out: string;
      if (Array.isArray(value)) {
        out = `[${value.map((v) => serialize(v === undefined ? null : v, seen)).join(',')}]`;
      } else {
        const record = value as Record<string, unknown>;
        const keys = Object.keys(record)
          .filter((k) => record[k] !== undefined)
          .sort();
        out = `{${keys.map((k) => `${JSON.stringify(k)}:${serialize(record[k], seen)}`).join(',')}}`;
      }
      seen.delete(value);
      return out;
    }
    default:
      throw new TypeError(`canonical JSON cannot encode a ${typeof value}`);
  }
}
