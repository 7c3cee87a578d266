/**
 * Queries of the share update path: lock one share record, then write its changed columns and append
 * their history.
 */
import { sql } from 'kysely';
import { recordDef, type RecordDef } from '../catalog/index.js';
import type { Db } from './database.js';
import { insertRows, insertStatement, whereKey, type Row } from './records.js';

/** Where a share record is: account, share and (for sub-records) locator. */
export interface ShareRecordKey {
  readonly accountNumber: string;
  readonly shareId: string | undefined;
  readonly locator: number | undefined;
}

/** The key columns a share record key names (a locator is unique within the account; a ShareId given must match too). */
function keyColumns(key: ShareRecordKey): Row {
  return {
    account_number: key.accountNumber,
    ...(key.shareId === undefined ? {} : { share_id: key.shareId }),
    ...(key.locator === undefined ? {} : { locator: key.locator }),
  };
}

/** The UPDATE of one record's columns from their JSON form. */
function updateStatement(record: RecordDef, key: ShareRecordKey, columns: Row) {
  const list = sql.join(Object.keys(columns).map((c) => sql.id(c)));
  return sql`update ${sql.table(record.table)} set (${list}) = (
      select ${list} from json_populate_record(null::${sql.table(record.table)}, ${JSON.stringify(columns)}::json))
    where ${whereKey(keyColumns(key))}`;
}

export const shareRecords = {
  /** The record's row (all columns), locked until the transaction ends; undefined if there is none. */
  async lock(trx: Db, record: RecordDef, key: ShareRecordKey): Promise<Row | undefined> {
    const result =
      await sql<Row>`select * from ${sql.table(record.table)} where ${whereKey(keyColumns(key))} for update`.execute(
        trx,
      );
    return result.rows[0];
  },

  /**
   * Writes the changed columns of one record and appends its file-maintenance history rows (already in
   * column form) in one statement: one round trip inside the request's transaction instead of two.
   * PostgreSQL converts every value from its JSON form, as in bulk inserts.
   */
  async write(trx: Db, record: RecordDef, key: ShareRecordKey, columns: Row, history: readonly Row[]): Promise<void> {
    const names = Object.keys(columns);
    const historyRecord = recordDef('AccountFmHistory');
    if (names.length === 0 || history.length === 0) {
      // Either may be empty: a request whose every field failed its rules changes nothing.
      if (names.length > 0) await updateStatement(record, key, columns).execute(trx);
      return insertRows(trx, historyRecord, history);
    }
    await sql`with changed as (${updateStatement(record, key, columns)}) ${insertStatement(historyRecord, history)}`.execute(
      trx,
    );
  },
};
