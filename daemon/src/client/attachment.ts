/**
 * The attachment descriptor a `media` message carries (`{"svc":"attachment/v1", …}`,
 * written by the sender's daemon, daemon/src/messaging/attachments.ts): read by the daemon
 * to fetch and check the file, and by the CLI to show it to a person.
 */
import { isObject, parseJson } from './peer-json.js';

export const ATTACHMENT_FORMAT = 'attachment/v1';
/** No relay stores more than this per blob; a larger file is refused before it is read. */
export const ATTACHMENT_MAX_BYTES = 1024 * 1024 * 1024;

export interface AttachmentDescriptor {
  svc: typeof ATTACHMENT_FORMAT;
  blob_id: string;
  name: string;
  media_type: string;
  /** bytes of the file */
  size: number;
  /** sha256 of the encrypted bytes, base64url */
  digest: string;
  key: string;
  nonce: string;
  caption?: string;
}

const B64U = /^[A-Za-z0-9_-]+$/;
/** `type/subtype` in the characters RFC 6838 allows (no parameters). */
const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;
const UNKNOWN_TYPE = 'application/octet-stream';

/** The descriptor a media message carries, or undefined when its content is not one. */
export function parseDescriptor(content: string): AttachmentDescriptor | undefined {
  const v = parseJson(content);
  if (!isObject(v) || v.svc !== ATTACHMENT_FORMAT) return undefined;
  const str = (x: unknown, max: number) => typeof x === 'string' && x.length > 0 && x.length <= max;
  if (
    !str(v.blob_id, 64) ||
    !B64U.test(v.blob_id as string) ||
    !str(v.name, 255) ||
    !str(v.media_type, 255) ||
    typeof v.size !== 'number' ||
    !Number.isSafeInteger(v.size) ||
    v.size < 0 ||
    v.size > ATTACHMENT_MAX_BYTES ||
    !str(v.digest, 64) ||
    !str(v.key, 64) ||
    !str(v.nonce, 32) ||
    (v.caption !== undefined && typeof v.caption !== 'string')
  ) {
    return undefined;
  }
  const key = Buffer.from(v.key as string, 'base64url');
  const nonce = Buffer.from(v.nonce as string, 'base64url');
  if (key.length !== 32 || nonce.length !== 12) return undefined;
  // the peer wrote it, and it is shown as it is: anything but a media type (escapes,
  // spaces, a second line) is an unknown type, not text to print
  const d = v as unknown as AttachmentDescriptor;
  return MEDIA_TYPE.test(d.media_type) ? d : { ...d, media_type: UNKNOWN_TYPE };
}

/** `[file] report.pdf (1204 bytes, application/pdf): the caption`, as a person reads it. */
export function attachmentText(d: Pick<AttachmentDescriptor, 'name' | 'size' | 'media_type' | 'caption'>): string {
  return `[file] ${d.name} (${d.size} bytes, ${d.media_type})${d.caption ? `: ${d.caption}` : ''}`;
}
