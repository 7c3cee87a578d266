/**
 * The audit trail at production volume (issue 33, docs/performance.md "The audit trail at volume"): on a
 * PostgreSQL database of its own, the partitioned trail (migration 0013) is grown with COPY from empty to
 * `--rows` events, at a constant daily volume (`--per-day`), the newest day being today: each step adds older
 * days, as a trail that has been written for longer. At each size it measures, on the trail as the service
 * uses it:
 *   insert    a batch of 500 events as the buffered audit log writes them, µs per event; and one event in its
 *             own transaction as an update writes it, µs per insert
 *   account+day   the admin API's first page (100) of one account's events of the last 24 hours
 *   account       the first page of one account's events, all time
 *   hour          the first page of one hour's events
 *   keyset        a page (100) after an id in the middle of the trail, as a reader paging through it
 * Each query is run for 40 random accounts or times; the median and the 95th percentile are reported, in ms.
 *
 * Run: node --import tsx bench/audit-volume.ts [--rows 50000000] [--per-day 2500000] [--steps 0,1e6,5e6,…]
 *        [--database-url postgres://postgres@127.0.0.1:5432/test]
 */
import { randomInt } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { openDatabase, type Database } from '../src/database/database.js';
import { migrate } from '../src/database/migrations.js';
import { auditEvents, type AuditEvent } from '../src/store/audit.js';
import { maintainAuditTrail } from '../src/store/audit-retention.js';
import { BENCH_DIR } from './servers.js';

const DAY_MS = 86_400_000;
const ACCOUNTS = 1_000_000;
const SAMPLES = 40;
const BATCH = 500;
const DATABASE = 'coregate_bench_audit';
const OPERATIONS = [
  'P1:findBySSN',
  'P1:findByAccountNumber',
  'P1:updateShareByID',
  '2022.01:getCollateralSelectFields',
];

const account = (n: number) => String(n).padStart(10, '0');
const randomAccount = () => account(randomInt(1, ACCOUNTS + 1));

/** `rows` COPY text lines of events spread evenly over [from, to). */
function* copyLines(rows: number, from: number, to: number, chunk = 20_000): Generator<string> {
  const span = to - from;
  for (let done = 0; done < rows;) {
    const n = Math.min(chunk, rows - done);
    let text = '';
    for (let i = 0; i < n; i += 1) {
      const at = new Date(from + Math.floor(((done + i) / rows) * span)).toISOString();
      const accounts = randomInt(0, 10) === 0 ? `${randomAccount()},${randomAccount()}` : randomAccount();
      const member = randomInt(0, 4) === 0 ? randomAccount() : '\\N';
      const operation = OPERATIONS[randomInt(0, OPERATIONS.length)]!;
      const status = randomInt(0, 50) === 0 ? 404 : 200;
      text += `${at}\tbench-${done + i}\tbench-token\t\\N\t${member}\t${operation}\t${accounts}\t\\N\t${status}\t\\N\n`;
    }
    done += n;
    yield text;
  }
}

/** Copies `rows` events spread over [from, to) into the trail (its partitions take them). */
async function copyEvents(url: string, rows: number, from: number, to: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const copy = client.query(
      copyFrom(
        'copy audit_event (at, request_id, token_name, user_number, member_account, operation, account_numbers, ' +
          'collateral_number, status, code) from stdin',
      ),
    );
    await pipeline(Readable.from(copyLines(rows, from, to)), copy);
  } finally {
    await client.end();
  }
}

const event = (i: number): AuditEvent => ({
  requestId: `insert-${i}`,
  tokenName: 'bench-token',
  userNumber: null,
  memberAccount: null,
  operation: 'P1:findBySSN',
  accountNumbers: [randomAccount()],
  collateralNumber: null,
  status: 200,
  code: null,
  coreLatencyMs: 3,
  coreOutcome: 'ok',
});

const quantile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

interface Step {
  readonly rows: number;
  readonly partitions: number;
  readonly copySeconds: number;
  readonly batchInsertUsPerEvent: number;
  readonly singleInsertUs: number;
  readonly queries: Readonly<Record<string, { readonly p50Ms: number; readonly p95Ms: number }>>;
  readonly tableGb: number;
}

