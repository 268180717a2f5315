/**
 * Attachments through a REAL relay (blob route, tenant JetStream store) between two
 * daemons, behind the hostile-relay stand-in: a file of a few MiB round-trips byte for
 * byte, encrypted on the sender's machine; a blob altered on the way is refused and never
 * written; the size limit answers clearly; a blob goes once its recipient has it; media
 * into a group is refused. Then the hostile cases: a peer's descriptor naming the file to
 * escape the directory, hide or disguise it, or to print escapes; a relay serving more than
 * was signed, cutting a blob short, or serving a large one to fill the daemon's memory.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '@svc/test-harness';
import { relayAs } from '@svc/test-harness/as-agent';
import type { TestDaemon } from '@svc/test-harness/daemon';
import type { DaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import type { RelayProcess } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArchivedMessage, DaemonEvent } from '../src/client/index.js';
import { encryptFile } from '../src/messaging/attachments.js';
import { type FaultProxy, startBehindFaultProxy } from './fault-proxy.js';

const MIB = 1024 * 1024;
let proxy: FaultProxy;
let stage: DaemonsOnRelay<'alice' | 'bob'>;
let relay: RelayProcess;
let grant: (agentId: string) => Promise<string>;
let a: TestDaemon;
let b: TestDaemon;
const files = mkdtempSync(join(tmpdir(), 'svc-attach-'));

const file = (name: string, bytes: Buffer) => {
  const path = join(files, name);
  writeFileSync(path, bytes);
  return path;
};

const arrived = (messageId: string) =>
  until(
    async () => (await b.client.read('bob', 'alice').catch(() => [])).find((m) => m.message_id === messageId),
    15_000,
    `bob has ${messageId}`,
  ) as Promise<ArchivedMessage>;

beforeAll(async () => {
  ({ stage, proxy } = await startBehindFaultProxy({
    agents: ['alice', 'bob'],
    relayEnv: { SVC_RELAY_BLOB_MAX_BYTES: String(4 * MIB) },
  }));
  ({ relay, grant } = stage);
  ({ alice: a, bob: b } = stage.daemons);
}, 90_000);

afterAll(() => stage?.close());

describe('attachments', () => {
  it('a file of a few MiB round-trips byte for byte; the relay only ever had ciphertext', async () => {
    const bytes = randomBytes(3 * MIB + 123);
    const sent = await a.client.send('alice', {
      to: 'bob',
      content: 'the report',
      file_path: file('report.pdf', bytes),
    });
    const m = await arrived(sent.message_id);
    expect(m.content_type).toBe('media');
    const d = JSON.parse(m.content);
    expect(d).toMatchObject({
      name: 'report.pdf',
      media_type: 'application/pdf',
      size: bytes.length,
      caption: 'the report',
    });
    // the envelope the relay saw holds no file name, caption or key in the clear
    const env = JSON.stringify(proxy.posted.find((e) => e.header.message_id === sent.message_id));
    expect(env).not.toContain('report.pdf');
    expect(env).not.toContain(d.key);
    const dir = mkdtempSync(join(tmpdir(), 'svc-attach-save-'));
    const saved = await b.client.saveAttachment('bob', m.message_id, dir);
    expect(saved).toMatchObject({ path: join(dir, 'report.pdf'), size: bytes.length, media_type: 'application/pdf' });
    expect(readFileSync(saved.path).equals(bytes)).toBe(true);
    // both transfers were reported for a progress bar, up to their whole size
    const transfers = [...stage.events.alice, ...stage.events.bob].filter(
      (e): e is Extract<DaemonEvent, { type: 'transfer' }> => e.type === 'transfer',
    );
    const up = transfers.filter((e) => e.agent === 'alice' && e.direction === 'upload');
    const down = transfers.filter((e) => e.agent === 'bob' && e.direction === 'download');
    expect(up.length).toBeGreaterThan(1);
    expect(up.at(-1)).toMatchObject({ name: 'report.pdf', done: bytes.length + 16, total: bytes.length + 16 });
    expect(down.at(-1)).toMatchObject({ name: 'report.pdf', done: bytes.length + 16, total: bytes.length + 16 });
    // bob acknowledged it: the relay deleted the blob
    await expect(relayAs(a, 'alice', 'GET', `blobs/${d.blob_id}`)).resolves.toMatchObject({
      status: 404,
      body: { error: 'unknown_blob' },
    });
    // saved again: the copy there is the file (whatever its name), so it is reported saved
    renameSync(saved.path, join(dir, 'renamed.pdf'));
    writeFileSync(join(dir, 'same-size.pdf'), randomBytes(bytes.length)); // not the copy
    expect(await b.client.saveAttachment('bob', m.message_id, dir)).toMatchObject({
      path: join(dir, 'renamed.pdf'),
      already_saved: true,
    });
    // several copies (another message may carry the same bytes under its own name): the one
    // named is this message's, by its name or a numbered one (it was the first readdir gave)
    for (const other of ['a.pdf', 'b.pdf', 'c.pdf', 'report (copy).pdf', 'x.pdf', 'y.pdf', 'z.pdf'])
      writeFileSync(join(dir, other), bytes);
    writeFileSync(join(dir, 'report (2).pdf'), bytes);
    expect(await b.client.saveAttachment('bob', m.message_id, dir)).toMatchObject({
      path: join(dir, 'report (2).pdf'),
      already_saved: true,
    });
    writeFileSync(join(dir, 'report.pdf'), bytes);
    expect((await b.client.saveAttachment('bob', m.message_id, dir)).path).toBe(join(dir, 'report.pdf'));
    for (const other of [
      'a.pdf',
      'b.pdf',
      'c.pdf',
      'report (copy).pdf',
      'x.pdf',
      'y.pdf',
      'z.pdf',
      'report (2).pdf',
      'report.pdf',
    ])
      rmSync(join(dir, other));
    // elsewhere, without a copy: the relay deleted it once saved, and the error says so
    await expect(
      b.client.saveAttachment('bob', m.message_id, mkdtempSync(join(tmpdir(), 'svc-attach-save-'))),
    ).rejects.toMatchObject({
      code: 'unknown_blob',
      message: expect.stringMatching(/once it is saved.*No copy of it is in/),
    });
    // no directory there, or a file: said so (it was the errno of a temporary file's name)
    const missing = join(dir, 'not-made');
    await expect(b.client.saveAttachment('bob', m.message_id, missing)).rejects.toMatchObject({
      code: 'validation_failed',
      message: `There is no directory ${missing}: create it first.`,
    });
    await expect(b.client.saveAttachment('bob', m.message_id, join(dir, 'same-size.pdf'))).rejects.toMatchObject({
      code: 'validation_failed',
      message: `${join(dir, 'same-size.pdf')} is not a directory: save into a directory.`,
    });
  });

  it('a blob altered on the way is refused and nothing is written', async () => {
    const sent = await a.client.send('alice', {
      to: 'bob',
      content: '',
      file_path: file('data.bin', randomBytes(MIB)),
    });
    const m = await arrived(sent.message_id);
    const dir = mkdtempSync(join(tmpdir(), 'svc-attach-save-'));
    proxy.tamperBlobs = true;
    try {
      await expect(b.client.saveAttachment('bob', m.message_id, dir)).rejects.toMatchObject({
        code: 'attachment_digest_mismatch',
        status: 502,
      });
    } finally {
      proxy.tamperBlobs = false;
    }
    expect(readdirSync(dir)).toEqual([]);
    // the genuine blob is still there and still opens
    const saved = await b.client.saveAttachment('bob', m.message_id, dir);
    expect(saved.path).toBe(join(dir, 'data.bin'));
  });

  it('a file over the relay limit is refused with a clear error, and no message is sent', async () => {
    const before = proxy.posted.length;
    await expect(
      a.client.send('alice', { to: 'bob', content: 'too big', file_path: file('big.bin', randomBytes(5 * MIB)) }),
    ).rejects.toMatchObject({
      code: 'blob_too_large',
      status: 413,
      message: expect.stringMatching(/at most 4194304 bytes/),
    });
    expect(proxy.posted.length).toBe(before);
  });

  it('only the recipient (and the sender) can fetch a blob', async () => {
    const sent = await a.client.send('alice', { to: 'bob', content: '', file_path: file('x.txt', Buffer.from('hi')) });
    const m = await arrived(sent.message_id);
    const d = JSON.parse(m.content);
    const grantCode = await grant('eve');
    const { enrollAgent } = await import('@svc/test-harness/agent-client');
    const eve = await enrollAgent(relay.url, grantCode);
    const res = await fetch(`${relay.url}/api/v1/blobs/${d.blob_id}`, { headers: eve.auth });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: string }).error).toBe('unknown_blob');
  });

  it('a reply carries a file to the sender of the message replied to', async () => {
    const asked = await a.client.send('alice', { to: 'bob', content: 'send me the plan' });
    await arrived(asked.message_id);
    const bytes = randomBytes(4096);
    const sent = await b.client.reply('bob', {
      message_id: asked.message_id,
      content: 'here it is',
      file_path: file('plan.txt', bytes),
    });
    expect(sent.to).toBe('alice');
    const m = (await until(
      async () => (await a.client.read('alice', 'bob').catch(() => [])).find((x) => x.message_id === sent.message_id),
      15_000,
      'alice has the reply',
    )) as ArchivedMessage;
    expect(m.content_type).toBe('media');
    expect(JSON.parse(m.content)).toMatchObject({ name: 'plan.txt', size: bytes.length, caption: 'here it is' });
    const saved = await a.client.saveAttachment('alice', m.message_id, mkdtempSync(join(tmpdir(), 'svc-attach-save-')));
    expect(readFileSync(saved.path).equals(bytes)).toBe(true);
  });

  it('media into a group, and media typed as text, are refused', async () => {
    const g = await a.client.createConversation('alice', { kind: 'group', name: 'g', members: ['bob'] });
    await expect(
      a.client.send('alice', {
        to: '',
        conversation_id: g.conversation_id,
        content: '',
        file_path: file('y.txt', Buffer.from('y')),
      }),
    ).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringMatching(/conversation media is unsupported/),
    });
    // a reply inside the group goes to the group: no file either
    const said = await a.client.send('alice', { to: '', conversation_id: g.conversation_id, content: 'hi all' });
    await expect(
      a.client.reply('alice', { message_id: said.message_id, content: '', file_path: file('z.txt', Buffer.from('z')) }),
    ).rejects.toMatchObject({ code: 'validation_failed', message: expect.stringMatching(/reply with --to/) });
    await expect(
      a.client.send('alice', { to: 'bob', content: '{"not":"a descriptor"}', content_type: 'media' }),
    ).rejects.toMatchObject({ code: 'validation_failed' });
  });
});

const saveDir = () => mkdtempSync(join(tmpdir(), 'svc-attach-save-'));

/** A media message from alice whose descriptor says what a hostile peer wants it to say. */
async function sendDescriptor(fields: Record<string, unknown>): Promise<ArchivedMessage> {
  const d = {
    svc: 'attachment/v1',
    blob_id: randomBytes(16).toString('base64url'),
    name: 'file.bin',
    media_type: 'application/octet-stream',
    size: 1,
    digest: randomBytes(32).toString('base64url'),
    key: randomBytes(32).toString('base64url'),
    nonce: randomBytes(12).toString('base64url'),
    ...fields,
  };
  const sent = await a.client.send('alice', { to: 'bob', content: JSON.stringify(d), content_type: 'media' });
  return arrived(sent.message_id);
}

