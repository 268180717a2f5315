/**
 * Attachments (`send --file`): the file is encrypted here with a fresh key
 * (ChaCha20-Poly1305), uploaded to the relay as an opaque blob for its one recipient, and
 * the message (content type `media`, sealed and signed like any other) carries the blob
 * id, size, media type, the digest of the encrypted bytes and the key. The recipient's
 * daemon fetches the blob on `svc read --save DIR`, checks the digest, decrypts, writes
 * the file and acknowledges the blob (the relay then deletes it).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { open, readdir, readFile, stat } from 'node:fs/promises';
import { basename, extname, isAbsolute, join } from 'node:path';
import type { SavedAttachment } from '../client/api.js';
import {
  ATTACHMENT_FORMAT,
  ATTACHMENT_MAX_BYTES,
  type AttachmentDescriptor,
  parseDescriptor,
} from '../client/attachment.js';
import { DaemonError } from '../errors.js';
import { MAX_ERROR_ANSWER_BYTES, openRequest, readBody, relayCode, toRelayError } from '../relay/http.js';
import type { AgentSession } from '../session/session.js';

const TAG_BYTES = 16;

const TYPES: Record<string, string> = {
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.json': 'application/json',
  '.csv': 'text/csv',
  '.pdf': 'application/pdf',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
  '.tar': 'application/x-tar',
};

export const mediaTypeOf = (name: string): string => TYPES[extname(name).toLowerCase()] ?? 'application/octet-stream';

/** The file sealed with this key and nonce, and the digest of the sealed bytes (what the sender signs for). */
function seal(plain: Uint8Array, key: Buffer, nonce: Buffer): { sealed: Buffer; digest: string } {
  const c = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: TAG_BYTES });
  const sealed = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
  return { sealed, digest: createHash('sha256').update(sealed).digest('base64url') };
}

export function encryptFile(plain: Uint8Array): { sealed: Buffer; key: Buffer; nonce: Buffer; digest: string } {
  const key = randomBytes(32);
  const nonce = randomBytes(12);
  return { ...seal(plain, key, nonce), key, nonce };
}

/** The file, or a refusal: digest first (what the sender signed for), then the AEAD tag. */
export function decryptBlob(sealed: Uint8Array, d: AttachmentDescriptor): Buffer {
  const digest = createHash('sha256').update(sealed).digest();
  const want = Buffer.from(d.digest, 'base64url');
  if (want.length !== digest.length || !timingSafeEqual(want, digest) || sealed.length !== d.size + TAG_BYTES) {
    throw new DaemonError('attachment_digest_mismatch');
  }
  try {
    const dc = createDecipheriv(
      'chacha20-poly1305',
      Buffer.from(d.key, 'base64url'),
      Buffer.from(d.nonce, 'base64url'),
      {
        authTagLength: TAG_BYTES,
      },
    );
    dc.setAuthTag(Buffer.from(sealed.subarray(sealed.length - TAG_BYTES)));
    return Buffer.concat([dc.update(sealed.subarray(0, sealed.length - TAG_BYTES)), dc.final()]);
  } catch {
    throw new DaemonError('attachment_digest_mismatch');
  }
}

/** Reports a transfer on the event stream, at most once per whole percent (and at the end). */
function progress(session: AgentSession, direction: 'upload' | 'download', name: string) {
  let last = -1;
  return (done: number, total: number) => {
    const pct = total === 0 ? 100 : Math.floor((done / total) * 100);
    if (pct === last && done !== total) return;
    last = pct;
    session.events.emit({ type: 'transfer', agent: session.name, direction, name, done, total });
  };
}

/** Encrypts and uploads the file for `recipient`; the message content (descriptor JSON). */
export async function uploadAttachment(
  session: AgentSession,
  recipient: string,
  filePath: string,
  caption: string | undefined,
): Promise<string> {
  if (!isAbsolute(filePath)) throw new DaemonError('validation_failed', 'file_path must be an absolute path');
  let size: number;
  try {
    const st = await stat(filePath);
    if (!st.isFile()) throw new Error('not a regular file');
    size = st.size;
  } catch (err) {
    throw new DaemonError('validation_failed', `Cannot read ${filePath}: ${(err as Error).message}`);
  }
  if (size > ATTACHMENT_MAX_BYTES) throw new DaemonError('blob_too_large');
  const { sealed, key, nonce, digest } = encryptFile(await readFile(filePath));
  const name = basename(filePath);
  const res = await session.relay.request<{ blob_id: string }>({
    method: 'POST',
    path: `/api/v1/blobs?for=${encodeURIComponent(recipient)}`,
    raw: sealed,
    timeoutMs: 120_000,
    onProgress: progress(session, 'upload', name),
  });
  if (res.status !== 201) throw toRelayError(res);
  const d: AttachmentDescriptor = {
    svc: ATTACHMENT_FORMAT,
    blob_id: res.body.blob_id,
    name,
    media_type: mediaTypeOf(name),
    size,
    digest,
    key: key.toString('base64url'),
    nonce: nonce.toString('base64url'),
    ...(caption !== undefined && caption !== '' ? { caption } : {}),
  };
  return JSON.stringify(d);
}

