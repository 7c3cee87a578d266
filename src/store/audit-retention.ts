/**
 * The audit trail's upkeep at production volume: on PostgreSQL, a partition per UTC day created ahead of its
 * day, and partitions wholly older than `retentionDays` retired (exported first to NDJSON when an export
 * directory is set, then dropped: no row-by-row delete, no bloat). The embedded database keeps one plain
 * table, whose events older than the retention are exported the same way and deleted. Run at start and
 * every hour by each process (http/maintenance.ts); on PostgreSQL a session advisory lock lets one process of
 * a fleet do it at a time, and the others pass.
 *
 * Events are kept at least `retentionDays`: a day's events go together once the whole day is past it, so at
 * most a day longer. An event that finds no partition of its day (one written before its day's partition was
 * created) waits in the default partition and is moved into its day's when that is created.
 */
import { constants } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Database, Db } from '../database/database.js';
import { AUDIT_DAY_PARTITION, AUDIT_DEFAULT_PARTITION, AUDIT_EARLIER_PARTITION } from '../database/schema.js';
import { auditEventOf, auditEvents, positionOf, type AuditFilter, type AuditPosition } from './audit.js';

export interface AuditRetentionOptions {
  /** Events older than this many days are retired; 0 keeps them all. */
  readonly retentionDays: number;
  /** Days after today whose partitions exist ahead of them (PostgreSQL). */
  readonly aheadDays?: number;
  /** Where each retired partition (or the embedded database's retired events) is written first, as NDJSON. */
  readonly exportDir?: string;
  /** The time it is; the clock by default. */
  readonly now?: Date;
}

/** What a round of upkeep did. */
export interface AuditRetentionOutcome {
  /** Another process held the upkeep's lock: this round did nothing. */
  readonly busy: boolean;
  /** Partitions created, by name. */
  readonly created: readonly string[];
  /** Partitions dropped (PostgreSQL) or ranges deleted (embedded), with their events and export file. */
  readonly retired: readonly { readonly name: string; readonly events: number; readonly file?: string }[];
}

const DAY_MS = 86_400_000;
/** Partitions ahead of today by default: the upkeep may stop for as long before events land in the default. */
const AHEAD_DAYS = 3;
/** Events read from the database per page of an export. */
const EXPORT_PAGE = 10_000;
/**
 * How long creating or dropping a partition waits for its lock: a long read of the trail (an NDJSON export)
 * holds it off, and writers queued behind a waiting DDL would wait too; the next round tries again.
 */
const LOCK_TIMEOUT = '2s';
/**
 * The upkeep's advisory lock, held by a session for one round: this number and the schema's (advisory locks
 * are the database's, and two deployments may share one in schemas of their own).
 */
const RETENTION_LOCK = 627_0013;

const startOfUtcDay = (time: Date) => new Date(Math.floor(time.getTime() / DAY_MS) * DAY_MS);
const addDays = (day: Date, days: number) => new Date(day.getTime() + days * DAY_MS);
const compactDay = (day: Date) => day.toISOString().slice(0, 10).replaceAll('-', '');

/** A partition of the trail: the range of `at` it holds (from undefined: since the first event). */
interface Partition {
  readonly name: string;
  readonly from?: Date;
  readonly to: Date;
}

const dayOf = (match: RegExpExecArray) => new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3])));

