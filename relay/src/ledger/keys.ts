/**
 * The key directory's ledger access: the versions of an agent incarnation's public keys
 * (table agent_key_records, migrations 004 and 009). Only active incarnations are looked up.
 * Version 1 is written at enrollment with the identity's own signature; for incarnations
 * enrolled before that (unsigned version 1) it is derived from the agents row until their
 * first rotation writes it down.
 */
import type { KeyRecord } from '@svc/shared';
import type { Ledger } from './ledger.js';

/** The agents-row fields the key directory needs. */
export interface KeyOwner {
  id: string;
  tenant_id: string;
  agent_id: string;
  agent_number: string;
  signing_public_key: string;
  encryption_public_key: string;
  created_at: number;
}

export type AppendOutcome = 'appended' | 'conflict' | 'revoked';

const OWNER_COLUMNS = 'id, tenant_id, agent_id, agent_number, signing_public_key, encryption_public_key, created_at';
const RECORD_COLUMNS = 'version, signing_public_key, encryption_public_key, created_at, signature, previous_signature';

/** Version 1 of an incarnation enrolled before version 1 was signed: the agents row, unsigned. */
export function enrollmentRecord(owner: KeyOwner): KeyRecord {
  return {
    version: 1,
    signing_public_key: owner.signing_public_key,
    encryption_public_key: owner.encryption_public_key,
    created_at: new Date(owner.created_at).toISOString(),
    signature: null,
    previous_signature: null,
  };
}

export class KeyDirectory {
  constructor(private readonly ledger: Ledger) {}

  /**
   * The active incarnation named by agent number or agent id within the tenant. A number
   * wins over an id when one agent's number is another's id (numbers are the public name).
   */
  activeByRef(tenantId: string, ref: string): Promise<KeyOwner | undefined> {
    return this.ledger.sql.get<KeyOwner>(
      `SELECT ${OWNER_COLUMNS} FROM agents
       WHERE tenant_id = @tenant AND revoked_at IS NULL AND (agent_number = @ref OR agent_id = @ref)
       ORDER BY agent_number = @ref DESC LIMIT 1`,
      { tenant: tenantId, ref },
    );
  }

  /** Every version of the incarnation, oldest first; never empty. */
  async history(owner: KeyOwner): Promise<KeyRecord[]> {
    const stored = await this.ledger.sql.all<KeyRecord>(
      `SELECT ${RECORD_COLUMNS} FROM agent_key_records WHERE agent_row = ? ORDER BY version`,
      [owner.id],
    );
    return stored.length > 0 ? stored : [enrollmentRecord(owner)];
  }

  /**
   * Appends the next version if the incarnation is still active and still at
   * `currentVersion`, and makes its keys the agent's current keys (sign-in uses them).
   * The first append also writes down version 1 from the agents row. The agents row is
   * locked first, so two instances appending at once take turns (the second sees a conflict).
   */
  async append(
    ownerRow: string,
    currentVersion: number,
    next: Omit<KeyRecord, 'version'>,
    now: number,
  ): Promise<AppendOutcome> {
    const ledger = this.ledger;
    return ledger.sql.transaction(async (tx): Promise<AppendOutcome> => {
      const owner = await tx.get<KeyOwner>(
        `SELECT ${OWNER_COLUMNS} FROM agents WHERE id = ? AND revoked_at IS NULL${ledger.forUpdate}`,
        [ownerRow],
      );
      if (!owner) return 'revoked';
      const insert = (r: KeyRecord) =>
        tx.run(
          `INSERT INTO agent_key_records (agent_row, version, signing_public_key, encryption_public_key, created_at,
             signature, previous_signature, recorded_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            ownerRow,
            r.version,
            r.signing_public_key,
            r.encryption_public_key,
            r.created_at,
            r.signature,
            r.previous_signature,
            now,
          ],
        );
      const latest =
        (
          await tx.get<{ v: number | null }>('SELECT max(version) AS v FROM agent_key_records WHERE agent_row = ?', [
            ownerRow,
          ])
        )?.v ?? null;
      if (latest === null) await insert(enrollmentRecord(owner));
      if ((latest ?? 1) !== currentVersion) return 'conflict';
      await insert({ ...next, version: currentVersion + 1 });
      await tx.run('UPDATE agents SET signing_public_key = ?, encryption_public_key = ? WHERE id = ?', [
        next.signing_public_key,
        next.encryption_public_key,
        ownerRow,
      ]);
      return 'appended';
    });
  }
}
