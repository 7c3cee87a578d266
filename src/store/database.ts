/**
 * Opens the records store: embedded PGlite (default, persisted in a directory or held in memory) or
 * PostgreSQL through a connection URL. Both speak the same SQL and return values in the same JS types.
 */
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { PGliteDialect } from './pglite-dialect.js';

/** Kysely over a schema derived at run time from the catalog, so queries are built with `sql`. */
export type Db = Kysely<unknown>;

export interface Database {
  readonly db: Db;
  readonly kind: 'pglite' | 'postgres';
  close(): Promise<void>;
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
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', close: () => db.destroy() };
  }
  const pglite = await PGlite.create(options.dataDir ?? 'memory://', { parsers });
  const db = new Kysely<unknown>({ dialect: new PGliteDialect(pglite) });
  return { db, kind: 'pglite', close: () => db.destroy() };
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
