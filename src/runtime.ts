/**
 * Opens what every command needs: the master secret, the database (embedded under the data directory
 * or PostgreSQL), checked to be the secret's, migrated to the current schema. The embedded database
 * belongs to one process: its data directory is locked first, and unlocked when the database closes.
 */
import { join } from 'node:path';
import { hostAndPort, type Config } from './config.js';
import {
  secretsFromMaster,
  loadMasterSecret,
  readSecretFile,
  type MasterSecret,
  type Secrets,
} from './crypto/secrets.js';
import { lockDataDir, tookOverMessage, type DataDirLock } from './database/data-dir-lock.js';
import { openDatabase, type Database, type Db } from './database/database.js';
import { migrate } from './database/migrations.js';
import { storeSecret } from './store/store-secret.js';

export interface Runtime {
  readonly database: Database;
  readonly secrets: Secrets;
  /** Migrations applied by this open. */
  readonly applied: readonly string[];
}

export interface RuntimeOptions {
  /** false: do not apply migrations. */
  readonly migrate?: boolean;
  /** How the data directory's lock names this process to a second one; by default its command words (`coregate serve`). */
  readonly command?: string;
  /** Where a line saying a stale lock was taken over goes; by default stderr. */
  readonly report?: (line: string) => void;
  /** Told when a PostgreSQL connection is lost (the pool replaces it); for the log. */
  readonly onConnectionError?: (error: Error) => void;
}

export function embeddedDatabaseDir(config: Config): string {
  return join(config.dataDir, 'pglite');
}

const toStderr = (line: string) => void process.stderr.write(`coregate: ${line}\n`);

/**
 * The store was created with another secret than this process's: its sealed values would neither match
 * nor open (docs/decisions.md, "One secret per store, checked"). Its message is the one line that says
 * which store, which secret was used, and what to set.
 */
export class StoreSecretMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreSecretMismatchError';
  }
}

/**
 * The store as the operator names it: the embedded database's data dir, or PostgreSQL's host, port and
 * database (never the URL, which may hold a password).
 * @example storeName({ databaseUrl: 'postgres://app:pw@db:5432/core', dataDir: './data' }) // 'PostgreSQL db:5432/core'
 */
export function storeName(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (!config.databaseUrl) return `the embedded database in ${config.dataDir}`;
  let database = '';
  try {
    database = decodeURIComponent(new URL(config.databaseUrl).pathname.slice(1));
  } catch {
    // hostAndPort says the URL is not one.
  }
  return `PostgreSQL ${hostAndPort(config.databaseUrl, 5432)}${database ? `/${database}` : ''}`;
}

/**
 * The line refusing a store created with another secret: which store, which secret this process used, and
 * what to set. `isStoreSecret` tells whether a secret is the store's, so that a data dir's secret.key that
 * is can be named when COREGATE_SECRET is set to another.
 */
async function mismatchMessage(
  config: Config,
  secret: MasterSecret,
  isStoreSecret: (master: Buffer) => Promise<boolean>,
): Promise<string> {
  const store = `this store (${storeName(config)})`;
  const embedded = !config.databaseUrl;
  const remedy = 'set COREGATE_SECRET to the secret the store was created with';
  switch (secret.source) {
    case 'setting': {
      let inFile: Buffer | undefined;
      try {
        inFile = readSecretFile(secret.file);
      } catch {
        // An unreadable file is no hint; the line says what it can without it.
      }
      if (inFile && (await isStoreSecret(inFile))) {
        return (
          `${store} was created with the secret in ${secret.file}, not with COREGATE_SECRET: ` +
          'set COREGATE_SECRET to that secret, or remove COREGATE_SECRET so that the file is used'
        );
      }
      const fleet = embedded ? '' : ' (every instance on one database uses the same)';
      return `${store} was created with another secret than COREGATE_SECRET: ${remedy}${fleet}`;
    }
    case 'file': {
      const putBack = embedded ? ', or put back the secret.key it was created with' : '';
      return `${store} was created with another secret than ${secret.file}, used because COREGATE_SECRET is not set: ${remedy}${putBack}`;
    }
    case 'generated': {
      const putBack = embedded ? `, or put its secret.key back in ${config.dataDir}` : '';
      return (
        `${store} was created with a secret that is not here (COREGATE_SECRET is not set and ${config.dataDir} ` +
        `has no secret.key): ${remedy}${putBack}`
      );
    }
  }
}

/**
 * Checks, before anything else is read or written, that the store was created with this secret: the
 * fingerprint it records is this secret's, or, recording none (a new store, or one from before
 * fingerprints), the values it holds sealed open under it. Returns whether it records a fingerprint.
 */
async function checkStoreSecret(db: Db, config: Config, secret: MasterSecret): Promise<boolean> {
  const recorded = await storeSecret.recorded(db);
  const isStoreSecret = recorded
    ? async (master: Buffer) => secretsFromMaster(master).fingerprint().equals(recorded)
    : (master: Buffer) => storeSecret.opensSealedValues(db, secretsFromMaster(master));
  if (await isStoreSecret(secret.master)) return recorded !== undefined;
  return refuse(config, secret, isStoreSecret);
}

async function refuse(
  config: Config,
  secret: MasterSecret,
  isStoreSecret: (master: Buffer) => Promise<boolean>,
): Promise<never> {
  const message = await mismatchMessage(config, secret, isStoreSecret);
  // A secret.key generated for a store that is not its own would only stand in the way of the right one.
  secret.forget();
  throw new StoreSecretMismatchError(message);
}

/**
 * Without DATABASE_URL, fails at once with a `DataDirLockedError` when another process holds the data
 * directory (PGlite is single-process: two would each keep their own copy). PostgreSQL is never locked.
 *
 * @example
 * const runtime = await openRuntime(config);
 * try { ... } finally { await runtime.database.close(); }
 */
export async function openRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const lock = config.databaseUrl ? undefined : await lockDataDir(config.dataDir, options.command);
  if (lock?.tookOver !== undefined) (options.report ?? toStderr)(tookOverMessage(lock));
  try {
    const secret = loadMasterSecret(config.dataDir, config.secret);
    const secrets = secretsFromMaster(secret.master);
    const opened = await openDatabase(
      config.databaseUrl
        ? {
            url: config.databaseUrl,
            poolSize: config.databasePoolSize,
            connectTimeoutMs: config.databaseConnectTimeoutMs,
            queryTimeoutMs: config.databaseQueryTimeoutMs,
            onConnectionError: options.onConnectionError,
          }
        : { dataDir: embeddedDatabaseDir(config) },
    );
    const database = lock ? unlockingOnClose(opened, lock) : opened;
    try {
      const fingerprinted = await checkStoreSecret(database.db, config, secret);
      if (options.migrate === false) return { database, secrets, applied: [] };
      const applied = await migrate(database.db, database.kind);
      if (!fingerprinted) {
        // Instances starting together on a store that records no fingerprint agree on the first recorded.
        const recorded = await storeSecret.record(database.db, secrets.fingerprint());
        if (!recorded.equals(secrets.fingerprint()))
          await refuse(config, secret, async (master) => secretsFromMaster(master).fingerprint().equals(recorded));
      }
      return { database, secrets, applied };
    } catch (error) {
      await database.close();
      throw error;
    }
  } catch (error) {
    lock?.release();
    throw error;
  }
}

function unlockingOnClose(database: Database, lock: DataDirLock): Database {
  return {
    ...database,
    async close() {
      try {
        await database.close();
      } finally {
        lock.release();
      }
    },
  };
}