/** Reads the blob's bytes (at most what the descriptor says, plus the tag). */
async function download(session: AgentSession, d: AttachmentDescriptor): Promise<Buffer> {
  const res = await openRequest(session.relay.target, {
    method: 'GET',
    path: `/api/v1/blobs/${d.blob_id}`,
    headers: { authorization: await session.credentials.bearer(), accept: 'application/octet-stream' },
    timeoutMs: 120_000,
  });
  if (res.statusCode !== 200) {
    const body = await readBody(res, MAX_ERROR_ANSWER_BYTES);
    throw toRelayError({ status: res.statusCode ?? 0, body, headers: res.headers });
  }
  const max = d.size + TAG_BYTES;
  const report = progress(session, 'download', d.name);
  const chunks: Buffer[] = [];
  let got = 0;
  for await (const c of res) {
    got += (c as Buffer).length;
    // more than the sender encrypted is not its blob: stop reading
    if (got > max) {
      res.destroy();
      throw new DaemonError('attachment_digest_mismatch');
    }
    chunks.push(c as Buffer);
    report(got, max);
  }
  return Buffer.concat(chunks);
}

/**
 * A file in `dir` that is this attachment, byte for byte, whatever it was named: sealed
 * with the attachment's key and nonce it gives the digest the sender signed for.
 */
async function savedCopy(dir: string, d: AttachmentDescriptor): Promise<string | undefined> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return undefined;
  }
  const key = Buffer.from(d.key, 'base64url');
  const nonce = Buffer.from(d.nonce, 'base64url');
  for (const name of names) {
    const path = join(dir, name);
    try {
      const st = await stat(path);
      if (!st.isFile() || st.size !== d.size) continue;
      if (seal(await readFile(path), key, nonce).digest === d.digest) return path;
    } catch {
      // unreadable, or gone meanwhile: not the copy
    }
  }
  return undefined;
}

/** A file name of our own choosing from the sender's: no directories, no hidden file. */
function safeName(name: string): string {
  const base = [...basename(name.replace(/\\/g, '/'))].map((c) => (c.charCodeAt(0) < 32 ? '_' : c)).join('');
  const cleaned = base.replace(/^\.+/, '');
  return cleaned === '' ? 'attachment' : cleaned;
}

/** Fetches, checks and decrypts the attachment of a message into `dir` (never over an existing file). */
export async function saveAttachment(session: AgentSession, messageId: string, dir: string): Promise<SavedAttachment> {
  if (!isAbsolute(dir)) throw new DaemonError('validation_failed', 'dir must be an absolute path');
  const m = session.archive.getMessage(messageId);
  if (!m) throw new DaemonError('unknown_message', `No archived message ${messageId}.`);
  const d = m.content_type === 'media' ? parseDescriptor(m.content) : undefined;
  if (!d) throw new DaemonError('not_an_attachment', `Message ${messageId} carries no attachment.`);
  let sealed: Buffer;
  try {
    sealed = await download(session, d);
  } catch (err) {
    // the relay deletes a blob once it is saved: a copy in `dir` is the file, saved already
    if (relayCode(err) !== 'unknown_blob') throw err;
    const path = await savedCopy(dir, d);
    if (path)
      return { message_id: messageId, path, size: d.size, media_type: d.media_type, name: d.name, already_saved: true };
    throw new DaemonError(
      'unknown_blob',
      `The relay no longer has ${d.name} (message ${messageId}): it deletes an attachment once it is saved, and when it expires. No copy of it is in ${dir}; if you saved it before, it is where you saved it.`,
      { cause: err },
    );
  }
  const plain = decryptBlob(sealed, d);
  const name = safeName(d.name);
  const dot = name.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  for (let i = 0; ; i++) {
    const path = join(dir, i === 0 ? name : `${stem} (${i})${ext}`);
    let fh: Awaited<ReturnType<typeof open>>;
    try {
      fh = await open(path, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST' && i < 1000) continue;
      throw new DaemonError('validation_failed', `Cannot write into ${dir}: ${(err as Error).message}`);
    }
    try {
      await fh.writeFile(plain);
    } finally {
      await fh.close();
    }
    // the recipient has it: the relay may delete the blob (best effort; retention does it otherwise)
    if (m.direction === 'inbound') {
      await session.relay
        .call({ method: 'POST', path: `/api/v1/blobs/${d.blob_id}/ack`, body: {}, timeoutMs: 15_000 })
        .catch((err) =>
          session.log.warn({ agent: session.name, blob_id: d.blob_id, err: (err as Error).message }, 'blob ack failed'),
        );
    }
    return { message_id: messageId, path, size: plain.length, media_type: d.media_type, name: d.name };
  }
}
