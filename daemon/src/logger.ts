/**
 * The daemon's loggers: pino JSON into $SVC_HOME/logs/daemon.log. Secrets are redacted
 * by path, and no code logs keys, tokens, API keys or plaintext in the first place.
 */
import { mkdirSync } from 'node:fs';
import { type DestinationStream, type Logger, multistream, pino } from 'pino';
import { ensurePrivateFile } from './private-file.js';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  '*.api_key',
  '*.enrollment_code',
  '*.seed',
  '*.token',
  '*.access_token',
  '*.content',
  '*.passphrase',
];

export function createLogger(opts: { level: string; file: string; dir: string; stderr?: boolean }): Logger {
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  ensurePrivateFile(opts.file);
  const file = pino.destination({ dest: opts.file, mkdir: true, sync: true });
  const streams: DestinationStream = opts.stderr ? multistream([{ stream: file }, { stream: process.stderr }]) : file;
  return pino(
    { name: 'svc-daemon', level: opts.level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
    streams,
  );
}

export type SubsystemName =
  | 'daemon:http'
  | 'daemon:vault'
  | 'daemon:archive'
  | 'daemon:deployments'
  | 'daemon:agents'
  | 'daemon:session'
  | 'daemon:dashboard'
  | 'daemon:local-stack';
export const subsystem = (root: Logger, name: SubsystemName): Logger => root.child({ subsystem: name });
