/**
 * Opens the records store: embedded PGlite (default, persisted in a directory or held in memory) or
 * PostgreSQL through a connection URL. Both speak the same SQL and return values in the same JS types.
 */
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql, type CompiledQuery, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { traceQuery } from '../telemetry/tracing.js';
import { PGliteDialect } from './pglite-dialect.js';

/** Kysely over a schema derived at run time from the catalog, so queries are built with `sql`. */
export type Db = Kysely<unknown>;

/** Which database a store is on: PostgreSQL, or the embedded PGlite. */
export type DatabaseKind = 'pglite' | 'postgres';

export interface Database {
  readonly db: Db;
  readonly kind: DatabaseKind;
  /**
   * Runs a bulk load over up to `sessions` connections of its own (PostgreSQL; the embedded database
   * has one), each inside one transaction: all commit when `load` resolves, all roll back when it throws.
   */
  bulkLoad<T>(sessions: number, load: (sessions: readonly BulkSession[]) => Promise<T>): Promise<T>;
  /** The embedded database's data directory, as `loadDataDir` takes it (the embedded database only). */
  dumpDataDir?(): Promise<Blob>;
  close(): Promise<void>;
}

/** How a database's connections are used now (`/metrics`). */
export interface DatabaseUsage {
  /** Connections checked out and idle, and the most there may be (the pool size; 1 for the embedded database). */
  readonly busy: number;
  readonly idle: number;
  readonly max: number;
  /** Callers waiting for a connection. */
  readonly waiting: number;
  /** Queries sent and not yet answered. */
  readonly queriesInFlight: number;
}

const usages = new WeakMap<Db, () => DatabaseUsage>();

/**
 * The use of the connections behind a `Db` that `openDatabase` opened (undefined for any other).
 * @example databaseUsage(database.db)?.waiting // 0
 */
export function databaseUsage(db: Db): DatabaseUsage | undefined {
  return usages.get(db)?.();
}

/** Runs one statement on its own pooled connection, past Kysely's executor (PostgreSQL only). */
type StatementRunner = (query: CompiledQuery) => Promise<{ rows: unknown[] }>;
const statementRunners = new WeakMap<Db, StatementRunner>();

/**
 * Runs one compiled statement outside any transaction and resolves to its rows. On PostgreSQL it goes
 * straight to a pooled connection as a named (prepared) statement, past Kysely's executor, which costs a few
 * promise turns and allocations a call on the hot write path does not need; failures are the same values
 * (`DatabaseUnavailableError`, `DatabaseBusyError`, pg's errors). Elsewhere (PGlite, a transaction) it is
 * `db.executeQuery`.
 * @example const { rows } = await runStatement<{ stamp: string }>(db, CompiledQuery.raw('select now()::text as stamp', []));
 */
export async function runStatement<Row>(db: Db, query: CompiledQuery): Promise<{ rows: Row[] }> {
  const run = statementRunners.get(db);
  return (run ? run(query) : db.executeQuery<Row>(query)) as Promise<{ rows: Row[] }>;
}

/** One connection of a bulk load. */
export interface BulkSession {
  execute(statement: string): Promise<void>;
  /**
   * Streams COPY text-format lines into `table (columns)`. `freeze` writes the rows already frozen and
   * visible (no later vacuum); it needs the table truncated earlier in the same session.
   */
  copy(table: string, columns: readonly string[], text: string, freeze: boolean): Promise<void>;
}

const copyInto = (table: string, columns: readonly string[], source: string, freeze: boolean) =>
  `copy ${table} (${columns.join(', ')}) from ${source}${freeze ? ' with (freeze)' : ''}`;

