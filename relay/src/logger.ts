/** The relay's loggers. Secrets are redacted by path; tokens never appear in messages. */
import { type DestinationStream, type Logger, pino } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  '*.api_key',
  '*.enrollment_code',
  '*.secret',
  '*.seed',
  '*.token',
  '*.access_token',
  '*.webhook_secret',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    { name: 'svc-relay', level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } },
    destination ?? process.stderr,
  );
}

export type SubsystemName =
  | 'relay:http'
  | 'relay:auth'
  | 'relay:enrollment'
  | 'relay:ledger'
  | 'relay:bus'
  | 'relay:deployment';
export const subsystem = (root: Logger, name: SubsystemName): Logger => root.child({ subsystem: name });
