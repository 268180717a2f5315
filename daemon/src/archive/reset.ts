/**
 * `svc recover reset-db`: an agent's archive set aside and a new one started. The peers'
 * pinned keys are what the new archive must not lose (without them a relay could hand it
 * any key as a first contact), so they are carried over from the old file when it can be
 * read; the rest stays in the file set aside.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Archive } from './archive.js';
import { receiptFile } from './integrity.js';

type Row = Record<string, unknown>;

/** The pinned peer keys of the archive at `file`, read-only; undefined when the file cannot be read. */
export function readPins(file: string): Row[] | undefined {
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    return db.prepare('SELECT * FROM peer_keys').all() as Row[];
  } catch {
    return undefined;
  } finally {
    db?.close();
  }
}

/** Writes `rows` into the new archive's pins, the columns both know; how many were kept. */
export function keepPins(archive: Archive, rows: Row[]): number {
  const known = new Set((archive.db.pragma('table_info(peer_keys)') as Array<{ name: string }>).map((c) => c.name));
  let kept = 0;
  archive.db.transaction(() => {
    for (const row of rows) {
      const columns = Object.keys(row).filter((c) => known.has(c));
      const insert = archive.db.prepare(
        `INSERT OR IGNORE INTO peer_keys (${columns.map((c) => `"${c}"`).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
      );
      try {
        kept += insert.run(...columns.map((c) => row[c])).changes;
      } catch {
        // a row the new schema cannot take (a damaged file's): left in the old file
      }
    }
  })();
  return kept;
}

/** Renames the archive and its WAL files to `<file>.reset-<time>`; the path set aside. */
export function setArchiveAside(file: string, now = new Date()): string {
  const aside = `${file}.reset-${now.toISOString().replace(/[:.]/g, '-')}`;
  renameSync(file, aside);
  for (const suffix of ['-wal', '-shm']) if (existsSync(file + suffix)) renameSync(file + suffix, aside + suffix);
  rmSync(receiptFile(file), { force: true });
  return aside;
}