async function postgresBulkLoad<T>(
  pool: pg.Pool,
  count: number,
  load: (sessions: readonly BulkSession[]) => Promise<T>,
): Promise<T> {
  const clients: pg.PoolClient[] = [];
  try {
    for (let i = 0; i < Math.max(1, count); i += 1) clients.push(await pool.connect());
    await Promise.all(clients.map((client) => client.query('begin')));
    const sessions = clients.map((client): BulkSession => ({
      execute: async (statement) => void (await client.query(statement)),
      copy: (table, columns, text, freeze) =>
        new Promise<void>((resolve, reject) => {
          const stream = client.query(copyFrom(copyInto(table, columns, 'stdin', freeze)));
          stream.on('finish', resolve).on('error', reject);
          stream.end(text);
        }),
    }));
    const result = await load(sessions);
    for (const client of clients) await client.query('commit');
    return result;
  } catch (error) {
    await Promise.all(clients.map((client) => client.query('rollback').catch(() => undefined)));
    throw error;
  } finally {
    for (const client of clients) client.release();
  }
}

async function pgliteBulkLoad<T>(
  db: Db,
  pglite: PGlite,
  load: (sessions: readonly BulkSession[]) => Promise<T>,
): Promise<T> {
  // Holding Kysely's connection keeps every other user of the single embedded connection waiting.
  return db.connection().execute(async () => {
    await pglite.query('begin');
    try {
      const session: BulkSession = {
        execute: async (statement) => void (await pglite.exec(statement)),
        copy: async (table, columns, text, freeze) =>
          void (await pglite.query(copyInto(table, columns, `'/dev/blob'`, freeze), [], { blob: new Blob([text]) })),
      };
      const result = await load([session]);
      await pglite.query('commit');
      return result;
    } catch (error) {
      await pglite.query('rollback');
      throw error;
    }
  });
}

export interface DatabaseOptions {
  /** postgres:// URL; absent means the embedded database. */
  readonly url?: string;
  /** Embedded database directory; absent means in memory. */
  readonly dataDir?: string;
  /**
   * An embedded database's first contents: a data directory PGlite dumped (`dumpDataDir`), instead of a new
   * cluster. A test's migrated database starts from one in under a second, where a new cluster takes several.
   */
  readonly loadDataDir?: Blob;
  /** PostgreSQL schema to use (created if missing); tests use one schema per suite. */
  readonly schema?: string;
  readonly poolSize?: number;
  /** PostgreSQL: how long to wait for a connection, and for one query, before the database counts as unavailable. */
  readonly connectTimeoutMs?: number;
  readonly queryTimeoutMs?: number;
  /** Told when an idle or checked-out PostgreSQL connection is lost (the pool replaces it); for the log. */
  readonly onConnectionError?: (error: Error) => void;
}

const OID = { int8: 20, numeric: 1700, date: 1082, timestamptz: 1184 } as const;

// Dates stay YYYY-MM-DD strings (spec); numeric and bigint become JS numbers.
const parsers: Record<number, (value: string) => unknown> = {
  [OID.int8]: Number,
  [OID.numeric]: Number,
  [OID.date]: (value) => value,
};

function postgresTypes(): pg.CustomTypesConfig {
  return {
    getTypeParser: ((oid: number, format?: string) =>
      parsers[oid] ?? pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
  };
}

/** Distinct query texts given a statement name; further texts run unnamed (parsed each time). */
const MAX_NAMED_STATEMENTS = 2000;

/**
 * The database cannot be reached: the connection was refused, lost or timed out, or the server is
 * shutting down or starting. Callers answer 503 and retry later; nothing about the request was wrong.
 */
export class DatabaseUnavailableError extends Error {
  constructor(cause: unknown, message = 'the database is not reachable') {
    super(message, { cause });
    this.name = 'DatabaseUnavailableError';
  }
}

/**
 * The database answers, but every connection of the pool stayed checked out for as long as a call waits
 * for one: queries are slow or too many, and the server is fine. A kind of unavailability, retried as one,
 * answered with its own words (503 saying the connections are all in use).
 */
export class DatabaseBusyError extends DatabaseUnavailableError {
  constructor(cause: unknown) {
    super(cause, "the database's connections are all in use");
    this.name = 'DatabaseBusyError';
  }
}

/** SQLSTATEs and socket errors that mean "the server is not there (now)", not "the query is wrong". */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);
const UNAVAILABLE_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** pg-pool's wait for a connection ran out (the pool at its size, none came free in time). */
const CHECKOUT_TIMEOUT_MESSAGE = 'timeout exceeded when trying to connect';
/** pg reports lost connections and its own timeouts as plain Errors with these messages. */
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed)/;

