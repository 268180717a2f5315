/**
 * The sign-in challenge table, kept bounded: expired rows go at every new challenge, each
 * agent keeps at most `perAgent` live ones (a newer replaces the oldest, so a flood of
 * requests for one agent never refuses, and so never tells, anything), and the table as a
 * whole at most `max` (past it, requests for every agent id, known or not, are turned away).
 */
import type { ChallengeRow, Ledger } from './ledger.js';

export interface ChallengeBounds {
  perAgent: number;
  max: number;
}

/** Drops expired challenges; true when the table still holds `max` or more live ones. */
export function challengeTableFull(ledger: Ledger, max: number, now: number): boolean {
  return ledger.guarded(() => {
    ledger.stmt('DELETE FROM challenges WHERE expires_at <= ?').run(now);
    const { n } = ledger.stmt('SELECT count(*) AS n FROM challenges').get() as { n: number };
    return n >= max;
  });
}

/** Stores the challenge, first dropping the agent's oldest ones past `perAgent - 1`. */
export function insertBoundedChallenge(ledger: Ledger, c: Omit<ChallengeRow, 'consumed_at'>, perAgent: number): void {
  ledger.guarded(() =>
    ledger.db.transaction(() => {
      ledger
        .stmt(
          `DELETE FROM challenges WHERE id IN (
             SELECT id FROM challenges WHERE agent_row = ? ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)`,
        )
        .run(c.agent_row, Math.max(0, perAgent - 1));
      ledger.insertChallenge(c);
    })(),
  );
}
