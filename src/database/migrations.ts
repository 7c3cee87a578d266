/**
 * Versioned migrations, applied in order on start and by `coregate migrate`. Each runs in its own
 * transaction under an advisory lock, so concurrent starts of several instances apply it once.
 */
import { createHash } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { recordDef, SHARE_RECORD_NAMES } from '../catalog/index.js';
import {
  auditTrailDdl,
  FAULT_RULE_TABLE,
  generationDdl,
  reconcileTableDdl,
  recordIndexDdl,
  schemaDdl,
  STORE_SECRET_TABLE,
} from './schema.js';
import type { DatabaseKind } from './database.js';
import { fixedTables } from './tables.js';

export interface Migration {
  readonly id: string;
  /** The statements on the database of `kind`: a migration may differ between PostgreSQL and the embedded one. */
  readonly statements: (kind: DatabaseKind) => readonly string[];
}

/**
 * 0001 creates the schema as the catalog defines it. Once released, a catalog change that alters a
 * table ships as a new migration; `schema.sql` (checked by a test) shows the change in review. Since 0001
 * creates the tables as they are now, a later migration must be a no-op on a new database (`if not exists`).
 */
export const MIGRATIONS: readonly Migration[] = [
  { id: '0001_catalog', statements: schemaDdl },
  {
    id: '0002_covering_name_indexes',
    statements: () => rebuildIndexes('ShareName', ['share_name_ssn_idx', 'share_name_short_name_idx']),
  },
  {
    id: '0003_session_token_lockout_backoff',
    statements: () => [
      // A session belongs to the bearer token that created it. Sessions from before cannot be bound to
      // one, so they end: their callers log on again.
      'alter table session add column if not exists token_name text',
      'delete from session where token_name is null',
      'alter table session alter column token_name set not null',
      // Locks since the last success: the administrative password's backoff doubles with each.
      'alter table credential_lockout add column if not exists locks integer not null default 0',
    ],
  },
  {
    // The share and its first seven sub-records take every field of the core's XSD type; fields coregate
    // had named its own way keep their data under the core's name (docs/decisions.md, "SymXchange").
    id: '0004_core_share_fields',
    statements: () => [
      ...reconcileTableDdl(recordDef('Share')),
      ...reconcileTableDdl(recordDef('ShareAnalysis')),
      ...reconcileTableDdl(recordDef('ShareAnalysisGroup')),
      ...reconcileTableDdl(recordDef('ShareAnalysisPlan'), { expire_date: 'expiration_date' }),
      ...reconcileTableDdl(recordDef('ShareCheckOrder'), {
        order_date: 'last_order_date',
        starting_check_number: 'start_number',
        style: 'check_style',
        delivery_method: 'ship_method',
        ship_date: 'status_date',
      }),
      ...reconcileTableDdl(recordDef('ShareHold')),
      ...reconcileTableDdl(recordDef('ShareNote')),
      ...reconcileTableDdl(recordDef('ShareTransfer'), {
        to_account: 'to_account_number',
        to_id_type: 'id_type',
        to_id: 'id',
      }),
    ],
  },
  {
    // Gateway mode: the audit trail says how long the core took and how the call ended there; collateral
    // numbers are the core's text of any length (docs/decisions.md), kept to 64 characters.
    id: '0005_audit_core_outcome',
    statements: () => [
      'alter table audit_event add column if not exists core_latency_ms integer',
      'alter table audit_event add column if not exists core_outcome varchar(40)',
      'alter table audit_event alter column collateral_number type varchar(64)',
    ],
  },
  {
    // The share records leave room on each page for their rows' updated versions (RecordDef.fillFactor).
    // Pages written before keep none until they are rewritten: `coregate seed --reset` or a VACUUM FULL.
    id: '0006_share_fill_factor',
    statements: () =>
      SHARE_RECORD_NAMES.map(recordDef).map(
        (record) => `alter table ${record.table} set (fillfactor = ${record.fillFactor})`,
      ),
  },
  // FindBy answers kept in memory are checked against a generation that every change they depend on moves.
  { id: '0007_lookup_generation', statements: generationDdl },
  // Reads of collateral records kept in memory are checked against a generation of the collateral tree's tables.
  { id: '0008_collateral_generation', statements: generationDdl },
  {
    // Lockouts are kept per credential and caller, and forgotten a lockout time after the last failure
    // (docs/decisions.md, "Security"); one credential's failures from every caller pace its slow-down.
    id: '0009_lockout_per_caller',
    statements: () => [
      'alter table credential_lockout add column if not exists failed_at timestamptz not null default now()',
      // Rows of the earlier keys (a credential for every caller, the admin password per token) would never be read again.
      'delete from credential_lockout',
      `create table if not exists credential_slowdown (
  credential varchar(40) primary key,
  failures_until timestamptz not null
)`,
    ],
  },
  {
    // ShareCheckOrder takes the core's Ssn, the SSNs printed on the checks: protected as every SSN, its
    // entries sealed together (docs/decisions.md, "SymXchange"). A new column is null: no order has one yet.
    id: '0010_check_order_ssn',
    statements: () => [
      'alter table share_check_order add column if not exists ssn_hmac bytea',
      'alter table share_check_order add column if not exists ssn_enc bytea',
    ],
  },
  {
    // The sandbox's fault rules, kept where every worker and instance reads the same set (docs/decisions.md,
    // "Fault rules live in the database").
    id: '0011_fault_rules',
    statements: () => [`create table if not exists ${FAULT_RULE_TABLE}`],
  },
  {
    // The admin API (docs/decisions.md, "Administering a running coregate"): a user can be disabled, an
    // administrative call's audit event names what it acted on, and the demo token, which has every scope,
    // gets the new `admin` scope so that the sandbox's CLI and /docs can administer the running server.
    id: '0012_admin_api',
    statements: () => [
      'alter table app_user add column if not exists disabled_at timestamptz',
      'alter table audit_event add column if not exists target varchar(80)',
      `update api_token set scopes = array_append(scopes, 'admin')
  where name ~ '^demo-[0-9]+$' and revoked_at is null and 'store:reset' = any(scopes) and not 'admin' = any(scopes)`,
    ],
  },
  {
    // The audit trail at production volume: partitioned by day on PostgreSQL, its partitions created ahead
    // and retired after COREGATE_AUDIT_RETENTION_DAYS (store/audit-retention.ts); searched by account through
    // a GIN index (docs/decisions.md, "The audit trail at production volume").
    id: '0013_audit_partitions',
    statements: auditTrailDdl,
  },
  // An audit event keeps the trace id of its call's span, when spans are exported (docs/tracing.md).
  {
    id: '0014_audit_trace_id',
    statements: () => ['alter table audit_event add column if not exists trace_id char(32)'],
  },
  // A core's outcome names the fault rule that made it (`CORE_CREDENTIALS_REJECTED by default:credentials-refused`):
  // a longer varchar is the same type on disk, so no row is rewritten.
  {
    id: '0015_audit_core_fault_rule',
    statements: () => ['alter table audit_event alter column core_outcome type varchar(80)'],
  },
  // A store records the fingerprint of its secret, and refuses any other (docs/decisions.md, "One secret per
  // store, checked"). A store from before gets it on its first start, from the secret its sealed values open with.
  { id: '0016_store_secret', statements: () => [`create table if not exists ${STORE_SECRET_TABLE}`] },
];

