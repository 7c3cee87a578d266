/**
 * Opens the records store: embedded PGlite (default, persisted in a directory or held in memory) or
 * PostgreSQL through a connection URL. Both speak the same SQL and return values in the same JS types.
 */
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql, type PostgresPool, type PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { PGliteDialect } from './pglite-dialect.js';

/** Kysely over a schema derived at run time from the catalog, so queries are built with `sql`. */
export type Db = Kysely<unknown>;

export interface Database {
  readonly db: Db;
  readonly kind: 'pglite' | 'postgres';
  /**
   * Runs a bulk load over up to `sessions` connections of its own (PostgreSQL; the embedded database
   * has one), each inside one transaction: all commit when `load` resolves, all roll back when it throws.
   */
  bulkLoad<T>(sessions: number, load: (sessions: readonly BulkSession[]) => Promise<T>): Promise<T>;
  close(): Promise<void>;
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
    const sessions = clients.map(
      (client): BulkSession => ({
        execute: async (statement) => void (await client.query(statement)),
        copy: (table, columns, text, freeze) =>
          new Promise<void>((resolve, reject) => {
            const stream = client.query(copyFrom(copyInto(table, columns, 'stdin', freeze)));
            stream.on('finish', resolve).on('error', reject);
            stream.end(text);
          }),
      }),
    );
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
  /** PostgreSQL schema to use (created if missing); tests use one schema per suite. */
  readonly schema?: string;
  readonly poolSize?: number;
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
 * The pool Kysely sees: every query text gets a statement name, so each connection parses and plans it
 * once and then only binds and executes it. The number of names is bounded, since search queries are
 * compiled from user input and could otherwise grow the server's statement cache without end.
 */
function preparingPool(pool: pg.Pool): PostgresPool {
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
  const wrap = (client: pg.PoolClient): PostgresPoolClient => ({
    get processID() {
      return (client as pg.PoolClient & { processID?: number }).processID;
    },
    // Kysely passes either a query text with its parameters or a cursor (streaming), which pg runs as is.
    query: ((query: string | pg.Submittable, values?: unknown[]) =>
      typeof query === 'string'
        ? client.query({ name: nameOf(query), text: query, values })
        : client.query(query)) as unknown as PostgresPoolClient['query'],
    release: (destroy?: boolean) => client.release(destroy),
  });
  return {
    options: pool.options,
    async connect() {
      const client = await pool.connect();
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

/** @example const { db, close } = await openDatabase({ dataDir: './data/pg' }) */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (options.url) {
    if (options.schema) {
      const admin = new pg.Client({ connectionString: options.url });
      await admin.connect();
      await admin.query(`create schema if not exists "${options.schema}"`);
      await admin.end();
    }
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      types: postgresTypes(),
      ...(options.schema ? { options: `-c search_path="${options.schema}"` } : {}),
    });
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
    return {
      db,
      kind: 'postgres',
      bulkLoad: (sessions, load) => postgresBulkLoad(pool, sessions, load),
      close: () => db.destroy(),
    };
  }
  const pglite = await PGlite.create(options.dataDir ?? 'memory://', { parsers });
  const db = new Kysely<unknown>({ dialect: new PGliteDialect(pglite) });
  return { db, kind: 'pglite', bulkLoad: (_sessions, load) => pgliteBulkLoad(db, pglite, load), close: () => db.destroy() };
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
