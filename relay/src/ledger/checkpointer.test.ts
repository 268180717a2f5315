/**
 * The ledger's WAL checkpoints run in a worker thread: the connection that commits no
 * longer copies pages back into the database file, and the worker does, on a real file.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir, until } from '@svc/test-harness';
import { afterEach, expect, it } from 'vitest';
import { SqliteDatabase } from './sqlite.js';

let open: SqliteDatabase | undefined;

afterEach(async () => {
  await open?.close();
  open = undefined;
});

/** Writes about 400 KiB (some 100 pages: far below SQLite's own checkpoint at 1,000). */
async function write(db: SqliteDatabase): Promise<void> {
  await db.exec('CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
  await db.transaction(async (tx) => {
    for (let i = 0; i < 100; i++) await tx.run('INSERT INTO t (v) VALUES (?)', ['x'.repeat(4000)]);
  });
}

it('a worker copies the log into the database file; the connection does not checkpoint by itself', async () => {
  const file = join(tempDir('svc-checkpoint-'), 'ledger.db');
  const db = SqliteDatabase.open(file);
  open = db;
  db.checkpointInBackground(50);
  expect(db.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
  const before = statSync(file).size;
  await write(db);
  // only a checkpoint moves the rows from the -wal file into the database file
  await until(() => statSync(file).size > before + 300_000, 10_000, 'the worker to checkpoint');
  await db.close();
  open = undefined;
});

it('without the worker the rows stay in the log until SQLite checkpoints at 1,000 pages', async () => {
  const file = join(tempDir('svc-checkpoint-'), 'ledger.db');
  const db = SqliteDatabase.open(file);
  open = db;
  expect(db.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
  const before = statSync(file).size;
  await write(db);
  await new Promise((r) => setTimeout(r, 300));
  expect(statSync(file).size).toBe(before);
});

it('a worker that cannot open the file hands checkpoints back to the connection', async () => {
  const db = SqliteDatabase.open(join(tempDir('svc-checkpoint-'), 'ledger.db'));
  open = db;
  // the worker opens the file by name, and it is gone
  rmSync(db.db.name);
  db.checkpointInBackground(50);
  await until(() => db.db.pragma('wal_autocheckpoint', { simple: true }) === 1000, 10_000, 'checkpoints handed back');
});

it('closing waits for the worker to close its connection, even when nothing else keeps the process alive', () => {
  const file = join(tempDir('svc-checkpoint-'), 'ledger.db');
  // A process whose last work is closing the ledger (a command, a bench): the worker is
  // unreferenced so that it never holds a process open, and a close that waits for it
  // without referencing it again ends the process there, with code 13, mid-close.
  const script = `
    const { SqliteDatabase } = await import(${JSON.stringify(new URL('./sqlite.ts', import.meta.url).href)});
    const db = SqliteDatabase.open(${JSON.stringify(file)});
    db.checkpointInBackground(50);
    await db.close();
    console.log('closed');`;
  const child = spawnSync(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: fileURLToPath(new URL('../../..', import.meta.url)), encoding: 'utf8', timeout: 60_000 },
  );
  expect({ status: child.status, stdout: child.stdout.trim() }).toEqual({ status: 0, stdout: 'closed' });
});