async function measure(database: Database, rows: number, now: number, copySeconds: number): Promise<Step> {
  const db = database.db;
  // Batches as the buffered log writes them, then single events as an update's transaction does.
  const batches: number[] = [];
  for (let b = 0; b < 10; b += 1) {
    const events = Array.from({ length: BATCH }, (_, i) => event(b * BATCH + i));
    batches.push(await timed(() => auditEvents.insert(db, events)));
  }
  const singles: number[] = [];
  for (let i = 0; i < 200; i += 1) {
    singles.push(await timed(() => db.transaction().execute((trx) => auditEvents.insert(trx, [event(i)]))));
  }
  const queries: Record<string, number[]> = { 'account+day': [], account: [], hour: [], keyset: [] };
  const { rows: idRange } = await sql<{ min: string | null; max: string | null }>`
    select min(id)::text as min, max(id)::text as max from audit_event`.execute(db);
  const ids = { min: Number(idRange[0]?.min ?? 0), max: Number(idRange[0]?.max ?? 0) };
  for (let s = 0; s < SAMPLES; s += 1) {
    const someone = randomAccount();
    queries['account+day']!.push(
      await timed(() => auditEvents.page(db, { account: someone, from: new Date(now - DAY_MS) }, undefined, 100)),
    );
    queries.account!.push(await timed(() => auditEvents.page(db, { account: randomAccount() }, undefined, 100)));
    const hour = now - randomInt(1, Math.max(2, Math.floor(rows / 2_500_000) * 24)) * 3_600_000;
    queries.hour!.push(
      await timed(() => auditEvents.page(db, { from: new Date(hour), to: new Date(hour + 3_600_000) }, undefined, 100)),
    );
    const middle = ids.min + Math.floor((ids.max - ids.min) / 2) + randomInt(0, 10_000);
    const { rows: positions } = await sql<{ at: string; id: string }>`
      select to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at, id::text as id
      from audit_event where id >= ${middle} order by id limit 1`.execute(db);
    const after = positions[0] ? { at: positions[0].at, id: Number(positions[0].id) } : undefined;
    queries.keyset!.push(await timed(() => auditEvents.page(db, {}, after, 100)));
  }
  const { rows: sizes } = await sql<{ bytes: string; partitions: string }>`
    select coalesce(sum(pg_total_relation_size(inhrelid)), 0)::text as bytes, count(*)::text as partitions
    from pg_inherits where inhparent = 'audit_event'::regclass`.execute(db);
  const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
  return {
    rows,
    partitions: Number(sizes[0]!.partitions),
    copySeconds: round(copySeconds, 1),
    batchInsertUsPerEvent: round((quantile(batches, 0.5) * 1000) / BATCH, 1),
    singleInsertUs: round(quantile(singles, 0.5) * 1000, 0),
    queries: Object.fromEntries(
      Object.entries(queries).map(([name, times]) => [
        name,
        { p50Ms: round(quantile(times, 0.5)), p95Ms: round(quantile(times, 0.95)) },
      ]),
    ),
    tableGb: round(Number(sizes[0]!.bytes) / 1024 ** 3),
  };
}

function table(steps: readonly Step[]): string {
  const lines = [
    '| events | partitions | size GB | COPY s | insert µs/event (batch of 500) | insert µs (one, own transaction) | account, last 24 h p50/p95 ms | account, all time p50/p95 ms | one hour p50/p95 ms | keyset page p50/p95 ms |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const s of steps) {
    const q = (name: string) => `${s.queries[name]!.p50Ms} / ${s.queries[name]!.p95Ms}`;
    lines.push(
      `| ${s.rows.toLocaleString('en-US')} | ${s.partitions} | ${s.tableGb} | ${s.copySeconds} | ${s.batchInsertUsPerEvent} | ${s.singleInsertUs} | ${q('account+day')} | ${q('account')} | ${q('hour')} | ${q('keyset')} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rows: { type: 'string', default: '50000000' },
      'per-day': { type: 'string', default: '2500000' },
      steps: { type: 'string' },
      'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/test' },
    },
  });
  const total = Number(values.rows);
  const perDay = Number(values['per-day']);
  const steps = (values.steps ?? `0,1e6,5e6,10e6,25e6,${total}`)
    .split(',')
    .map(Number)
    .filter((n) => n <= total);
  const adminUrl = values['database-url']!;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${DATABASE} with (force)`);
  await admin.query(`create database ${DATABASE}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${DATABASE}`;
  const database = await openDatabase({ url: url.toString() });
  const results: Step[] = [];
  try {
    await migrate(database.db, database.kind);
    const now = Date.now();
    const today = Math.floor(now / DAY_MS) * DAY_MS;
    // Every day's partition the largest step needs, created as the upkeep of that day would have.
    const days = Math.ceil(total / perDay);
    for (let d = days; d >= 0; d -= 1) {
      await maintainAuditTrail(database, { retentionDays: 0, aheadDays: 0, now: new Date(today - d * DAY_MS) });
    }
    await maintainAuditTrail(database, { retentionDays: 0 });
    let rows = 0;
    for (const target of steps) {
      let copySeconds = 0;
      if (target > rows) {
        // The events written before those already there: the days before, at the daily volume, ending at `now`.
        const newestBack = rows / perDay;
        const oldestBack = target / perDay;
        const started = performance.now();
        await copyEvents(url.toString(), target - rows, now - oldestBack * DAY_MS, now - newestBack * DAY_MS);
        copySeconds = (performance.now() - started) / 1000;
        await sql`analyze audit_event`.execute(database.db);
        rows = target;
      }
      const step = await measure(database, rows, now, copySeconds);
      results.push(step);
      console.log(table([step]).split('\n').at(-1));
    }
  } finally {
    await database.close();
  }
  console.log(`\n${table(results)}`);
  const directory = join(BENCH_DIR, 'results');
  mkdirSync(directory, { recursive: true });
  const file = join(directory, `audit-volume-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({ perDay, steps: results }, null, 2)}\n`);
  console.log(`\nResults written to ${file}`);
}

await main();
