import { copyFileSync, existsSync, mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { damageLastPage } from '@svc/test-harness/daemon';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Archive } from './archive.js';
import { archiveIntegrity, RECEIPT_MAX_AGE_MS, receiptFile } from './integrity.js';

let dir: string;
let file: string;
let archive: Archive;
const t0 = new Date('2026-06-01T12:00:00Z');
const later = (ms: number) => new Date(t0.getTime() + ms);

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-integrity-'));
  file = join(dir, 'archive.db');
  archive = Archive.open(file);
});
afterEach(() => {
  archive.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The archive closed, its last page damaged, and opened again: it opens, as such a file does. */
function damage(): void {
  archive.close();
  damageLastPage(file);
  archive = Archive.open(file);
}

describe('archiveIntegrity', () => {
  it('a quick check that passed leaves a receipt (0600) that answers for six hours, then checks again', () => {
    const first = archiveIntegrity(archive.db, file, { now: t0 });
    expect(first).toEqual({ kind: 'quick', checked_at: t0.toISOString(), ok: true, problems: [], from_receipt: false });
    expect(statSync(receiptFile(file)).mode & 0o777).toBe(0o600);
    expect(archiveIntegrity(archive.db, file, { now: later(RECEIPT_MAX_AGE_MS - 1) })).toMatchObject({
      checked_at: t0.toISOString(),
      from_receipt: true,
    });
    const again = archiveIntegrity(archive.db, file, { now: later(RECEIPT_MAX_AGE_MS) });
    expect(again).toMatchObject({ from_receipt: false, checked_at: later(RECEIPT_MAX_AGE_MS).toISOString() });
  });

  it('--full-integrity checks every time, and its receipt answers a quick check', () => {
    archiveIntegrity(archive.db, file, { now: t0 });
    const full = archiveIntegrity(archive.db, file, { now: later(1000), full: true });
    expect(full).toMatchObject({ kind: 'full', ok: true, from_receipt: false });
    expect(archiveIntegrity(archive.db, file, { now: later(2000) })).toMatchObject({
      kind: 'full',
      from_receipt: true,
    });
  });

  it('a receipt answers only for the file it was made for, not from the future, not when unreadable', () => {
    archiveIntegrity(archive.db, file, { now: t0 });
    // a clock set back: the receipt is from the future
    expect(archiveIntegrity(archive.db, file, { now: later(-1000) }).from_receipt).toBe(false);
    archiveIntegrity(archive.db, file, { now: t0 });
    // the archive restored from a copy: another file, whatever its name
    archive.close();
    copyFileSync(file, `${file}.copy`);
    renameSync(`${file}.copy`, file);
    archive = Archive.open(file);
    expect(archiveIntegrity(archive.db, file, { now: later(1000) }).from_receipt).toBe(false);
    for (const text of ['{', '{"kind":"quick","checked_at":"x","ok":false}', 'null']) {
      // the receipt as another program, or a bad disk, left it
      writeFileSync(receiptFile(file), text);
      expect(archiveIntegrity(archive.db, file, { now: later(2000) }).from_receipt, text).toBe(false);
    }
  });

  it('a damaged page fails the quick check in SQLite words; no receipt answers for it after', () => {
    archiveIntegrity(archive.db, file, { now: t0 });
    damage();
    // within six hours the receipt still answers a quick check: that is what --full-integrity is for
    expect(archiveIntegrity(archive.db, file, { now: later(1000) })).toMatchObject({ ok: true, from_receipt: true });
    const full = archiveIntegrity(archive.db, file, { now: later(2000), full: true });
    expect(full.ok).toBe(false);
    expect(full.problems.length).toBeGreaterThan(0);
    expect(full.problems.length).toBeLessThanOrEqual(20);
    expect(full.problems.join('\n')).toMatch(/page \d+/);
    expect(full.problems.some((p) => p.startsWith('***'))).toBe(false);
    expect(existsSync(receiptFile(file))).toBe(false);
    const quick = archiveIntegrity(archive.db, file, { now: later(3000) });
    expect(quick).toMatchObject({ kind: 'quick', ok: false, from_receipt: false });
  });
});
