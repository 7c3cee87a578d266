/**
 * Queries of the share update path: lock one share record, then write its changed columns and append
 * their history.
 */
import { sql } from 'kysely';
import { recordDef, type FieldDef, type RecordDef } from '../catalog/index.js';
import type { Db } from './database.js';
import { insertRows, insertStatement, quoted, whereKey, type Row } from './records.js';
import { protectedColumns } from './schema.js';

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
  /**
   * The record's row, locked until the transaction ends; undefined if there is none. It holds the columns
   * of `fields` (their HMAC and ciphertext for a protected one) and the record's key columns: a share row
   * has two hundred columns, and an update reads a few.
   */
  async lock(trx: Db, record: RecordDef, key: ShareRecordKey, fields: readonly FieldDef[]): Promise<Row | undefined> {
    const columns = new Set([...record.keyColumns.map((k) => k.column), ...record.primaryKey]);
    for (const field of fields) {
      if (!field.protection) columns.add(field.column);
      else Object.values(protectedColumns(field)).forEach((column) => columns.add(column));
    }
    const list = sql.raw([...columns].map(quoted).join(', '));
    const result = await sql<Row>`select ${list} from ${sql.table(record.table)}
      where ${whereKey(keyColumns(key))} for update`.execute(trx);
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
