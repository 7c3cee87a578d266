/**
 * The one secret of a store (docs/decisions.md, "One secret per store, checked"). A store's sealed values
 * (SSNs, card and MICR numbers) are HMACs and ciphertexts that only the secret they were sealed under
 * matches and opens: under another, a lookup silently finds nothing. So a store records the fingerprint of
 * the secret it was created with (crypto/secrets.ts `fingerprint`), and whoever opens it compares their own
 * (runtime.ts) before reading or writing anything else.
 */
import { sql } from 'kysely';
import { RECORDS } from '../catalog/index.js';
import type { Secrets } from '../crypto/secrets.js';
import type { Db } from '../database/database.js';
import { protectedColumns } from '../database/schema.js';
import { fixedTables } from '../database/tables.js';

/** Every protected field's ciphertext column, by table. */
const SEALED_COLUMNS = RECORDS.flatMap((record) =>
  record.fields
    .filter((field) => field.protection)
    .map((field) => ({ table: record.table, column: protectedColumns(field).cipher })),
);

export const storeSecret = {
  /**
   * The fingerprint the store records; undefined when it records none: a new store, or one from before
   * fingerprints (whose table may not exist yet, since this is read before migrating).
   */
  async recorded(db: Db): Promise<Buffer | undefined> {
    const { rows } = await sql<{ present: boolean }>`
      select to_regclass('coregate_store_secret') is not null as present`.execute(db);
    if (!rows[0]?.present) return undefined;
    const row = await fixedTables(db).selectFrom('coregate_store_secret').select('fingerprint').executeTakeFirst();
    return row ? Buffer.from(row.fingerprint) : undefined;
  },

  /**
   * Records `fingerprint` unless the store records one already, and returns the one it records. Instances
   * starting together on a store that records none each insert theirs; one insert wins, and each compares
   * against the winner, so they agree on which secret is the store's.
   */
  async record(db: Db, fingerprint: Buffer): Promise<Buffer> {
    const table = fixedTables(db);
    await table
      .insertInto('coregate_store_secret')
      .values({ fingerprint })
      .onConflict((conflict) => conflict.column('singleton').doNothing())
      .execute();
    const row = await table.selectFrom('coregate_store_secret').select('fingerprint').executeTakeFirstOrThrow();
    return Buffer.from(row.fingerprint);
  },

  /**
   * Whether the values the store holds sealed open under `secrets`, tried on one value of each protected
   * column that holds any: how the secret of a store from before fingerprints is known. True for a store that
   * holds none. Columns a store's schema lacks (it is read before migrating) are passed over.
   */
  async opensSealedValues(db: Db, secrets: Secrets): Promise<boolean> {
    const { rows: present } = await sql<{ table: string; column: string }>`
      select table_name as "table", column_name as "column" from information_schema.columns
      where table_schema = current_schema() and column_name like '%\_enc'`.execute(db);
    const has = new Set(present.map(({ table, column }) => `${table}.${column}`));
    for (const { table, column } of SEALED_COLUMNS.filter((sealed) => has.has(`${sealed.table}.${sealed.column}`))) {
      const { rows } = await sql<{ sealed: Uint8Array }>`
        select ${sql.ref(column)} as sealed from ${sql.table(table)} where ${sql.ref(column)} is not null limit 1`.execute(
        db,
      );
      if (rows[0] === undefined) continue;
      try {
        secrets.decrypt(rows[0].sealed);
      } catch {
        // AES-GCM's tag does not verify: the value was sealed under another key.
        return false;
      }
    }
    return true;
  },
};
