/**
 * The fixed tables: the service's own tables, whose DDL is written out in `schema.ts` (`SYSTEM_DDL`) and
 * `migrations.ts` rather than derived from the catalog. Their rows are declared here once, so their
 * queries are written with Kysely's typed query builder; the catalog's record tables, whose columns are
 * known only at run time, are queried with `sql` templates.
 */
import {
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type ColumnType,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Generated,
} from 'kysely';
import type { Scope } from '../contract/scopes.js';
import type { Db } from './database.js';

/** A `timestamptz`: read as a Date, written as a Date, an ISO string or an expression such as `now()`. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A `timestamptz ... default now()`: may be left out of an insert. */
type DefaultTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** A `bytea`: PostgreSQL returns a Buffer, the embedded database a Uint8Array; written from a Buffer. */
type Bytes = ColumnType<Uint8Array, Buffer, Buffer>;

export interface CoregateSettingTable {
  key: string;
  value: string;
}

export interface ApiTokenTable {
  id: Generated<number>;
  name: string;
  token_hash: Bytes;
  /** `text[]` holding scope names. */
  scopes: Scope[];
  created_at: DefaultTimestamp;
  expires_at: Timestamp | null;
  revoked_at: Timestamp | null;
  last_used_at: Timestamp | null;
}

export interface IdempotencyKeyTable {
  token_name: string;
  key: string;
  request_hash: string;
  status: number | null;
  /** `jsonb`: the response body, written as JSON text. */
  response: ColumnType<unknown, string | null | undefined, string | null>;
  created_at: DefaultTimestamp;
}

export interface SessionTable {
  token_hash: Bytes;
  token_name: string;
  user_number: number;
  created_at: DefaultTimestamp;
  last_used_at: DefaultTimestamp;
  ended_at: Timestamp | null;
}

export interface MemberSecretTable {
  account_number: string;
  home_banking_password_hash: string | null;
  audio_access_code_hash: string | null;
}

export interface CredentialLockoutTable {
  subject: string;
  failures: number;
  locks: Generated<number>;
  locked_until: Timestamp | null;
  failed_at: DefaultTimestamp;
}

export interface CredentialSlowdownTable {
  credential: string;
  failures_until: Timestamp;
}

export interface AuditEventTable {
  /** `bigint generated always as identity`, read as a number. */
  id: ColumnType<number, never, never>;
  at: DefaultTimestamp;
  request_id: string;
  token_name: string | null;
  user_number: number | null;
  member_account: string | null;
  operation: string;
  account_numbers: string | null;
  collateral_number: string | null;
  status: number;
  code: string | null;
  core_latency_ms: number | null;
  core_outcome: string | null;
  /** What an administrative call acted on (`token:ci`, `user:25`), for the admin API's calls. */
  target: string | null;
  /** The trace id of the call's span when spans are exported (docs/tracing.md). */
  trace_id: string | null;
}

export interface AppUserTable {
  user_number: number;
  name: string;
  password_hash: string;
  created_at: DefaultTimestamp;
  /** Set while the user is disabled: its credentials are refused. */
  disabled_at: Timestamp | null;
}

export interface FaultRuleTable {
  id: ColumnType<number, never, never>;
  operations: string;
  face: 'json' | 'soap' | 'both';
  /** `jsonb`: what happens (contract/fault-rules.ts `FaultEffect`), written as JSON text. */
  effect: ColumnType<unknown, string, string>;
  probability: number;
  times: number | null;
  remaining: number | null;
  /** `bigint`: PostgreSQL returns it as text; read it with `Number`. */
  fired: ColumnType<string | number | bigint, never, number>;
  until: Timestamp;
  created_at: DefaultTimestamp;
  created_by: string | null;
}

export interface CoregateStoreSecretTable {
  /** Always true: the table holds one row at most. */
  singleton: ColumnType<boolean, boolean | undefined, never>;
  fingerprint: Bytes;
  recorded_at: DefaultTimestamp;
}

export interface CoregateMigrationTable {
  id: string;
  checksum: string;
  applied_at: DefaultTimestamp;
}

/** Every fixed table by name, as Kysely's database type. */
export interface FixedTables {
  coregate_setting: CoregateSettingTable;
  api_token: ApiTokenTable;
  idempotency_key: IdempotencyKeyTable;
  session: SessionTable;
  member_secret: MemberSecretTable;
  credential_lockout: CredentialLockoutTable;
  credential_slowdown: CredentialSlowdownTable;
  audit_event: AuditEventTable;
  app_user: AppUserTable;
  coregate_migration: CoregateMigrationTable;
  coregate_store_secret: CoregateStoreSecretTable;
  fault_rule: FaultRuleTable;
}

/**
 * The driver of a typed view: a view runs its queries on the executor of the database it views and has
 * no connections of its own, so a transaction is begun on the database, never on a view.
 */
class ViewDriver implements Driver {
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    throw new Error('fixedTables(db) only builds queries: open connections and transactions on db itself');
  }
  async beginTransaction(): Promise<void> {
    await this.acquireConnection();
  }
  async commitTransaction(): Promise<void> {
    await this.acquireConnection();
  }
  async rollbackTransaction(): Promise<void> {
    await this.acquireConnection();
  }
  async releaseConnection(): Promise<void> {}
  async destroy(): Promise<void> {}
}

const VIEW_DIALECT: Dialect = {
  createAdapter: () => new PostgresAdapter(),
  createDriver: () => new ViewDriver(),
  createQueryCompiler: () => new PostgresQueryCompiler(),
  createIntrospector: (db) => new PostgresIntrospector(db),
};
const VIEW_DRIVER = new ViewDriver();

/**
 * The database (or transaction) typed for the fixed tables: the one place the untyped `Db` is viewed as
 * `Kysely<FixedTables>`. The view runs its queries on `db`'s own executor (the same pool or the same
 * transaction's connection, the same plugins), so it is `db`, only typed.
 * @example await fixedTables(db).selectFrom('app_user').select('name').where('user_number', '=', 7).executeTakeFirst()
 */
export function fixedTables(db: Db): Kysely<FixedTables> {
  return new Kysely<FixedTables>({
    config: { dialect: VIEW_DIALECT },
    dialect: VIEW_DIALECT,
    driver: VIEW_DRIVER,
    executor: db.getExecutor(),
  });
}
