/**
 * Migrations after 0001 bring a database created by an earlier release to the schema a new database gets
 * (schema.sql), and change nothing on a new one.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { recordDef, SHARE_RECORD_NAMES } from '../src/catalog/index.js';
import type { Database } from '../src/database/database.js';
import { migrate, MIGRATIONS } from '../src/database/migrations.js';
import { tableColumns } from '../src/database/schema.js';
import { BACKENDS, openTestDatabase } from './support/harness.js';

const SESSION_BINDING = '0003_session_token_lockout_backoff';
const CORE_SHARE_FIELDS = '0004_core_share_fields';
const CHECK_ORDER_SSN = '0010_check_order_ssn';
/** The share tables as 0001–0003 created them. */
const SHARE_TABLES_0003 = readFileSync(new URL('./fixtures/share-tables-0003.sql', import.meta.url), 'utf8');

for (const backend of BACKENDS) {
  describe(`migrations on ${backend.name}`, () => {
    let database: Database;
    before(async () => {
      database = await openTestDatabase(backend);
    });
    after(async () => {
      await database.close();
    });

    const columns = async (table: string) => {
      const { rows } = await sql<{ name: string; nullable: string; defaulted: string | null }>`
        select column_name as name, is_nullable as nullable, column_default as defaulted
        from information_schema.columns where table_schema = current_schema() and table_name = ${table}`.execute(
        database.db,
      );
      return new Map(rows.map((row) => [row.name, row]));
    };

    test('a new database gets every migration, and a second run applies none', async () => {
      const { rows } = await sql<{ id: string }>`select id from coregate_migration order by id`.execute(database.db);
      assert.deepEqual(
        rows.map((row) => row.id),
        MIGRATIONS.map((migration) => migration.id),
      );
      assert.deepEqual(await migrate(database.db, database.kind), []);
    });

    test('0003 binds sessions to their token (ending the older, unbound ones) and adds the lockout backoff', async () => {
      // The state an earlier release left: no token_name on session, no locks on credential_lockout.
      await sql`alter table session drop column token_name`.execute(database.db);
      await sql`alter table credential_lockout drop column locks`.execute(database.db);
      await sql`delete from coregate_migration where id = ${SESSION_BINDING}`.execute(database.db);
      await sql`insert into session (token_hash, user_number) values (${Buffer.alloc(32, 1)}, 7)`.execute(database.db);
      await sql`insert into credential_lockout (subject, failures) values ('user:7', 2)`.execute(database.db);

      assert.deepEqual(await migrate(database.db, database.kind), [SESSION_BINDING]);
      assert.equal((await columns('session')).get('token_name')?.nullable, 'NO');
      const { rows: sessions } = await sql`select 1 from session`.execute(database.db);
      assert.equal(sessions.length, 0, 'a session that no token owns has ended');
      const { rows: lockouts } = await sql<{ failures: number; locks: number }>`
        select failures, locks from credential_lockout where subject = 'user:7'`.execute(database.db);
      assert.deepEqual(lockouts, [{ failures: 2, locks: 0 }]);
    });

    test('0004 gives the share tables the core fields, keeping renamed columns and a scalar charge as its entry', async () => {
      const shareTables = SHARE_RECORD_NAMES.slice(0, 8).map((name) => recordDef(name).table);
      for (const table of shareTables) await sql.raw(`drop table ${table}`).execute(database.db);
      for (const statement of SHARE_TABLES_0003.split(/;\s*$/m).filter((text) => /create table/.test(text))) {
        await sql.raw(statement).execute(database.db);
      }
      await sql`delete from coregate_migration where id = ${CORE_SHARE_FIELDS}`.execute(database.db);
      await sql`insert into share_check_order (account_number, share_id, locator, style, starting_check_number)
        values ('0000000001', '0009', 3, 'WALLET', 1051)`.execute(database.db);
      await sql`insert into share_transfer (account_number, share_id, locator, to_account, to_id, description)
        values ('0000000001', '0001', 4, '0000000002', '0010', 'GONE')`.execute(database.db);
      await sql`insert into share_analysis_plan (account_number, share_id, locator, charge, expire_date)
        values ('0000000001', '0009', 5, 12.5, '2030-01-31')`.execute(database.db);

      assert.deepEqual(await migrate(database.db, database.kind), [CORE_SHARE_FIELDS]);
      for (const table of shareTables) {
        const record = recordDef(SHARE_RECORD_NAMES.find((name) => recordDef(name).table === table)!);
        assert.deepEqual(
          [...(await columns(table)).keys()].sort(),
          tableColumns(record)
            .map((column) => column.name)
            .sort(),
          table,
        );
      }
      const { rows: orders } = await sql`select check_style, start_number from share_check_order`.execute(database.db);
      assert.deepEqual(orders, [{ check_style: 'WALLET', start_number: 1051 }]);
      const { rows: transfers } = await sql`select to_account_number, id from share_transfer`.execute(database.db);
      assert.deepEqual(transfers, [{ to_account_number: '0000000002', id: '0010' }]);
      const { rows: plans } = await sql<{ charge: unknown; expiration_date: unknown }>`
        select charge, expiration_date::text from share_analysis_plan`.execute(database.db);
      assert.deepEqual(plans, [{ charge: [{ EntryId: 1, Charge: 12.5 }], expiration_date: '2030-01-31' }]);
    });

    test("0010 gives check orders the core's Ssn as its HMAC and ciphertext columns, keeping the orders", async () => {
      // The state 0004–0009 left: check orders without the SSN printed on the checks.
      await sql`alter table share_check_order drop column ssn_hmac, drop column ssn_enc`.execute(database.db);
      await sql`delete from coregate_migration where id = ${CHECK_ORDER_SSN}`.execute(database.db);
      await sql`delete from share_check_order`.execute(database.db);
      await sql`insert into share_check_order (account_number, share_id, locator, quantity)
        values ('0000000001', '0009', 6, 200)`.execute(database.db);

      assert.deepEqual(await migrate(database.db, database.kind), [CHECK_ORDER_SSN]);
      const { rows: types } = await sql<{ name: string; type: string }>`
        select column_name as name, data_type as type from information_schema.columns
        where table_schema = current_schema() and table_name = 'share_check_order' and column_name like 'ssn%'
        order by column_name`.execute(database.db);
      assert.deepEqual(types, [
        { name: 'ssn_enc', type: 'bytea' },
        { name: 'ssn_hmac', type: 'bytea' },
      ]);
      assert.deepEqual(
        [...(await columns('share_check_order')).keys()].sort(),
        tableColumns(recordDef('ShareCheckOrder'))
          .map((column) => column.name)
          .sort(),
      );
      const { rows: orders } = await sql`select quantity, ssn_hmac, ssn_enc from share_check_order`.execute(
        database.db,
      );
      assert.deepEqual(orders, [{ quantity: 200, ssn_hmac: null, ssn_enc: null }]);
    });
  });
}
