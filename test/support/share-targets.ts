/**
 * The share records the update and read-back suites address: the first of each type in the seeded data,
 * and its address as its update and its single read name it.
 */
import { sql } from 'kysely';
import type { RecordDef } from '../../src/catalog/index.js';
import { locatorName } from '../../src/operations/share-update.js';
import type { Harness } from './harness.js';

export interface ShareTarget {
  readonly accountNumber: string;
  readonly shareId: string;
  readonly locator: number | undefined;
}

/** The first record of a type in the seeded data (for a name, one of a share, not of the account). */
export async function firstShareTarget(h: Harness, record: RecordDef): Promise<ShareTarget> {
  const locator = locatorName(record) ? sql`locator` : sql`null`;
  const { rows } = await sql<{ account_number: string; share_id: string; locator: number | null }>`
    select account_number, share_id, ${locator} as locator from ${sql.table(record.table)}
    where share_id is not null order by account_number, share_id limit 1`.execute(h.database.db);
  const row = rows[0]!;
  return { accountNumber: row.account_number, shareId: row.share_id, locator: row.locator ?? undefined };
}

/** AccountNumber, ShareId and the locator (for a sub-record) of a target. */
export function shareAddress(record: RecordDef, target: ShareTarget): Record<string, unknown> {
  const locator = locatorName(record);
  return {
    AccountNumber: target.accountNumber,
    ShareId: target.shareId,
    ...(locator ? { [locator]: target.locator } : {}),
  };
}
