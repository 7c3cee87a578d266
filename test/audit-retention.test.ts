/**
 * The audit trail at production volume (store/audit-retention.ts, migration 0013): on PostgreSQL a table
 * partitioned by UTC day, partitions created ahead, those past COREGATE_AUDIT_RETENTION_DAYS exported to
 * NDJSON when asked and dropped, one process of a fleet at a time; on the embedded database a plain table
 * with the same retention. On both, events are found by account through the GIN index, exactly.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, sql } from 'kysely';
import type { Db } from '../src/database/database.js';
import { migrate } from '../src/database/migrations.js';
import { schemaDdl } from '../src/database/schema.js';
import { adminAudit } from '../src/operations/administration.js';
import { auditEvents, type AuditFilter, type AuditPosition } from '../src/store/audit.js';
import { capturingDatabase } from '../src/store/query-snapshot.js';
import { maintainAuditTrail } from '../src/store/audit-retention.js';
import { BACKENDS, openTestDatabase, type TestDatabase } from './support/harness.js';

const DAY_MS = 86_400_000;
const NOW = new Date('2026-11-26T10:00:00Z');
const daysBefore = (days: number) => new Date(NOW.getTime() - days * DAY_MS);

/** Writes an event at a time of the test's choosing. */
async function eventAt(db: Db, at: Date, requestId: string, accounts: string | null, member: string | null = null) {
  await sql`insert into audit_event (at, request_id, operation, status, account_numbers, member_account)
    values (${at.toISOString()}::timestamptz, ${requestId}, 'findBySSN', 200, ${accounts}, ${member})`.execute(db);
}

const requestIds = async (db: Db, where = sql`true`) =>
  (
    await sql<{ request_id: string }>`select request_id from audit_event where ${where} order by id`.execute(db)
  ).rows.map((row) => row.request_id);

/** The trail's partitions and the events each holds. */
async function partitionsOf(db: Db): Promise<Record<string, number>> {
  const { rows } = await sql<{ name: string; events: string }>`
    select c.relname as name, (xpath('/row/n/text()', query_to_xml(format('select count(*) as n from %I', c.relname), false, true, '')))[1]::text as events
    from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'audit_event'::regclass
    order by c.relname`.execute(db);
  return Object.fromEntries(rows.map((row) => [row.name, Number(row.events)]));
}

