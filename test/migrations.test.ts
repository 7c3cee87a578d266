/**
 * Migrations after 0001 bring a database created by an earlier release to the schema a new database gets
 * (schema.sql), and change nothing on a new one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { Database } from '../src/store/database.js';
import { migrate, MIGRATIONS } from '../src/store/migrations.js';
import { BACKENDS, openTestDatabase } from './support/harness.js';

const SESSION_BINDING = '0003_session_token_lockout_backoff';

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
      assert.deepEqual(await migrate(database.db), []);
    });

    test('0003 binds sessions to their token (ending the older, unbound ones) and adds the lockout backoff', async () => {
      // The state an earlier release left: no token_name on session, no locks on credential_lockout.
      await sql`alter table session drop column token_name`.execute(database.db);
      await sql`alter table credential_lockout drop column locks`.execute(database.db);
      await sql`delete from coregate_migration where id = ${SESSION_BINDING}`.execute(database.db);
      await sql`insert into session (token_hash, user_number) values (${Buffer.alloc(32, 1)}, 7)`.execute(database.db);
      await sql`insert into credential_lockout (subject, failures) values ('user:7', 2)`.execute(database.db);

      assert.deepEqual(await migrate(database.db), [SESSION_BINDING]);
      assert.equal((await columns('session')).get('token_name')?.nullable, 'NO');
      const { rows: sessions } = await sql`select 1 from session`.execute(database.db);
      assert.equal(sessions.length, 0, 'a session that no token owns has ended');
      const { rows: lockouts } = await sql<{ failures: number; locks: number }>`
        select failures, locks from credential_lockout where subject = 'user:7'`.execute(database.db);
      assert.deepEqual(lockouts, [{ failures: 2, locks: 0 }]);
    });
  });
}
