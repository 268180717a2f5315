/**
 * Editing files the user owns (assistant settings): read as bytes, write atomically (a
 * temp file in the same directory, fsynced, renamed over) with the file's own mode, and
 * keep a copy of what was there under $SVC_HOME/integrations/backups before changing it.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export async function readIfExists(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** Creates the directory if needed; true when it did (so an uninstall can remove it again). */
export async function ensureDir(dir: string): Promise<boolean> {
  try {
    await stat(dir);
    return false;
  } catch {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return true;
  }
}

export async function writeAtomic(path: string, data: Buffer | string): Promise<void> {
  let mode = 0o600;
  try {
    mode = (await stat(path)).mode & 0o777;
  } catch {
    // a new file: private
  }
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, mode);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** A copy of `data` (the file before a change) under $SVC_HOME/integrations/backups. */
export async function backup(svcHome: string, name: string, data: Buffer): Promise<string> {
  const dir = join(svcHome, 'integrations', 'backups');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${name}.${new Date().toISOString().replace(/[:.]/g, '-')}.bak`);
  await writeAtomic(file, data);
  return file;
}

/** Why `path` is not an executable file, or undefined when it is one. */
export async function notExecutable(path: string): Promise<string | undefined> {
  let s: Awaited<ReturnType<typeof stat>>;
  try {
    s = await stat(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'no such file' : (err as Error).message;
  }
  if (s.isDirectory()) return 'a directory, not a file';
  if (!s.isFile()) return 'not a regular file';
  try {
    await access(path, constants.X_OK);
    return undefined;
  } catch {
    return 'not executable';
  }
}

/** The first executable `name` on PATH. */
export async function onPath(name: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  for (const dir of (env.PATH ?? '').split(':')) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      const s = await stat(candidate);
      if (s.isFile() && (s.mode & 0o111) !== 0) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A word for a POSIX shell command line. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