for (const backend of BACKENDS) {
  describe(`the audit trail's retention on ${backend.name}`, () => {
    let database: TestDatabase;
    let exportDir: string;
    before(async () => {
      database = await openTestDatabase(backend);
      exportDir = mkdtempSync(join(tmpdir(), 'coregate-audit-export-'));
    });
    after(async () => {
      await database.close();
      rmSync(exportDir, { recursive: true, force: true });
    });

    test('events are found by an account they name or their caller is, exactly: never by a part of one', async () => {
      const db = database.db;
      await eventAt(db, NOW, 'named', '0000000101,0000000202');
      await eventAt(db, NOW, 'member', null, '0000000202');
      await eventAt(db, NOW, 'longer', '10000000101');
      const page = async (account: string) =>
        (await auditEvents.page(db, { account, from: daysBefore(1) }, undefined, 10)).map((event) => event.requestId);
      assert.deepEqual(await page('0000000202'), ['named', 'member']);
      assert.deepEqual(await page('0000000101'), ['named']);
      assert.deepEqual(await page('000000010'), [], 'a part of an account number finds nothing');
      await sql`delete from audit_event`.execute(db);
    });

    test('events past the retention are exported to NDJSON (readable by the owner alone), then retired; the rest stay', async () => {
      const db = database.db;
      // The days' partitions exist as the upkeep of those days created them.
      for (const days of [45, 40, 31, 29])
        await maintainAuditTrail(database, { retentionDays: 0, now: daysBefore(days) });
      await eventAt(db, daysBefore(45), 'day-45', '0000000001');
      await eventAt(db, daysBefore(40), 'day-40a', '0000000001');
      await eventAt(db, daysBefore(40), 'day-40b', '0000000002');
      await eventAt(db, daysBefore(29), 'day-29', '0000000001');
      await eventAt(db, NOW, 'today', '0000000001');

      const kept = await maintainAuditTrail(database, { retentionDays: 0, now: NOW });
      assert.deepEqual(kept.retired, [], 'a retention of 0 keeps every event');

      const outcome = await maintainAuditTrail(database, { retentionDays: 30, exportDir, now: NOW });
      assert.equal(outcome.busy, false);
      assert.deepEqual(await requestIds(db), ['day-29', 'today']);
      assert.deepEqual(
        outcome.retired.reduce((sum, retired) => sum + retired.events, 0),
        3,
      );
      const files = readdirSync(exportDir).sort();
      assert.ok(
        files.every((file) => file.endsWith('.ndjson')),
        files.join(),
      );
      const lines = files.flatMap((file) =>
        readFileSync(join(exportDir, file), 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { requestId: string; accountNumbers: string[]; at: string }),
      );
      assert.deepEqual(lines.map((line) => line.requestId).sort(), ['day-40a', 'day-40b', 'day-45']);
      assert.deepEqual(lines.find((line) => line.requestId === 'day-40b')?.accountNumbers, ['0000000002']);
      for (const file of files) assert.equal(statSync(join(exportDir, file)).mode & 0o777, 0o600, file);
      // The lines are the admin API's events.
      const [exported] = lines.filter((line) => line.requestId === 'day-45');
      assert.ok(exported && Object.keys(exported).includes('traceId'));

      const again = await maintainAuditTrail(database, { retentionDays: 30, exportDir, now: NOW });
      assert.deepEqual(again.retired, [], 'a second round has nothing to retire');
      assert.deepEqual(readdirSync(exportDir).sort(), files, 'and writes no file');
      await sql`delete from audit_event`.execute(db);
    });

    if (backend.name === 'pglite') {
      test('the embedded database keeps one plain table, searched by account through the GIN index', async () => {
        const { rows } = await sql<{ kind: string }>`select relkind::text as kind from pg_class
          where oid = 'audit_event'::regclass`.execute(database.db);
        assert.deepEqual(rows, [{ kind: 'r' }]);
        const { rows: indexes } = await sql<{ name: string }>`select indexname as name from pg_indexes
          where tablename = 'audit_event' and schemaname = current_schema() order by 1`.execute(database.db);
        assert.ok(indexes.some((index) => index.name === 'audit_event_accounts_idx'));
        assert.ok(!indexes.some((index) => index.name === 'audit_event_account_idx'));
      });
      return;
    }

    test('the trail is partitioned by day, partitions are created ahead, and a day without one waits in the default', async () => {
      const db = database.db;
      const { rows } = await sql<{ kind: string }>`select relkind::text as kind from pg_class
        where oid = 'audit_event'::regclass`.execute(db);
      assert.deepEqual(rows, [{ kind: 'p' }]);
      const later = new Date('2031-03-01T12:00:00Z');
      await eventAt(db, later, 'early-bird', '0000000003');
      assert.equal((await partitionsOf(db)).audit_event_default, 1);
      const outcome = await maintainAuditTrail(database, { retentionDays: 0, now: later });
      assert.deepEqual(outcome.created, [
        'audit_event_p20310301',
        'audit_event_p20310302',
        'audit_event_p20310303',
        'audit_event_p20310304',
      ]);
      const partitions = await partitionsOf(db);
      assert.equal(partitions.audit_event_default, 0, 'moved out of the default');
      assert.equal(partitions.audit_event_p20310301, 1);
      assert.deepEqual((await maintainAuditTrail(database, { retentionDays: 0, now: later })).created, []);
      await eventAt(db, later, 'on-time', null);
      assert.deepEqual(await requestIds(db, sql`at >= ${later.toISOString()}::timestamptz`), ['early-bird', 'on-time']);
      await sql`delete from audit_event`.execute(db);
    });

    test('events the default partition kept past the retention are exported and deleted too', async () => {
      const db = database.db;
      await eventAt(db, new Date('2020-01-15T00:00:00Z'), 'stray', '0000000004');
      const outcome = await maintainAuditTrail(database, { retentionDays: 30, exportDir, now: NOW });
      const stray = outcome.retired.find((retired) => retired.name.startsWith('audit_event_default_before_'));
      assert.equal(stray?.events, 1);
      assert.match(readFileSync(stray.file!, 'utf8'), /"requestId":"stray"/);
      assert.equal((await partitionsOf(db)).audit_event_default, 0);
    });

    test('one process of a fleet keeps the trail at a time: another finds the upkeep busy and does nothing', async () => {
      const other = await database.reopen!();
      try {
        const outcome = await other.db.connection().execute(async (held) => {
          await sql`select pg_advisory_lock(6270013, hashtext(current_schema()))`.execute(held);
          try {
            return await maintainAuditTrail(database, { retentionDays: 1, now: new Date('2032-01-01T00:00:00Z') });
          } finally {
            await sql`select pg_advisory_unlock(6270013, hashtext(current_schema()))`.execute(held);
          }
        });
        assert.deepEqual(outcome, { busy: true, created: [], retired: [] });
      } finally {
        await other.close();
      }
    });

    test("a page of the trail is read in its key's order, from each partition's index: never sorted by hand", async () => {
      // Whatever the table holds, no plan may sort: with sorting priced out, a page whose order no index
      // gives would still show a Sort node (as one ordered by the answer's text column once did).
      const position = { at: '2026-11-25T10:00:00.000001Z', id: 40 };
      const pages: [string, AuditFilter, AuditPosition | undefined][] = [
        ['the first page', {}, undefined],
        ['a page after a position', {}, position],
        ['a window of time', { from: daysBefore(2), to: NOW }, undefined],
        ['an operation, after a position', { operation: 'findBySSN' }, position],
        ['a status class and a token', { status: '2xx', token: 'ci' }, undefined],
      ];
      for (const [what, filter, after] of pages) {
        const captured = capturingDatabase();
        await auditEvents.page(captured.db, filter, after, 100);
        const [page] = captured.queries();
        const plan = await database.db.transaction().execute(async (trx) => {
          await sql`set local enable_sort = off`.execute(trx);
          const explained = await trx.executeQuery<{ 'QUERY PLAN': unknown }>(
            CompiledQuery.raw(`explain (format json) ${page!.sql}`, [...page!.parameters]),
          );
          return JSON.stringify(explained.rows[0]!['QUERY PLAN']);
        });
        assert.doesNotMatch(plan, /"Node Type":"(Incremental )?Sort"/, `${what}: ${plan}`);
        assert.match(plan, /"Index Name":"audit_event_/, `${what} reads an index: ${plan}`);
      }
    });

    test('0013 turns a trail of an earlier release into partitions: its events kept whole, ids going on, paging across', async () => {
      const db = database.db;
      // The trail as 0012 left it: a plain table with an identity id and the index on (account_numbers, at).
      await sql`drop table audit_event cascade`.execute(db);
      for (const statement of schemaDdl().filter((text) => /(table|on) audit_event \(/.test(text))) {
        await sql.raw(statement).execute(db);
      }
      await eventAt(db, daysBefore(400), 'old-1', '0000000005');
      await eventAt(db, daysBefore(2), 'old-2', '0000000005');
      await sql`delete from coregate_migration where id = '0013_audit_partitions'`.execute(db);

      assert.deepEqual(await migrate(db, database.kind), ['0013_audit_partitions']);
      const partitions = await partitionsOf(db);
      const earlier = Object.keys(partitions).find((name) => name.startsWith('audit_event_before_'));
      assert.ok(earlier, JSON.stringify(partitions));
      assert.equal(partitions[earlier], 2);
      await maintainAuditTrail(database, { retentionDays: 0 });
      await auditEvents.insert(db, [
        {
          requestId: 'new-1',
          tokenName: 'ci',
          userNumber: null,
          memberAccount: null,
          operation: 'findBySSN',
          accountNumbers: ['0000000005'],
          collateralNumber: null,
          status: 200,
          code: null,
          coreLatencyMs: null,
          coreOutcome: null,
        },
      ]);
      const { rows } = await sql<{
        request_id: string;
        id: string;
      }>`select request_id, id from audit_event order by id`.execute(db);
      assert.deepEqual(
        rows.map((row) => row.request_id),
        ['old-1', 'old-2', 'new-1'],
      );
      assert.equal(Number(rows[2]!.id), Number(rows[1]!.id) + 1, 'ids go on from the last');
      // The admin API's pages run across the partitions, by id.
      const first = await adminAudit.page(db, { account: '0000000005', limit: '2' });
      assert.deepEqual(
        first.events.map((event) => event.requestId),
        ['old-1', 'old-2'],
      );
      const second = await adminAudit.page(db, { account: '0000000005', limit: '2', cursor: first.nextCursor! });
      assert.deepEqual(
        second.events.map((event) => event.requestId),
        ['new-1'],
      );
      // The earlier events go together (today's too: the earlier partition runs to the end of the day), once the
      // last of them is past the retention.
      const retired = await maintainAuditTrail(database, {
        retentionDays: 30,
        now: new Date(Date.now() + 40 * DAY_MS),
      });
      assert.ok(retired.retired.some((partition) => partition.name === earlier && partition.events === 3));
      assert.deepEqual(await migrate(db, database.kind), [], 'and 0013 is not applied again');
    });
  });
}
