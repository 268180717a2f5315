/**
 * Files that hold secrets or private data (the vault, the archive and its WAL, the log,
 * the pid file, the socket) are the owner's alone: 0600, whatever the umask and whatever
 * the mode of a directory, or of the file itself, that existed before the daemon.
 */
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';

export const PRIVATE_FILE_MODE = 0o600;

/** Creates `path` empty if it is missing, and sets it (new or old) to 0600. */
export function ensurePrivateFile(path: string): void {
  closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
  chmodSync(path, PRIVATE_FILE_MODE);
}

/** Sets to 0600 those of `paths` that exist. */
export function restrictExisting(...paths: string[]): void {
  for (const p of paths) if (existsSync(p)) chmodSync(p, PRIVATE_FILE_MODE);
}
