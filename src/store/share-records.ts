/**
 * Queries of the share update path: lock one share record, write the changed columns, append history.
 */
import { sql } from 'kysely';
import { recordDef, type RecordDef } from '../catalog/index.js';
import type { Db } from './database.js';
import { insertRows, type Row } from './records.js';

/** Where a share record is: account, share and (for sub-records) locator. */
export interface ShareRecordKey {
  readonly accountNumber: string;
  readonly shareId: string | undefined;
  readonly locator: number | undefined;
}

function where(key: ShareRecordKey) {
  return sql.join(
    [
      sql`account_number = ${key.accountNumber}`,
      ...(key.shareId === undefined ? [] : [sql`share_id = ${key.shareId}`]),
      ...(key.locator === undefined ? [] : [sql`locator = ${key.locator}`]),
    ],
    sql` and `,
  );
}

export const shareRecords = {
  /** The record's row (all columns), locked until the transaction ends; undefined if there is none. */
  async lock(trx: Db, record: RecordDef, key: ShareRecordKey): Promise<Row | undefined> {
    const result = await sql<Row>`select * from ${sql.table(record.table)} where ${where(key)} for update`.execute(trx);
    return result.rows[0];
  },

  /** Writes columns of one record; PostgreSQL converts each from its JSON form, as in bulk inserts. */
  async update(trx: Db, record: RecordDef, key: ShareRecordKey, columns: Row): Promise<void> {
    const names = Object.keys(columns);
    if (names.length === 0) return;
    const list = sql.join(names.map((c) => sql.id(c)));
    await sql`update ${sql.table(record.table)} set (${list}) = (
        select ${list} from json_populate_record(null::${sql.table(record.table)}, ${JSON.stringify(columns)}::json))
      where ${where(key)}`.execute(trx);
  },

  /** Appends file-maintenance history rows (already in column form). */
  appendHistory(trx: Db, rows: readonly Row[]): Promise<void> {
    return insertRows(trx, recordDef('AccountFmHistory'), rows);
  },
};
