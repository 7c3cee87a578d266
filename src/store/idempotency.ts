/**
 * Idempotency keys of write operations. The key is reserved inside the operation's own transaction, so
 * a retry either sees the committed response or waits for the first attempt to finish; a failed attempt
 * rolls its reservation back and the retry runs afresh.
 */
import { sql } from 'kysely';
import type { Db } from './database.js';

/** How long a key is remembered unless configured otherwise: the default of `COREGATE_IDEMPOTENCY_RETENTION_HOURS`. */
export const IDEMPOTENCY_TTL_HOURS = 24;

export type Reservation =
  | { readonly kind: 'reserved' }
  | { readonly kind: 'replay'; readonly status: number; readonly response: unknown }
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
    retentionHours: number = IDEMPOTENCY_TTL_HOURS,
  ): Promise<Reservation> {
    await sql`delete from idempotency_key where token_name = ${tokenName} and key = ${key}
      and created_at < now() - make_interval(hours => ${retentionHours})`.execute(trx);
    const inserted = await sql`insert into idempotency_key (token_name, key, request_hash)
      values (${tokenName}, ${key}, ${requestHash}) on conflict do nothing returning key`.execute(trx);
    if (inserted.rows.length > 0) return { kind: 'reserved' };
    const existing = await sql<{ request_hash: string; status: number; response: unknown }>`
      select request_hash, status, response from idempotency_key
      where token_name = ${tokenName} and key = ${key}`.execute(trx);
    const row = existing.rows[0];
    if (!row || row.request_hash !== requestHash) return { kind: 'conflict' };
    return { kind: 'replay', status: row.status, response: row.response };
  },

  async complete(trx: Db, tokenName: string, key: string, status: number, response: unknown): Promise<void> {
    await sql`update idempotency_key set status = ${status}, response = ${JSON.stringify(response)}::jsonb
      where token_name = ${tokenName} and key = ${key}`.execute(trx);
  },

  /** Deletes every key older than `retentionHours`; returns how many. Run periodically (http/maintenance.ts). */
  async sweep(db: Db, retentionHours: number): Promise<number> {
    const result = await sql`delete from idempotency_key
      where created_at < now() - make_interval(hours => ${retentionHours})`.execute(db);
    return Number(result.numAffectedRows ?? 0);
  },
};
