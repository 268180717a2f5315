/**
 * Attachments (`send --file`): the file is encrypted here with a fresh key
 * (ChaCha20-Poly1305), uploaded to the relay as an opaque blob for its one recipient, and
 * the message (content type `media`, sealed and signed like any other) carries the blob
 * id, size, media type, the digest of the encrypted bytes and the key. The recipient's
 * daemon fetches the blob on `svc read --save DIR`, streaming it through the digest and
 * the cipher into a hidden temporary file in DIR; only when the digest and the AEAD tag
 * hold is that file given its name (a hard link, which never replaces an existing file),
 * and the blob acknowledged (the relay then deletes it). Neither the relay nor the peer
 * can make the daemon hold a file in memory or leave a part of one under a real name.
 */
import { createCipheriv, createDecipheriv, createHash, type Hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { constants } from 'node:fs';
import { copyFile, type FileHandle, link, open, readdir, readFile, stat, unlink } from 'node:fs/promises';
import { basename, extname, isAbsolute, join } from 'node:path';
import type { SavedAttachment } from '../client/api.js';
import {
  ATTACHMENT_FORMAT,
  ATTACHMENT_MAX_BYTES,
  type AttachmentDescriptor,
  parseDescriptor,
} from '../client/attachment.js';
import { DaemonError } from '../errors.js';
import { MAX_ERROR_ANSWER_BYTES, openRequest, readBody, relayCode, stoppedOr, toRelayError } from '../relay/http.js';
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
  const plain = await readFile(filePath);
  // the bytes read are what is signed for: a file that changed since stat() would otherwise
  // go out with a size no recipient could ever match
  size = plain.length;
  if (size > ATTACHMENT_MAX_BYTES) throw new DaemonError('blob_too_large');
  const { sealed, key, nonce, digest } = encryptFile(plain);
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

const mismatch = () => new DaemonError('attachment_digest_mismatch');

/** Writes all of `bytes` (a write may take fewer than it was given). */
async function writeAll(fh: FileHandle, bytes: Buffer): Promise<void> {
  for (let at = 0; at < bytes.length; ) at += (await fh.write(bytes, at, bytes.length - at)).bytesWritten;
}

/** Hidden temporary files a save writes into DIR before the file is checked. */
const PART = /^\.svc-[0-9a-f]{16}\.part$/;

/**
 * Streams the blob into `fh`: the digest of the encrypted bytes and the plaintext as it
 * is decrypted. No more than the signed size is read, and nothing is kept in memory but
 * the last 16 bytes (the tag). Throws `attachment_digest_mismatch` unless the digest, the
 * size and the tag all hold.
 */
async function downloadInto(session: AgentSession, d: AttachmentDescriptor, fh: FileHandle): Promise<void> {
  try {
    await streamInto(session, d, fh);
  } catch (err) {
    throw stoppedOr(session.relay.target, err);
  }
}

async function streamInto(session: AgentSession, d: AttachmentDescriptor, fh: FileHandle): Promise<void> {
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
  const declared = res.headers['content-length'];
  if (declared !== undefined && Number(declared) !== max) {
    res.destroy();
    throw mismatch();
  }
  const report = progress(session, 'download', d.name);
  const hash = createHash('sha256');
  const dc = createDecipheriv('chacha20-poly1305', Buffer.from(d.key, 'base64url'), Buffer.from(d.nonce, 'base64url'), {
    authTagLength: TAG_BYTES,
  });
  let tail = Buffer.alloc(0);
  let got = 0;
  try {
    for await (const c of res) {
      const chunk = c as Buffer;
      got += chunk.length;
      // more than the sender encrypted is not its blob: stop reading
      if (got > max) throw mismatch();
      hash.update(chunk);
      const both = tail.length === 0 ? chunk : Buffer.concat([tail, chunk]);
      const cut = Math.max(0, both.length - TAG_BYTES);
      tail = Buffer.from(both.subarray(cut));
      // awaiting the write holds the socket back: the disk sets the pace, not memory
      if (cut > 0) await writeAll(fh, dc.update(both.subarray(0, cut)));
      report(got, max);
    }
  } finally {
    res.destroy();
  }
  const want = Buffer.from(d.digest, 'base64url');
  const digest = hash.digest();
  if (got !== max || want.length !== digest.length || !timingSafeEqual(want, digest)) throw mismatch();
  try {
    dc.setAuthTag(tail);
    await writeAll(fh, dc.final());
  } catch {
    throw mismatch();
  }
}

/** The digest of a file sealed with the attachment's key and nonce, read as a stream. */
async function sealedDigest(fh: FileHandle, d: AttachmentDescriptor): Promise<Buffer> {
  const c = createCipheriv('chacha20-poly1305', Buffer.from(d.key, 'base64url'), Buffer.from(d.nonce, 'base64url'), {
    authTagLength: TAG_BYTES,
  });
  const hash: Hash = createHash('sha256');
  for await (const chunk of fh.createReadStream({ autoClose: false })) hash.update(c.update(chunk as Buffer));
  return hash.update(c.final()).update(c.getAuthTag()).digest();
}

/** `report.pdf` → `report`, `.pdf`: numbered names go between them (`report (1).pdf`). */
function stemAndExt(name: string): [string, string] {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
}

/**
 * Where to look for a saved copy first: the name this attachment is saved under, then its
 * numbered names, then the rest in order. Another message may carry the same bytes under
 * another name; its file is a copy too, but the one to name is this message's own.
 */
function ownNamesFirst(names: string[], own: string): string[] {
  const [stem, ext] = stemAndExt(own);
  const numbered = (name: string) =>
    name.startsWith(`${stem} (`) &&
    name.endsWith(`)${ext}`) &&
    /^[0-9]+$/.test(name.slice(stem.length + 2, name.length - ext.length - 1));
  const rank = (name: string) => (name === own ? 0 : numbered(name) ? 1 : 2);
  return names
    .map((name) => ({ name, rank: rank(name) }))
    .sort((x, y) => x.rank - y.rank || (x.name < y.name ? -1 : 1))
    .map((x) => x.name);
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
  const want = Buffer.from(d.digest, 'base64url');
  for (const name of ownNamesFirst(names, safeName(d.name))) {
    if (PART.test(name)) continue;
    const path = join(dir, name);
    let fh: FileHandle | undefined;
    try {
      // non-blocking: opening a FIFO planted there must not wait for a writer
      fh = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
      const st = await fh.stat();
      if (!st.isFile() || st.size !== d.size) continue;
      const digest = await sealedDigest(fh, d);
      if (digest.length === want.length && timingSafeEqual(digest, want)) return path;
    } catch {
      // unreadable, or gone meanwhile: not the copy
    } finally {
      await fh?.close().catch(() => undefined);
    }
  }
  return undefined;
}

/** Longest saved name, in UTF-8 bytes: room under the usual 255-byte limit for ` (999)`. */
const NAME_BYTES = 200;
const EXT_BYTES = 32;
/** Control characters, and the invisible ones that change how a name reads (bidi overrides, zero widths). */
const HIDDEN_CHARS = /[\p{Cc}\p{Cf}]/gu;

/** `text` cut to at most `bytes` UTF-8 bytes, on a character boundary. */
function cutUtf8(text: string, bytes: number): string {
  let out = '';
  let used = 0;
  for (const ch of text) {
    used += Buffer.byteLength(ch);
    if (used > bytes) break;
    out += ch;
  }
  return out;
}

/**
 * A file name of our own choosing from the sender's: no directories, no hidden file, no
 * leading dash (read as an option by a shell command over the directory), no control or
 * invisible characters, short enough for the file system.
 */
export function safeName(name: string): string {
  const base = basename(name.normalize('NFC').replace(/\\/g, '/')).replace(HIDDEN_CHARS, '_');
  let cleaned = base.replace(/^[.\s-]+/, '').replace(/\s+$/, '');
  if (Buffer.byteLength(cleaned) > NAME_BYTES) {
    const ext = extname(cleaned);
    const keep = ext.length > 1 && Buffer.byteLength(ext) <= EXT_BYTES ? ext : '';
    cleaned = cutUtf8(cleaned.slice(0, cleaned.length - keep.length), NAME_BYTES - Buffer.byteLength(keep)) + keep;
  }
  return cleaned === '' ? 'attachment' : cleaned;
}

/**
 * Gives the checked file at `tmp` its name in `dir`: the sender's, else `name (n).ext`.
 * A hard link never replaces what is there (a file, or a symlink planted under that name);
 * where the file system has no hard links, an exclusive copy does the same.
 */
async function place(tmp: string, dir: string, name: string): Promise<string> {
  const [stem, ext] = stemAndExt(name);
  for (let i = 0; i <= 1000; i++) {
    const path = join(dir, i === 0 ? name : `${stem} (${i})${ext}`);
    try {
      await link(tmp, path).catch((err: NodeJS.ErrnoException) => {
        if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EMLINK', 'ENOSYS'].includes(err.code ?? '')) throw err;
        return copyFile(tmp, path, constants.COPYFILE_EXCL);
      });
      return path;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw new DaemonError('validation_failed', `Cannot write into ${dir}: ${(err as Error).message}`);
    }
  }
  throw new DaemonError('validation_failed', `Cannot write into ${dir}: ${name} and 1000 numbered names exist`);
}

/** Fetches, checks and decrypts the attachment of a message into `dir` (never over an existing file). */
export async function saveAttachment(session: AgentSession, messageId: string, dir: string): Promise<SavedAttachment> {
  if (!isAbsolute(dir)) throw new DaemonError('validation_failed', 'dir must be an absolute path');
  const m = session.archive.getMessage(messageId);
  if (!m) throw new DaemonError('unknown_message', `No archived message ${messageId}.`);
  const d = m.content_type === 'media' ? parseDescriptor(m.content) : undefined;
  if (!d) throw new DaemonError('not_an_attachment', `Message ${messageId} carries no attachment.`);
  const alreadySaved = (path: string): SavedAttachment => ({
    message_id: messageId,
    path,
    size: d.size,
    media_type: d.media_type,
    name: d.name,
    already_saved: true,
  });
  // said plainly, not as the errno of the temporary file written there
  const where = await stat(dir).catch(() => undefined);
  if (!where?.isDirectory()) {
    throw new DaemonError(
      'validation_failed',
      where ? `${dir} is not a directory: save into a directory.` : `There is no directory ${dir}: create it first.`,
    );
  }
  const tmp = join(dir, `.svc-${randomBytes(8).toString('hex')}.part`);
  let fh: FileHandle;
  try {
    fh = await open(tmp, 'wx', 0o600);
  } catch (err) {
    // a directory we cannot write to may still hold the copy saved before
    const copy = await savedCopy(dir, d);
    if (copy) return alreadySaved(copy);
    throw new DaemonError('validation_failed', `Cannot write into ${dir}: ${(err as Error).message}`);
  }
  let path: string;
  try {
    try {
      await downloadInto(session, d, fh);
      // on disk before the relay is told it may delete its copy
      await fh.sync();
    } finally {
      await fh.close();
    }
    path = await place(tmp, dir, safeName(d.name));
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    // the relay deletes a blob once it is saved: a copy in `dir` is the file, saved already
    if (relayCode(err) !== 'unknown_blob') throw err;
    const copy = await savedCopy(dir, d);
    if (copy) return alreadySaved(copy);
    throw new DaemonError(
      'unknown_blob',
      m.direction === 'outbound'
        ? `The relay no longer has ${d.name} (message ${messageId}, which you sent): it deletes an attachment once its recipient saves it, and when it expires. No copy of it is in ${dir}.`
        : `The relay no longer has ${d.name} (message ${messageId}): it deletes an attachment once it is saved, and when it expires. No copy of it is in ${dir}; if you saved it before, it is where you saved it.`,
      { cause: err },
    );
  }
  await unlink(tmp).catch(() => undefined);
  // the recipient has it: the relay may delete the blob (best effort; retention does it otherwise)
  if (m.direction === 'inbound') {
    await session.relay
      .call({ method: 'POST', path: `/api/v1/blobs/${d.blob_id}/ack`, body: {}, timeoutMs: 15_000 })
      .catch((err) =>
        session.log.warn({ agent: session.name, blob_id: d.blob_id, err: (err as Error).message }, 'blob ack failed'),
      );
  }
  return { message_id: messageId, path, size: d.size, media_type: d.media_type, name: d.name };
}