/** @example isConnectionFailure(Object.assign(new Error(), { code: 'ECONNREFUSED' })) // true */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_SOCKET_CODES.has(code))) return true;
  if (error instanceof AggregateError && error.errors.some(isConnectionFailure)) return true;
  return UNAVAILABLE_MESSAGE.test(error.message);
}

const unavailableOr = (error: unknown): unknown =>
  isConnectionFailure(error) ? new DatabaseUnavailableError(error) : error;

/**
 * The pool Kysely sees: every query text gets a statement name, so each connection parses and plans it
 * once and then only binds and executes it. The number of names is bounded, since search queries are
 * compiled from user input and could otherwise grow the server's statement cache without end.
 *
 * It is also where a lost database stops being fatal: every client has an `error` listener for its whole
 * life (pg emits `error` on a checked-out client when the server goes away between queries, and an
 * unheard `error` ends the process), a client whose connection failed is destroyed on release instead of
 * going back to the pool, and connection failures become `DatabaseUnavailableError`.
 */
function preparingPool(
  pool: pg.Pool,
  size: number,
  onConnectionError: (error: Error) => void,
  usage: { queriesInFlight: number },
): PostgresPool {
  /** Connections handed out and not yet released (pg's own counts include those still connecting). */
  let checkedOut = 0;
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) {
      name = `cg_${names.size}`;
      names.set(text, name);
    }
    return name;
  };
  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let broken = false;
    client.on('error', (error) => {
      broken = true;
      onConnectionError(error);
    });
    const failed = (error: unknown): never => {
      if (isConnectionFailure(error)) broken = true;
      throw unavailableOr(error);
    };
    const run = async (text: string, values?: unknown[]) => {
      usage.queriesInFlight += 1;
      try {
        // A child span of the request in flight, named by the statement (docs/tracing.md; off, a flag read).
        return await traceQuery('pg', text, () => client.query({ name: nameOf(text), text, values })).catch(failed);
      } finally {
        usage.queriesInFlight -= 1;
      }
    };
    return {
      // Kysely passes either a query text with its parameters or a cursor (streaming), which pg runs as is.
      query: ((query: string | pg.Submittable, values?: unknown[]) =>
        typeof query === 'string' ? run(query, values) : client.query(query)) as unknown as PostgresPoolClient['query'],
      release: (destroy?: boolean) => {
        checkedOut -= 1;
        client.release(destroy || broken);
        // A client the pool keeps starts its next checkout sound; a destroyed one is never seen again.
        broken = false;
      },
    };
  };
  // Wrapped (and so listened to) as the pool connects it, before it is handed out: a server shutting down
  // can end a session in the same read that completes its start-up, and that `error` is emitted before
  // `pool.connect()`'s caller runs (the fleet test's PostgreSQL restart ended a worker so).
  pool.on('connect', (client) => wrapped.set(client, wrap(client)));
  return {
    async connect() {
      const client = await pool.connect().catch((error: unknown) => {
        // The wait ran out while every connection was in use: busy, not away. A pool filled with connections
        // still connecting (a server that does not answer) times out the same way, and is unavailable.
        if (checkedOut >= size && (error as Error).message === CHECKOUT_TIMEOUT_MESSAGE) {
          throw new DatabaseBusyError(error);
        }
        throw unavailableOr(error);
      });
      checkedOut += 1;
      let connection = wrapped.get(client);
      if (!connection) {
        connection = wrap(client);
        wrapped.set(client, connection);
      }
      return connection;
    },
    end: () => pool.end(),
  };
}

