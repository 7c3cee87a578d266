/**
 * The audit trail keeps its evidence: an update's event commits with the update; other events are
 * written within the flush window, and a crash loses at most that window; an event the database refuses
 * costs no other event its row; while the database is away, events wait in memory and are written when
 * it is back.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { AuditLog, type AuditEvent } from '../src/store/audit.js';
import { openDatabase, type Db } from '../src/database/database.js';
import { migrate } from '../src/database/migrations.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { account } from './support/fixtures.js';
import { seedDatabase } from '../src/seed/load.js';
import { createPgCluster, freePort, postgresBinDir } from './support/pg-cluster.js';
import { adminStatement, CLI, serve } from './support/serve-process.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const event = (requestId: string, overrides: Partial<AuditEvent> = {}): AuditEvent => ({
  requestId,
  tokenName: 'test',
  userNumber: 0,
  memberAccount: null,
  operation: 'P1:findBySSN',
  accountNumbers: [],
  collateralNumber: null,
  status: 200,
  code: null,
  coreLatencyMs: null,
  coreOutcome: null,
  ...overrides,
});

async function auditCount(db: Db, where = sql`true`): Promise<number> {
  const { rows } = await sql<{ count: number }>`select count(*)::int as count from audit_event where ${where}`.execute(
    db,
  );
  return rows[0]!.count;
}

for (const backend of BACKENDS) {
  describe(`audit trail on ${backend.name}`, () => {
    let h: Harness;
    before(async () => {
      h = await createHarness(backend);
      await seedDatabase(h.database, h.secrets, { accounts: 2, seed: 627 });
    });
    after(() => h.close());

    test("an update's event is committed with the update: it is there before any flush", async () => {
      const response = await h.call('/gw/627/persistent/account/updateShareByID', {
        AccountNumber: account(1),
        ShareId: '0000',
        ShareFields: { Description: 'AUDITED IN TRANSACTION' },
      });
      assert.equal(response.statusCode, 200, response.body);
      const requestId = String(response.headers['x-request-id']);
      assert.equal(h.app.audit.backlog, 0, 'nothing of it waits in the buffer');
      assert.equal(await auditCount(h.database.db, sql`request_id = ${requestId} and status = 200`), 1);
    });

    test('a refused update is still audited, with its status and code', async () => {
      const response = await h.call('/gw/627/persistent/account/updateShareByID', {
        AccountNumber: account(9),
        ShareId: '0000',
        ShareFields: { Description: 'NO SUCH SHARE' },
      });
      assert.equal(response.statusCode, 404);
      await h.app.audit.flush();
      const requestId = String(response.headers['x-request-id']);
      assert.equal(
        await auditCount(h.database.db, sql`request_id = ${requestId} and status = 404 and code = 'RECORD_NOT_FOUND'`),
        1,
      );
    });

    test('events with text the database cannot store are written, made storable, with every other event of the batch', async () => {
      const log = new AuditLog(h.database.db, { flushMs: 10_000, bufferMax: 1000, onError: () => undefined });
      for (let i = 0; i < 30; i += 1) log.record(event(`batch-ok-${i}`));
      log.record(
        event('batch-hostile', {
          accountNumbers: ['\u0000\ud800', 'x'.repeat(500)],
          collateralNumber: '\udc00',
          tokenName: 'a\u0000b',
        }),
      );
      // Cut to its column, a string of emoji would end in half a surrogate pair.
      log.record(
        event('batch-cut-pair', {
          collateralNumber: '\u{1F600}'.repeat(10),
          memberAccount: 'x'.repeat(9) + '\u{1F600}',
        }),
      );
      await log.flush();
      assert.equal(await auditCount(h.database.db, sql`request_id like 'batch-ok-%'`), 30);
      assert.equal(await auditCount(h.database.db, sql`request_id = 'batch-hostile'`), 1);
      assert.equal(await auditCount(h.database.db, sql`request_id = 'batch-cut-pair'`), 1);
    });

    test('an event the database refuses costs no other event its row, and is named in the log', async () => {
      await sql
        .raw(
          `create function refuse_audit() returns trigger language plpgsql as $$
        begin if new.request_id = 'refused-event' then raise exception 'refused'; end if; return new; end $$`,
        )
        .execute(h.database.db);
      await sql
        .raw(`create trigger refuse_audit before insert on audit_event for each row execute function refuse_audit()`)
        .execute(h.database.db);
      const errors: string[] = [];
      try {
        const log = new AuditLog(h.database.db, {
          flushMs: 10_000,
          bufferMax: 1000,
          onError: (_error, message) => errors.push(message),
        });
        for (let i = 0; i < 10; i += 1) log.record(event(`neighbour-${i}`));
        log.record(event('refused-event'));
        await log.flush();
      } finally {
        await sql.raw('drop trigger refuse_audit on audit_event').execute(h.database.db);
        await sql.raw('drop function refuse_audit()').execute(h.database.db);
      }
      assert.equal(await auditCount(h.database.db, sql`request_id like 'neighbour-%'`), 10);
      assert.equal(await auditCount(h.database.db, sql`request_id = 'refused-event'`), 0);
      assert.deepEqual(errors, ['audit event of request refused-event (P1:findBySSN) could not be written']);
    });

    test('read events are written within the flush window without a flush call', async () => {
      const log = new AuditLog(h.database.db, { flushMs: 50, bufferMax: 1000, onError: () => undefined });
      log.record(event('timed-flush'));
      await sleep(500);
      assert.equal(await auditCount(h.database.db, sql`request_id = 'timed-flush'`), 1);
    });
  });
}

describe(
  'audit events while the database is away',
  { skip: postgresBinDir() === undefined && 'PostgreSQL server binaries are not installed' },
  () => {
    test('are kept in memory and written when it is back; past the buffer bound the oldest are dropped and counted', async () => {
      const cluster = await createPgCluster();
      const database = await openDatabase({ url: cluster.url, connectTimeoutMs: 1_000 });
      try {
        await migrate(database.db, database.kind);
        const messages: string[] = [];
        const log = new AuditLog(database.db, {
          flushMs: 10,
          bufferMax: 120,
          onError: (_error, message) => messages.push(message),
        });
        cluster.stop();
        for (let i = 0; i < 100; i += 1) log.record(event(`away-${i}`));
        await log.flush();
        assert.ok(log.backlog >= 100, 'the events wait');
        for (let i = 100; i < 150; i += 1) log.record(event(`away-${i}`));
        assert.equal(log.backlog, 120, 'the buffer holds its bound');
        cluster.start();
        for (let waited = 0; log.backlog > 0 && waited < 30_000; waited += 100) await sleep(100);
        await log.flush();
        assert.equal(await auditCount(database.db, sql`request_id like 'away-%'`), 120);
        // The newest are kept: the oldest thirty were dropped.
        assert.equal(await auditCount(database.db, sql`request_id = 'away-149'`), 1);
        assert.equal(await auditCount(database.db, sql`request_id = 'away-0'`), 0);
        assert.ok(messages.some((message) => /until the database is back/.test(message)));
        assert.ok(messages.some((message) => /30 audit events were dropped/.test(message)));
      } finally {
        await database.close();
        cluster.remove();
      }
    });
  },
);

describe('a crash (kill -9) of coregate serve', () => {
  const FLUSH_MS = 1_000;
  const adminUrl = process.env.TEST_DATABASE_URL;
  const targets = [
    { name: 'pglite', databaseUrl: '' },
    ...(adminUrl
      ? [
          {
            name: 'postgres',
            databaseUrl: Object.assign(new URL(adminUrl), { pathname: `/coregate_audit_${process.pid}` }).href,
          },
        ]
      : []),
  ];
  const admin = (statement: string) => adminStatement(adminUrl!, statement);

  for (const target of targets) {
    test(`on ${target.name}: loses no update's event, and of reads at most those of the last flush window`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'coregate-audit-crash-'));
      if (target.databaseUrl) await admin(`create database coregate_audit_${process.pid}`);
      const env = { ...process.env, COREGATE_DATA_DIR: dataDir, DATABASE_URL: target.databaseUrl, LOG_LEVEL: 'warn' };
      try {
        const cli = (...args: string[]) => {
          const result = spawnSync(process.execPath, [...CLI, ...args], { env, encoding: 'utf8' });
          assert.equal(result.status, 0, result.stderr);
          return result.stdout;
        };
        cli('seed', '--accounts', '3');
        cli('admin-password', '--password', 'crash-admin-password');
        const token = cli('token', 'create', '--name', 'crash').split('\n')[0]!;
        const port = await freePort();
        const { child } = await serve({
          args: ['--no-demo'],
          env: {
            ...env,
            PORT: String(port),
            COREGATE_AUDIT_FLUSH_MS: String(FLUSH_MS),
            COREGATE_RATE_LIMIT: '100000',
            COREGATE_FINDBY_RATE_LIMIT: '100000',
          },
        });
        const exited = new Promise((resolve) => child.once('exit', resolve));
        const call = async (path: string, body: object) => {
          const response = await fetch(`http://127.0.0.1:${port}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              Credentials: { AdministrativeCredentials: { Password: 'crash-admin-password' } },
              ...body,
            }),
          });
          assert.equal(response.status, 200, await response.text());
        };
        const read = () => call('/gw/627/persistent/findby/findByShortName', { ShortName: 'NOBODY' });
        for (let i = 0; i < 20; i += 1) await read();
        await sleep(FLUSH_MS * 2.5);
        for (let i = 0; i < 10; i += 1) await read();
        for (let i = 0; i < 20; i += 1) {
          await call('/gw/627/persistent/account/updateShareByID', {
            AccountNumber: account(1),
            ShareId: '0000',
            ShareFields: { Description: `CRASH ${i}` },
          });
        }
        // The last update was acknowledged a moment ago: no flush window has passed.
        child.kill('SIGKILL');
        await exited;

        const database = await openDatabase(
          target.databaseUrl ? { url: target.databaseUrl } : { dataDir: join(dataDir, 'pglite') },
        );
        try {
          const updates = await auditCount(database.db, sql`operation = 'P1:updateShareByID' and status = 200`);
          const reads = await auditCount(database.db, sql`operation = 'P1:findByShortName'`);
          assert.equal(updates, 20, 'every acknowledged update has its event');
          assert.ok(reads >= 20 && reads <= 30, `the reads before the last window are all there (${reads} of 30)`);
        } finally {
          await database.close();
        }
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
        if (target.databaseUrl) await admin(`drop database if exists coregate_audit_${process.pid} with (force)`);
      }
    });
  }
});

describe('with COREGATE_AUDIT=off', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness({ name: 'pglite' }, { auditEnabled: false });
    await seedDatabase(h.database, h.secrets, { accounts: 2, seed: 627 });
  });
  after(() => h.close());

  test('no call leaves an event, an update included, and the start says the trail is off', async () => {
    const update = await h.call('/gw/627/persistent/account/updateShareByID', {
      AccountNumber: account(1),
      ShareId: '0000',
      ShareFields: { Description: 'NOT AUDITED' },
    });
    assert.equal(update.statusCode, 200, update.body);
    const refused = await h.call('/gw/627/persistent/account/updateShareByID', {
      AccountNumber: account(9),
      ShareId: '0000',
      ShareFields: { Description: 'NO SUCH SHARE' },
    });
    assert.equal(refused.statusCode, 404);
    await h.app.audit.flush();
    assert.equal(await auditCount(h.database.db), 0);
    assert.ok(h.logs().some((line) => line.includes('COREGATE_AUDIT=off: no call is audited')));
  });
});
