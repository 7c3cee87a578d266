/**
 * Housekeeping (http/maintenance.ts): idempotency keys older than COREGATE_IDEMPOTENCY_RETENTION_HOURS are
 * swept at start and then periodically, on both databases; a task that fails is logged once, retried at
 * the next interval and never thrown; the rounds stop when the app closes. The audit trail's upkeep, the
 * round's other task, is specified in audit-retention.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { registerMaintenance } from '../src/http/maintenance.js';
import type { Db } from '../src/database/database.js';
import { idempotencyKeys } from '../src/store/idempotency.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';

/** Stores an idempotency key created `hoursAgo` hours ago. */
async function keyCreated(db: Db, key: string, hoursAgo: number): Promise<void> {
  await sql`insert into idempotency_key (token_name, key, request_hash, status, response, created_at)
    values ('maintenance', ${key}, ${'a'.repeat(64)}, 200, '{}'::jsonb, now() - make_interval(hours => ${hoursAgo}))`.execute(
    db,
  );
}

async function keysLeft(db: Db, keys: readonly string[]): Promise<string[]> {
  const { rows } = await sql<{ key: string }>`select key from idempotency_key
    where token_name = 'maintenance' and key in (${sql.join(keys)}) order by key`.execute(db);
  return rows.map((row) => row.key);
}

/** Waits until `condition` holds, polling, for at most `ms`. */
async function eventually(condition: () => Promise<boolean> | boolean, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A bare app whose log lines are kept, to register the maintenance on. */
function appWithLog(): { app: FastifyInstance; lines: () => { level: number; msg: string }[] } {
  const raw: string[] = [];
  const app = Fastify({ logger: { level: 'info', stream: { write: (line: string) => void raw.push(line) } } });
  return { app, lines: () => raw.map((line) => JSON.parse(line) as { level: number; msg: string }) };
}

/** `db`, whose queries fail while `state.down` is set; `state.attempts` counts the queries tried. */
function flaky(db: Db, state: { down: boolean; attempts: number }): Db {
  return new Proxy(db, {
    get(target, property, receiver) {
      if (property !== 'getExecutor') return Reflect.get(target, property, receiver);
      return () => {
        const executor = target.getExecutor();
        return new Proxy(executor, {
          get(inner, name) {
            const value = Reflect.get(inner, name, inner) as unknown;
            if (name !== 'executeQuery' || typeof value !== 'function') {
              return typeof value === 'function' ? value.bind(inner) : value;
            }
            return (...args: unknown[]) => {
              state.attempts += 1;
              if (state.down) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
              return (value as (...a: unknown[]) => unknown).apply(inner, args);
            };
          },
        });
      };
    },
  });
}

for (const backend of BACKENDS) {
  describe(`idempotency key retention on ${backend.name}`, () => {
    let h: Harness;
    before(async () => (h = await createHarness(backend)));
    after(() => h.close());

    test('a sweep deletes the keys older than the retention and keeps the fresh ones', async () => {
      await keyCreated(h.database.db, 'sweep-old', 25);
      await keyCreated(h.database.db, 'sweep-fresh', 23);
      assert.equal(await idempotencyKeys.sweep(h.database.db, 24), 1);
      assert.deepEqual(await keysLeft(h.database.db, ['sweep-old', 'sweep-fresh']), ['sweep-fresh']);
    });

    test('a key past the configured retention is reserved afresh; within it, it still conflicts', async () => {
      await keyCreated(h.database.db, 'reuse', 2);
      const reserve = (hours: number) =>
        h.database.db
          .transaction()
          .execute((trx) => idempotencyKeys.reserve(trx, 'maintenance', 'reuse', 'b'.repeat(64), hours));
      assert.deepEqual(await reserve(3), { kind: 'conflict' });
      assert.equal((await reserve(1)).kind, 'reserved');
    });

    test('the app sweeps once at start and then every interval, until it closes', async () => {
      const db = h.database.db;
      const config = { idempotencyRetentionHours: 1, auditRetentionDays: 0 };
      await keyCreated(db, 'at-start', 2);
      const { app } = appWithLog();
      registerMaintenance(app, { db, databaseKind: h.database.kind, config, intervalMs: 100 });
      await eventually(async () => (await keysLeft(db, ['at-start'])).length === 0, 2_000, 'the sweep at start');
      await keyCreated(db, 'next-interval', 2);
      await keyCreated(db, 'fresh', 0);
      await eventually(async () => (await keysLeft(db, ['next-interval'])).length === 0, 2_000, 'the next sweep');
      assert.deepEqual(await keysLeft(db, ['fresh']), ['fresh']);
      await app.close();
      await keyCreated(db, 'after-close', 2);
      await sleep(300);
      assert.deepEqual(await keysLeft(db, ['after-close']), ['after-close'], 'no sweep after close');
    });

    test('a failed sweep is logged once, retried at the next interval and never thrown', async () => {
      const state = { down: true, attempts: 0 };
      const db = flaky(h.database.db, state);
      const { app, lines } = appWithLog();
      const config = { idempotencyRetentionHours: 1, auditRetentionDays: 30 };
      registerMaintenance(app, { db, databaseKind: h.database.kind, config, intervalMs: 50 });
      await eventually(() => state.attempts >= 8, 2_000, 'retries');
      // Each task of the round logs its own first failure, once.
      const warnings = () => lines().filter((line) => line.level === 40);
      assert.deepEqual(
        warnings().map((line) => line.msg),
        [
          'sweeping expired idempotency keys failed; trying again at the next interval',
          "the audit trail's upkeep failed; trying again at the next interval",
        ],
      );
      await keyCreated(h.database.db, 'when-back', 2);
      state.down = false;
      await eventually(
        async () => (await keysLeft(h.database.db, ['when-back'])).length === 0,
        2_000,
        'a sweep when the database is back',
      );
      assert.ok(lines().some((line) => line.msg === 'sweeping expired idempotency keys: working again'));
      await app.close();
    });
  });
}