/**
 * The embedded database's settings: PGlite's own, with a buffer cache of 16 MB instead of PostgreSQL's
 * 128 MB. PGlite keeps its shared memory inside the WebAssembly heap, which never shrinks, so the cache is
 * resident memory of the server process; pages it does not hold are read from the operating system's file
 * cache, a copy away (docs/performance.md, "Memory of the embedded server"). PGlite runs without fsync
 * (`-F` in its own settings): its writes survive the process, not the machine, so full-page images in the
 * WAL, which guard only against a page torn by the machine failing mid-write, protect nothing here and are
 * off; with them, the first update of each page after a checkpoint wrote 8 KB more WAL.
 */
const PGLITE_START_PARAMS = [
  ...PGlite.defaultStartParams,
  ...['-c', 'shared_buffers=16MB', '-c', 'wal_buffers=1MB', '-c', 'full_page_writes=off'],
];

/** @example const { db, close } = await openDatabase({ dataDir: './data/pg' }) */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.url) {
    if (options.schema) {
      const admin = new pg.Client({ connectionString: options.url });
      await admin.connect();
      await admin.query(`create schema if not exists "${options.schema}"`);
      await admin.end();
    }
    const onConnectionError = options.onConnectionError ?? (() => undefined);
    const size = options.poolSize ?? 10;
    const pool = new pg.Pool({
      connectionString: options.url,
      max: size,
      types: postgresTypes(),
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
      query_timeout: options.queryTimeoutMs ?? 15_000,
      keepAlive: true,
      // Operators find coregate's connections in pg_stat_activity by name; a test's schema is in its name.
      application_name: options.schema ? `coregate ${options.schema}` : 'coregate',
      // No JIT: every query is a short prepared statement, and a generic plan's estimate (an unknown account
      // or time) can pass jit_above_cost, which then compiles the plan for tens of milliseconds per call.
      options: ['-c jit=off', ...(options.schema ? [`-c search_path="${options.schema}"`] : [])].join(' '),
    });
    // An idle client that loses its connection is removed by the pool, which then emits `error`: unheard, it would end the process.
    pool.on('error', onConnectionError);
    const queries = { queriesInFlight: 0 };
    const preparing = preparingPool(pool, size, onConnectionError, queries);
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: preparing }) });
    statementRunners.set(db, async (query) => {
      const connection = await preparing.connect();
      try {
        const result = (await connection.query(query.sql, [...query.parameters])) as unknown as { rows: unknown[] };
        return { rows: result.rows };
      } finally {
        connection.release();
      }
    });
    usages.set(db, () => ({
      busy: pool.totalCount - pool.idleCount,
      idle: pool.idleCount,
      max: size,
      waiting: pool.waitingCount,
      queriesInFlight: queries.queriesInFlight,
    }));
    return {
      db,
      kind: 'postgres',
      bulkLoad: (sessions, load) => postgresBulkLoad(pool, sessions, load),
      close: () => db.destroy(),
    };
  }
  const pglite = await PGlite.create(options.dataDir ?? 'memory://', {
    parsers,
    startParams: PGLITE_START_PARAMS,
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
  });
  const dialect = new PGliteDialect(pglite);
  const db = new Kysely<unknown>({ dialect });
  const { usage } = dialect;
  usages.set(db, () => ({ ...usage, idle: 1 - usage.busy, max: 1 }));
  return {
    db,
    kind: 'pglite',
    bulkLoad: (_sessions, load) => pgliteBulkLoad(db, pglite, load),
    dumpDataDir: async () => (await pglite.dumpDataDir('none')) as Blob,
    async close() {
      await db.destroy();
      // Kysely closes its driver only if it ran a query; an unclosed PGlite keeps the process alive.
      if (!pglite.closed) await pglite.close();
    },
  };
}

/** Drops a PostgreSQL schema (test clean-up). */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`drop schema if exists "${schema}" cascade`);
  await admin.end();
}

/** Throws when the database cannot answer. */
export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
