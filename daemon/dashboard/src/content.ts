/**
 * What a person reads of a message whose content is not plain text: a `media` message
 * carries the attachment's descriptor (with the key that opens the file: never shown), a
 * `control` message a change to a group's roster. Both come from peers: read defensively.
 */
import { controlText } from '../../src/client/control-text.js';
import { isObject, parseJson } from '../../src/client/peer-json.js';
import type { ArchivedMessage } from './api.js';

export { controlText };

const FORMAT = 'attachment/v1';

export interface Attachment {
  name: string;
  size: number;
  media_type: string;
  caption?: string;
}

/** The attachment a media message names, or undefined when its content is not a descriptor. */
export function attachmentOf(m: Pick<ArchivedMessage, 'content_type' | 'content'>): Attachment | undefined {
  if (m.content_type !== 'media') return undefined;
  const v = parseJson(m.content);
  if (!isObject(v) || v.svc !== FORMAT) return undefined;
  if (typeof v.name !== 'string' || typeof v.media_type !== 'string' || typeof v.size !== 'number') return undefined;
  return {
    name: v.name,
    size: v.size,
    media_type: v.media_type,
    ...(typeof v.caption === 'string' && v.caption !== '' ? { caption: v.caption } : {}),
  };
}

export function byteSize(n: number): string {
  if (n < 1024) return `${n} ${n === 1 ? 'byte' : 'bytes'}`;
  const units = ['KB', 'MB', 'GB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** One line for lists and previews. */
export function previewText(m: Pick<ArchivedMessage, 'content_type' | 'content' | 'from'>): string {
  const a = attachmentOf(m);
  if (a) return `File: ${a.name}${a.caption ? ` — ${a.caption}` : ''}`;
  return controlText(m) ?? m.content;
}
