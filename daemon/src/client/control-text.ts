/**
 * A `control` message (a change to a group's or broadcast's roster) as a person reads it.
 * Peers write these: read defensively. No Node module here: the dashboard page imports it too.
 */
import { isObject, parseJson } from './peer-json.js';

interface Shown {
  content_type: string;
  content: string;
  from: string;
}

/** A roster change as a sentence (`alice created the group “Launch”`), or undefined when not one. */
export function controlText(m: Shown): string | undefined {
  if (m.content_type !== 'control') return undefined;
  const v = parseJson(m.content);
  const c = isObject(v) && isObject(v.control) ? v.control : v;
  if (!isObject(c)) return `${m.from} changed the members`;
  const what = c.kind === 'broadcast' ? 'broadcast' : 'group';
  if (c.op === 'create') {
    return typeof c.name === 'string' ? `${m.from} created the ${what} “${c.name}”` : `${m.from} created the ${what}`;
  }
  if (c.op === 'invite' && typeof c.number === 'string') {
    return `${m.from} added ${c.number}${c.role === 'observer' ? ' as an observer' : ''}`;
  }
  if (c.op === 'leave') return `${m.from} left`;
  return `${m.from} changed the members`;
}
