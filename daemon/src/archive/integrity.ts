/**
 * An archive's integrity, as `svc doctor` checks it. SQLite's quick check (every page's
 * structure, not whether each index matches its table) runs at most every six hours: its
 * result is kept as a receipt beside the archive, and a doctor run within that time reads
 * the receipt. `svc doctor --full-integrity` runs the full check (every page, every index
 * against its table) whatever the receipt says. A check that found a problem is never
 * taken from a receipt: the next run checks again (after a restore, say).
 */
import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { Database } from 'better-sqlite3';
import { PRIVATE_FILE_MODE } from '../private-file.js';

export const RECEIPT_MAX_AGE_MS = 6 * 3600_000;
/** What a check reports at most: the first problems say enough, a damaged file can have thousands. */
const MAX_PROBLEMS = 20;

export interface IntegrityResult {
  kind: 'quick' | 'full';
  checked_at: string;
  ok: boolean;
  problems: string[];
  /** read from the receipt of an earlier check, not checked now */
  from_receipt: boolean;
}

/** The receipt as stored: the result, and which file it was for (a restored archive is another file). */
interface Receipt {
  kind: 'quick' | 'full';
  checked_at: string;
  ok: boolean;
  problems: string[];
  file_id: string;
}

/** The receipt's file for the archive at `archiveFile`. */
export const receiptFile = (archiveFile: string): string => `${archiveFile}.integrity.json`;

/** The archive file's identity: a file put in its place (a restore) has another inode. */
function fileId(archiveFile: string): string {
  const s = statSync(archiveFile);
  return `${s.dev}:${s.ino}`;
}

function readReceipt(file: string): Receipt | undefined {
  try {
    const r = JSON.parse(readFileSync(file, 'utf8')) as Partial<Receipt>;
    const known = r.kind === 'quick' || r.kind === 'full';
    if (!known || typeof r.checked_at !== 'string' || r.ok !== true || typeof r.file_id !== 'string') return undefined;
    return { kind: r.kind as Receipt['kind'], checked_at: r.checked_at, ok: true, problems: [], file_id: r.file_id };
  } catch {
    return undefined; // none yet, or unreadable: check again
  }
}

/** SQLite's own words for each problem, one per line, at most MAX_PROBLEMS. */
function runCheck(db: Database, kind: 'quick' | 'full'): string[] {
  const pragma = kind === 'full' ? 'integrity_check' : 'quick_check';
  const rows = db.pragma(`${pragma}(${MAX_PROBLEMS})`) as Array<Record<string, string>>;
  const lines = rows
    .flatMap((r) => String(Object.values(r)[0] ?? '').split('\n'))
    .filter((l) => l !== 'ok' && l !== '' && !l.startsWith('*** in database'));
  return lines.slice(0, MAX_PROBLEMS);
}

/**
 * The archive's integrity: a receipt younger than six hours of the same file answers a
 * quick check; otherwise the check runs now and, if it passed, leaves a new receipt.
 */
export function archiveIntegrity(
  db: Database,
  archiveFile: string,
  opts: { full?: boolean; now?: Date } = {},
): IntegrityResult {
  const now = opts.now ?? new Date();
  const kind = opts.full ? 'full' : 'quick';
  const id = fileId(archiveFile);
  if (kind === 'quick') {
    const r = readReceipt(receiptFile(archiveFile));
    const age = r ? now.getTime() - Date.parse(r.checked_at) : Number.NaN;
    // a receipt from the future (a clock set back) is no receipt
    if (r && r.file_id === id && age >= 0 && age < RECEIPT_MAX_AGE_MS) {
      return { kind: r.kind, checked_at: r.checked_at, ok: true, problems: [], from_receipt: true };
    }
  }
  let problems: string[];
  try {
    problems = runCheck(db, kind);
  } catch (err) {
    // SQLITE_CORRUPT and the like stop the check itself: that is its answer
    problems = [(err as Error).message];
  }
  const result: IntegrityResult = {
    kind,
    checked_at: now.toISOString(),
    ok: problems.length === 0,
    problems,
    from_receipt: false,
  };
  if (result.ok) writeReceipt(receiptFile(archiveFile), { ...result, file_id: id });
  // a problem found outlives any earlier receipt: no quick run may answer "ok" from it
  else rmSync(receiptFile(archiveFile), { force: true });
  return result;
}

function writeReceipt(file: string, r: IntegrityResult & { file_id: string }): void {
  const { kind, checked_at, ok, problems, file_id } = r;
  try {
    writeFileSync(`${file}.tmp`, `${JSON.stringify({ kind, checked_at, ok, problems, file_id }, null, 2)}\n`, {
      mode: PRIVATE_FILE_MODE,
    });
    renameSync(`${file}.tmp`, file);
  } catch {
    // no receipt (a read-only home): the next doctor run checks again, nothing is lost
  }
}
