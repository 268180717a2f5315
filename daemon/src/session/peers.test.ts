/**
 * Peers against a hostile key directory, with a real archive: the directory's answers are
 * set per test (the relay is what is not trusted here; the end-to-end cases, through a
 * real relay behind a proxy, are in daemon/test/untrusted-relay.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type KeyDirectoryEntry, type KeyRecord, keyRecordBytes, toBase64url } from '@svc/shared';
import { deriveIdentityKeys, ed25519Generate, ed25519Sign } from '@svc/shared/node';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../agents/store.js';
import { Archive } from '../archive/archive.js';
import { EventBus } from '../events.js';
import type { AgentRelay } from './agent-relay.js';
import { Peers } from './peers.js';

type IdentityKeys = ReturnType<typeof deriveIdentityKeys>;

const BINDING = { deployment_id: 'dep_test', tenant_id: 'acme' };
const me = { name: 'alice', agent_number: '1001', agent_id: 'alice', ...BINDING, rotation: 0 } as AgentConfig;

let dir: string | undefined;
let archive: Archive | undefined;
afterEach(() => {
  archive?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Peers over a fresh archive; `serve` sets what the directory answers for a ref. */
function setup() {
  dir = mkdtempSync(join(tmpdir(), 'svc-peers-'));
  archive = Archive.open(join(dir, 'archive.db'));
  const answers = new Map<string, KeyDirectoryEntry>();
  const relay = {
    call: async ({ path }: { path: string }) => {
      const ref = decodeURIComponent(path.split('/')[4] ?? '');
      const answer = answers.get(ref);
      if (!answer) throw new Error(`no answer set for ${ref}`);
      return answer;
    },
  } as unknown as AgentRelay;
  const peers = new Peers(() => me, archive, relay, new EventBus());
  return { archive, peers, serve: (ref: string, e: KeyDirectoryEntry) => answers.set(ref, e) };
}

type Owner = { agent_id: string; agent_number: string };

/** A key record of `keys`, signed by `signer` (by default the record's own signing key). */
function record(owner: Owner, keys: IdentityKeys, version: number, signer: IdentityKeys = keys): KeyRecord {
  const r = {
    version,
    signing_public_key: toBase64url(keys.signPublic),
    encryption_public_key: toBase64url(keys.encPublic),
    created_at: `2026-01-0${version}T00:00:00.000Z`,
  };
  const signature = toBase64url(ed25519Sign(signer.signPrivate, keyRecordBytes({ ...BINDING, ...owner, ...r })));
  return { ...r, signature, previous_signature: null } as KeyRecord;
}

const entry = (owner: Owner, current: KeyRecord, history = [current]): KeyDirectoryEntry =>
  ({ ...BINDING, ...owner, current, history }) as KeyDirectoryEntry;

const b64 = (k: Uint8Array) => toBase64url(k);

describe('a hostile key directory', () => {
  it('cannot move a pinned agent to another number when it is asked for by id', async () => {
    const { archive, peers, serve } = setup();
    const bob = { agent_id: 'bob-id', agent_number: '1002' };
    const bobKeys = deriveIdentityKeys(ed25519Generate().privateKey, 0);
    serve('1002', entry(bob, record(bob, bobKeys, 1)));
    expect(b64((await peers.encryptionKeyFor('1002')).key)).toBe(b64(bobKeys.encPublic));
    // asked for bob-id, the relay answers with a number of its own and keys of its own
    const moved = { agent_id: 'bob-id', agent_number: '6666' };
    const evil = deriveIdentityKeys(ed25519Generate().privateKey, 0);
    serve('bob-id', entry(moved, record(moved, evil, 1)));
    await expect(peers.encryptionKeyFor('bob-id')).rejects.toMatchObject({
      code: 'peer_directory_mismatch',
      message: expect.stringContaining('bob-id is pinned as 1002'),
    });
    expect(archive.getPeer('6666')).toBeUndefined();
    // bob asked for by id and answered truthfully: his pin
    serve('bob-id', entry(bob, record(bob, bobKeys, 1)));
    expect(await peers.encryptionKeyFor('bob-id')).toMatchObject({ agentNumber: '1002' });
  });

  describe('a pin made without a version (an agent of this machine, pinned on delivery)', () => {
    const carl = { agent_id: 'carl', agent_number: '1003' };
    const seed = ed25519Generate().privateKey;
    const [k0, k1, k2] = [0, 1, 2].map((r) => deriveIdentityKeys(seed, r)) as [
      IdentityKeys,
      IdentityKeys,
      IdentityKeys,
    ];
    const pinLocally = (a: Archive, keys: IdentityKeys) =>
      a.pinPeer({
        ...carl,
        signing_public_key: b64(keys.signPublic),
        encryption_public_key: b64(keys.encPublic),
        key_version: null,
      });

    it('is not rolled back to an older record the pinned key signed', async () => {
      const { archive, peers, serve } = setup();
      pinLocally(archive, k2); // carl is at rotation 2 (version 3)
      const v1 = record(carl, k0, 1);
      serve('1003', entry(carl, v1)); // his genuine version 1, replayed, his newer ones left out
      expect(b64((await peers.encryptionKeyFor('1003')).key)).toBe(b64(k2.encPublic));
      expect(archive.getPeer('1003')?.key_version).toBeNull();
      // with his history in full the pin learns its version, and the replay stays refused
      serve('1003', entry(carl, v1, [v1, record(carl, k1, 2), record(carl, k2, 3)]));
      expect(b64((await peers.encryptionKeyFor('1003')).key)).toBe(b64(k2.encPublic));
      expect(archive.getPeer('1003')?.key_version).toBe(3);
    });

    it('takes a newer rotation once its own record names its version', async () => {
      const { archive, peers, serve } = setup();
      pinLocally(archive, k1);
      const v2 = record(carl, k1, 2);
      const v3 = record(carl, k2, 3);
      // a record of the pinned keys that another key signed says nothing about its version
      const forged = record(carl, k1, 2, deriveIdentityKeys(ed25519Generate().privateKey, 0));
      serve('1003', entry(carl, v3, [record(carl, k0, 1), forged, v3]));
      expect(b64((await peers.encryptionKeyFor('1003')).key)).toBe(b64(k1.encPublic));
      serve('1003', entry(carl, v3, [record(carl, k0, 1), v2, v3]));
      expect(b64((await peers.encryptionKeyFor('1003')).key)).toBe(b64(k2.encPublic));
      expect(archive.getPeer('1003')?.key_version).toBe(3);
    });
  });
});
