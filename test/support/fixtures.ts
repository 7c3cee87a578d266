/**
 * Small hand-made records for operation tests, inserted through the same store functions the seeder uses.
 */
import { recordDef } from '../../src/catalog/index.js';
import type { Secrets } from '../../src/crypto/secrets.js';
import type { Db } from '../../src/database/database.js';
import { insertRows, toRow, type Row, type WireRecord } from '../../src/store/records.js';

/** Inserts wire records of one type, each with its parent key columns. */
export async function insert(
  db: Db,
  secrets: Secrets,
  recordName: string,
  records: readonly (WireRecord & { keys?: Row })[],
): Promise<void> {
  const record = recordDef(recordName);
  await insertRows(
    db,
    record,
    records.map(({ keys, ...values }) => toRow(record, values, keys ?? {}, secrets)),
  );
}

export const account = (n: number) => String(n).padStart(10, '0');
