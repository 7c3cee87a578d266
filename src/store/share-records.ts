/**
 * Queries of the share update path: lock one share record, then write its changed columns and append
 * their history.
 */
import { CompiledQuery } from 'kysely';
import { recordDef, type FieldDef, type RecordDef } from '../catalog/index.js';
import type { Db } from '../database/database.js';
import { insertRows, insertSql, jsonRowsSql, quoted, type Row } from './records.js';
import { protectedColumns } from '../database/schema.js';

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

/**
 * A statement's text and parameters, written as text: these run on every update, and Kysely's building
 * and compiling of their node trees showed as about 8% of an update's CPU profile on the embedded database.
 */
class Statement {
  readonly parameters: unknown[] = [];

  /** The placeholder (`$n`) of a new parameter. */
  parameter(value: unknown): string {
    this.parameters.push(value);
    return `$${this.parameters.length}`;
  }

  /** `"column" = $n and …` of a share record key. */
  keyCondition(key: ShareRecordKey): string {
    return Object.entries(keyColumns(key))
      .map(([column, value]) => `${quoted(column)} = ${this.parameter(value)}`)
      .join(' and ');
  }

  compiled(text: string): CompiledQuery {
    return CompiledQuery.raw(text, this.parameters);
  }
}

/** The UPDATE of one record's columns from their JSON form (`jsonRowsSql`). */
function updateSql(statement: Statement, record: RecordDef, key: ShareRecordKey, columns: Row): string {
  const names = Object.keys(columns);
  const list = names.map(quoted).join(', ');
  const values = jsonRowsSql(record, names, statement.parameter(JSON.stringify(columns)), false);
  return `update ${quoted(record.table)} set (${list}) = (select ${list} from ${values})
    where ${statement.keyCondition(key)}`;
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
    const statement = new Statement();
    const text = `select ${[...columns].map(quoted).join(', ')} from ${quoted(record.table)}
      where ${statement.keyCondition(key)} for update`;
    const result = await trx.executeQuery<Row>(statement.compiled(text));
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
    const statement = new Statement();
    if (names.length === 0 || history.length === 0) {
      // Either may be empty: a request whose every field failed its rules changes nothing.
      if (names.length > 0) await trx.executeQuery(statement.compiled(updateSql(statement, record, key, columns)));
      return insertRows(trx, historyRecord, history);
    }
    const update = updateSql(statement, record, key, columns);
    const insert = insertSql(historyRecord, history, statement.parameter(JSON.stringify(history)));
    await trx.executeQuery(statement.compiled(`with changed as (${update}) ${insert}`));
  },
};
