/**
 * Idempotency keys of write operations. The key is reserved inside the operation's own transaction, so
 * a retry either sees the committed response or waits for the first attempt to finish; a failed attempt
 * rolls its reservation back and the retry runs afresh.
 */
import { sql } from 'kysely';
import type { Db } from '../database/database.js';
import { fixedTables } from '../database/tables.js';

/** The database's time `hours` ago: keys created before it are expired. */
const expiredBefore = (hours: number) => sql<Date>`now() - make_interval(hours => ${hours})`;

export type Reservation =
  | { readonly kind: 'reserved' }
  | { readonly kind: 'replay'; readonly status: number | null; readonly response: unknown }
  | { readonly kind: 'conflict' };

export const idempotencyKeys = {
  /**
   * Reserves (tokenName, key) for a request, or returns what an earlier request with that key got. A key
   * older than `retentionHours` (`config.idempotencyRetentionHours`) is forgotten, as the sweep would have.
   */
  async reserve(
    trx: Db,
    tokenName: string,
    key: string,
    requestHash: string,
    retentionHours: number,
  ): Promise<Reservation> {
    const keys = fixedTables(trx);
    await keys
      .deleteFrom('idempotency_key')
      .where('token_name', '=', tokenName)
      .where('key', '=', key)
      .where('created_at', '<', expiredBefore(retentionHours))
      .execute();
    const inserted = await keys
      .insertInto('idempotency_key')
      .values({ token_name: tokenName, key, request_hash: requestHash })
      .onConflict((oc) => oc.doNothing())
      .returning('key')
      .executeTakeFirst();
    if (inserted) return { kind: 'reserved' };
    const row = await keys
      .selectFrom('idempotency_key')
      .select(['request_hash', 'status', 'response'])
      .where('token_name', '=', tokenName)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!row || row.request_hash !== requestHash) return { kind: 'conflict' };
    return { kind: 'replay', status: row.status, response: row.response };
  },

  async complete(trx: Db, tokenName: string, key: string, status: number, response: unknown): Promise<void> {
    await fixedTables(trx)
      .updateTable('idempotency_key')
      .set({ status, response: sql<string>`${JSON.stringify(response)}::jsonb` })
      .where('token_name', '=', tokenName)
      .where('key', '=', key)
      .execute();
  },

  /** Deletes every key older than `retentionHours`; returns how many. Run periodically (http/maintenance.ts). */
  async sweep(db: Db, retentionHours: number): Promise<number> {
    const result = await fixedTables(db)
      .deleteFrom('idempotency_key')
      .where('created_at', '<', expiredBefore(retentionHours))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  },
};