/** Drops indexes and creates them as the catalog now defines them (on a new database: the same again, on empty tables). */
function rebuildIndexes(recordName: string, names: readonly string[]): string[] {
  const ddl = recordIndexDdl(recordDef(recordName));
  return names.flatMap((name) => {
    const create = ddl.get(name);
    if (!create) throw new Error(`the catalog has no index ${name} on ${recordName}`);
    return [`drop index if exists ${name}`, create];
  });
}

const MIGRATION_LOCK = 627_0001;

function checksum(statements: readonly string[]): string {
  return createHash('sha256').update(statements.join(';\n')).digest('hex');
}

/** Applies pending migrations to a database of `kind`; returns the ids applied. */
export async function migrate(db: Kysely<unknown>, kind: DatabaseKind): Promise<string[]> {
  // Under the lock too: instances (or cluster workers) starting together on a new database would
  // otherwise race to create the table, and one of them would fail.
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
    await sql`create table if not exists coregate_migration (
      id varchar(64) primary key,
      checksum char(64) not null,
      applied_at timestamptz not null default now()
    )`.execute(trx);
  });
  const applied: string[] = [];
  for (const migration of MIGRATIONS) {
    const statements = migration.statements(kind);
    const done = await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
      const migrations = fixedTables(trx);
      const existing = await migrations
        .selectFrom('coregate_migration')
        .select('checksum')
        .where('id', '=', migration.id)
        .executeTakeFirst();
      if (existing) return false;
      for (const statement of statements) await sql.raw(statement).execute(trx);
      await migrations
        .insertInto('coregate_migration')
        .values({ id: migration.id, checksum: checksum(statements) })
        .execute();
      return true;
    });
    if (done) applied.push(migration.id);
  }
  return applied;
}