/** A genuine blob alice encrypted and uploaded for bob, under a descriptor of the peer's own words. */
async function craft(plain: Buffer, fields: Record<string, unknown>): Promise<{ m: ArchivedMessage; sealed: Buffer }> {
  const { sealed, key, nonce, digest } = encryptFile(plain);
  const [bob, { access_token }] = await Promise.all([b.client.getAgent('bob'), a.client.token('alice')]);
  const res = await fetch(`${relay.url}/api/v1/blobs?for=${bob.agent_number}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/octet-stream' },
    body: sealed,
  });
  expect(res.status).toBe(201);
  const { blob_id } = (await res.json()) as { blob_id: string };
  const m = await sendDescriptor({
    blob_id,
    size: plain.length,
    digest,
    key: key.toString('base64url'),
    nonce: nonce.toString('base64url'),
    ...fields,
  });
  return { m, sealed };
}

describe('attachments from a hostile peer', () => {
  it('the saved name stays in DIR, visible, plain and short enough; nothing existing is replaced or followed', async () => {
    const dir = saveDir();
    const outside = mkdtempSync(join(tmpdir(), 'svc-attach-outside-'));
    writeFileSync(join(outside, 'victim.txt'), 'keep me');
    writeFileSync(join(dir, 'report.txt'), 'mine');
    symlinkSync(join(outside, 'victim.txt'), join(dir, 'notes.txt'));
    symlinkSync(join(outside, 'created.txt'), join(dir, 'dangling.txt'));
    const long = 'é'.repeat(250);
    const cases: [name: string, saved: string][] = [
      ['../../escape.txt', 'escape.txt'],
      ['/etc/passwd', 'passwd'],
      ['..\\..\\win.txt', 'win.txt'],
      ['..', 'attachment'],
      ['.bashrc', 'bashrc'],
      ['a\u0000b.txt', 'a_b.txt'],
      // a right-to-left override shows "invoiceexe.pdf" in a file manager
      ['invoice\u202efdp.exe', 'invoice_fdp.exe'],
      ['\u009b31mred.txt', '_31mred.txt'],
      ['zero\u200bwidth.txt', 'zero_width.txt'],
      ['-rf', 'rf'],
      ['report.txt', 'report (1).txt'],
      ['notes.txt', 'notes (1).txt'],
      ['dangling.txt', 'dangling (1).txt'],
      [`${long}.pdf`, `${'é'.repeat(98)}.pdf`],
      [`${'x'.repeat(251)}.txt`, `${'x'.repeat(196)}.txt`],
      [`${'x'.repeat(251)}.txt`, `${'x'.repeat(196)} (1).txt`],
    ];
    for (const [name, expected] of cases) {
      const plain = randomBytes(100);
      const { m } = await craft(plain, { name });
      const saved = await b.client.saveAttachment('bob', m.message_id, dir);
      expect({ name, path: saved.path }).toEqual({ name, path: join(dir, expected) });
      expect(readFileSync(saved.path).equals(plain)).toBe(true);
    }
    expect(readFileSync(join(dir, 'report.txt'), 'utf8')).toBe('mine');
    expect(readFileSync(join(outside, 'victim.txt'), 'utf8')).toBe('keep me');
    expect(readdirSync(outside)).toEqual(['victim.txt']);
    expect(readdirSync(dir).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('a media type that is not one (an escape sequence) is reported as application/octet-stream', async () => {
    const osc52 = '\u001b]52;c;ZXZpbA==\u0007';
    const { m } = await craft(Buffer.from('x'), { name: 'a.txt', media_type: osc52 });
    const saved = await b.client.saveAttachment('bob', m.message_id, saveDir());
    expect(saved.media_type).toBe('application/octet-stream');
  });
});

describe('attachments from a hostile relay', () => {
  it('more bytes than were signed: refused, nothing left in DIR', async () => {
    const { m, sealed } = await craft(randomBytes(4096), { name: 'more.bin' });
    const d = JSON.parse(m.content) as { blob_id: string };
    proxy.blobAnswers.set(d.blob_id, (res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.concat([sealed, randomBytes(1024)]));
    });
    const dir = saveDir();
    try {
      await expect(b.client.saveAttachment('bob', m.message_id, dir)).rejects.toMatchObject({
        code: 'attachment_digest_mismatch',
      });
    } finally {
      proxy.blobAnswers.delete(d.blob_id);
    }
    expect(readdirSync(dir)).toEqual([]);
  });

  it('a blob cut short: refused, no part of it left in DIR; the genuine one then saves', async () => {
    const plain = randomBytes(2 * MIB);
    const { m, sealed } = await craft(plain, { name: 'cut.bin' });
    const d = JSON.parse(m.content) as { blob_id: string };
    proxy.blobAnswers.set(d.blob_id, (res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(sealed.length) });
      res.write(sealed.subarray(0, MIB), () => res.destroy());
    });
    const dir = saveDir();
    try {
      await expect(b.client.saveAttachment('bob', m.message_id, dir)).rejects.toThrow();
    } finally {
      proxy.blobAnswers.delete(d.blob_id);
    }
    expect(readdirSync(dir)).toEqual([]);
    const saved = await b.client.saveAttachment('bob', m.message_id, dir);
    expect(readFileSync(saved.path).equals(plain)).toBe(true);
    expect(readdirSync(dir)).toEqual(['cut.bin']);
  });

  it('a large blob is streamed to disk, never held in memory, and removed when it fails the digest', async () => {
    const size = 160 * MIB;
    const total = size + 16;
    const m = await sendDescriptor({ name: 'big.bin', size });
    const d = JSON.parse(m.content) as { blob_id: string };
    const piece = randomBytes(256 * 1024);
    proxy.blobAnswers.set(d.blob_id, (res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
      let sent = 0;
      const more = () => {
        while (sent < total) {
          const n = Math.min(piece.length, total - sent);
          sent += n;
          if (!res.write(piece.subarray(0, n))) {
            res.once('drain', more);
            return;
          }
        }
        res.end();
      };
      more();
    });
    const dir = saveDir();
    // the daemon runs in this process: its buffers are this process's
    const base = process.memoryUsage().arrayBuffers;
    let peak = base;
    const sample = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 5);
    try {
      await expect(b.client.saveAttachment('bob', m.message_id, dir)).rejects.toMatchObject({
        code: 'attachment_digest_mismatch',
      });
    } finally {
      clearInterval(sample);
      proxy.blobAnswers.delete(d.blob_id);
    }
    // Holding the blob would put at least `size` in buffers; streaming keeps a few
    // chunks live, but collected-later garbage grows under a loaded machine (46 MiB once in
    // CI), so the bound is half the blob, not a quarter.
    expect(peak - base).toBeLessThan(size / 2);
    expect(readdirSync(dir)).toEqual([]);
  }, 60_000);
});