/** The trail's partitions by their names (its own naming: `audit_event_p20261126`, `audit_event_before_…`). */
async function partitions(db: Db): Promise<{ ranged: Partition[]; names: Set<string> }> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = 'audit_event'::regclass`.execute(db);
  const ranged = rows.flatMap(({ name }): Partition[] => {
    const day = AUDIT_DAY_PARTITION.exec(name);
    if (day) return [{ name, from: dayOf(day), to: addDays(dayOf(day), 1) }];
    const earlier = AUDIT_EARLIER_PARTITION.exec(name);
    return earlier ? [{ name, to: dayOf(earlier) }] : [];
  });
  return { ranged, names: new Set(rows.map((row) => row.name)) };
}

/**
 * Creates the partition of one day, moving into it any events of that day the default partition holds, then
 * attaching it: attaching takes a lighter lock than `partition of` (writes to the other days go on).
 */
async function createDay(db: Db, day: Date): Promise<string> {
  const name = `audit_event_p${compactDay(day)}`;
  const [from, to] = [day.toISOString(), addDays(day, 1).toISOString()];
  await db.transaction().execute(async (trx) => {
    await sql`set local lock_timeout = ${sql.lit(LOCK_TIMEOUT)}`.execute(trx);
    await sql`create table ${sql.table(name)} (like audit_event including defaults)`.execute(trx);
    await sql`with moved as (
        delete from ${sql.table(AUDIT_DEFAULT_PARTITION)} where at >= ${from}::timestamptz and at < ${to}::timestamptz
        returning *)
      insert into ${sql.table(name)} select * from moved`.execute(trx);
    await sql`alter table audit_event attach partition ${sql.table(name)}
      for values from (${sql.lit(from)}) to (${sql.lit(to)})`.execute(trx);
  });
  return name;
}

/**
 * Writes the events a filter selects (of one partition, or of the whole trail) to `<dir>/<name>.ndjson`,
 * synced before it takes its name; no file when there were none.
 */
async function exportEvents(
  db: Db,
  source: { readonly table: string; readonly filter: AuditFilter },
  directory: string,
  name: string,
): Promise<{ file?: string; events: number }> {
  await mkdir(directory, { recursive: true });
  const file = join(directory, `${name}.ndjson`);
  const partial = `${file}.partial`;
  // Member data (account numbers): readable by the service's user alone, whatever a crash left.
  await rm(partial, { force: true });
  const handle = await open(partial, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
  let events = 0;
  try {
    for (let after: AuditPosition | undefined; ;) {
      const rows = await auditEvents.pageFrom(db, source.table, source.filter, after, EXPORT_PAGE);
      if (rows.length > 0) {
        await handle.write(rows.map((row) => `${JSON.stringify(auditEventOf(row))}\n`).join(''));
        events += rows.length;
      }
      if (rows.length < EXPORT_PAGE) break;
      after = positionOf(rows.at(-1)!);
    }
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(partial, { force: true });
    throw error;
  }
  await handle.close();
  if (events === 0) {
    await rm(partial, { force: true });
    return { events };
  }
  await rename(partial, file);
  return { file, events };
}

const countOf = async (db: Db, table: string, before?: Date) => {
  const { rows } = await sql<{ count: string }>`select count(*) as count from ${sql.table(table)}
    ${before ? sql`where at < ${before.toISOString()}::timestamptz` : sql``}`.execute(db);
  return Number(rows[0]!.count);
};

/** One round on PostgreSQL's partitioned trail, on one connection holding the upkeep's lock. */
async function partitionedRound(db: Db, options: AuditRetentionOptions, now: Date): Promise<AuditRetentionOutcome> {
  const { ranged, names } = await partitions(db);
  const created: string[] = [];
  const today = startOfUtcDay(now);
  // Days an earlier partition covers are not created again.
  const coveredUntil = Math.max(0, ...ranged.filter((p) => p.from === undefined).map((p) => p.to.getTime()));
  for (let ahead = 0; ahead <= (options.aheadDays ?? AHEAD_DAYS); ahead += 1) {
    const day = addDays(today, ahead);
    if (day.getTime() < coveredUntil || names.has(`audit_event_p${compactDay(day)}`)) continue;
    created.push(await createDay(db, day));
  }
  const retired: { name: string; events: number; file?: string }[] = [];
  if (options.retentionDays === 0) return { busy: false, created, retired };
  const cutoff = startOfUtcDay(addDays(now, -options.retentionDays));
  for (const partition of ranged.filter((p) => p.to <= cutoff).sort((a, b) => a.to.getTime() - b.to.getTime())) {
    const exported = options.exportDir
      ? await exportEvents(db, { table: partition.name, filter: {} }, options.exportDir, partition.name)
      : { events: await countOf(db, partition.name) };
    await db.transaction().execute(async (trx) => {
      await sql`set local lock_timeout = ${sql.lit(LOCK_TIMEOUT)}`.execute(trx);
      await sql`drop table ${sql.table(partition.name)}`.execute(trx);
    });
    retired.push({ name: partition.name, ...exported });
  }
  // Events the default partition kept past the retention (their day's partition was never created).
  const stale = `${AUDIT_DEFAULT_PARTITION}_before_${compactDay(cutoff)}`;
  const filter = { to: cutoff };
  const exported = options.exportDir
    ? await exportEvents(db, { table: AUDIT_DEFAULT_PARTITION, filter }, options.exportDir, stale)
    : { events: await countOf(db, AUDIT_DEFAULT_PARTITION, cutoff) };
  if (exported.events > 0) {
    await sql`delete from ${sql.table(AUDIT_DEFAULT_PARTITION)} where at < ${cutoff.toISOString()}::timestamptz`.execute(
      db,
    );
    retired.push({ name: stale, ...exported });
  }
  return { busy: false, created, retired };
}

/** One round on the embedded database's plain trail: the events of the days past the retention go. */
async function plainRound(db: Db, options: AuditRetentionOptions, now: Date): Promise<AuditRetentionOutcome> {
  if (options.retentionDays === 0) return { busy: false, created: [], retired: [] };
  const cutoff = startOfUtcDay(addDays(now, -options.retentionDays));
  const name = `audit_event_before_${compactDay(cutoff)}`;
  const exported = options.exportDir
    ? await exportEvents(db, { table: 'audit_event', filter: { to: cutoff } }, options.exportDir, name)
    : { events: await countOf(db, 'audit_event', cutoff) };
  if (exported.events === 0) return { busy: false, created: [], retired: [] };
  await sql`delete from audit_event where at < ${cutoff.toISOString()}::timestamptz`.execute(db);
  return { busy: false, created: [], retired: [{ name, ...exported }] };
}

/**
 * One round of the trail's upkeep: partitions created ahead, those past the retention exported (when asked)
 * and retired. Skipped, `busy`, when another process of the fleet is doing it.
 *
 * @example await maintainAuditTrail(database, { retentionDays: 365, exportDir: '/var/lib/coregate/audit' })
 */
export async function maintainAuditTrail(
  database: Pick<Database, 'db' | 'kind'>,
  options: AuditRetentionOptions,
): Promise<AuditRetentionOutcome> {
  const now = options.now ?? new Date();
  // The embedded database has one process (the data dir's lock), and its one connection is not held.
  if (database.kind === 'pglite') return plainRound(database.db, options, now);
  return database.db.connection().execute(async (db) => {
    const { rows } = await sql<{
      locked: boolean;
    }>`select pg_try_advisory_lock(${RETENTION_LOCK}, hashtext(current_schema())) as locked`.execute(db);
    if (!rows[0]?.locked) return { busy: true, created: [], retired: [] };
    try {
      return await partitionedRound(db, options, now);
    } finally {
      await sql`select pg_advisory_unlock(${RETENTION_LOCK}, hashtext(current_schema()))`.execute(db);
    }
  });
}
