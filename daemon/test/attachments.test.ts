/**
 * Attachments through a REAL relay (blob route, tenant JetStream store) between two
 * daemons, behind the hostile-relay stand-in: a file of a few MiB round-trips byte for
 * byte, encrypted on the sender's machine; a blob altered on the way is refused and never
 * written; the size limit answers clearly; a blob goes once its recipient has it; media
 * into a group is refused.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '@svc/test-harness';
import { relayAs } from '@svc/test-harness/as-agent';
import type { TestDaemon } from '@svc/test-harness/daemon';
import { type DaemonsOnRelay, startDaemonsOnRelay } from '@svc/test-harness/daemons-on-relay';
import type { RelayProcess } from '@svc/test-harness/relay-process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArchivedMessage, DaemonEvent } from '../src/client/index.js';
import { type FaultProxy, startFaultProxy } from './fault-proxy.js';

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
  stage = await startDaemonsOnRelay({
    agents: ['alice', 'bob'],
    relayEnv: { SVC_RELAY_BLOB_MAX_BYTES: String(4 * MIB) },
    front: async (relayPort) => {
      proxy = await startFaultProxy(relayPort);
      return proxy;
    },
  });
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
    // elsewhere, without a copy: the relay deleted it once saved, and the error says so
    await expect(
      b.client.saveAttachment('bob', m.message_id, mkdtempSync(join(tmpdir(), 'svc-attach-save-'))),
    ).rejects.toMatchObject({
      code: 'unknown_blob',
      message: expect.stringMatching(/once it is saved.*No copy of it is in/),
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
    await expect(
      a.client.send('alice', { to: 'bob', content: '{"not":"a descriptor"}', content_type: 'media' }),
    ).rejects.toMatchObject({ code: 'validation_failed' });
  });
});
