/**
 * Opens what every command needs: the master secret, the database (embedded under the data directory
 * or PostgreSQL), migrated to the current schema. The embedded database belongs to one process: its
 * data directory is locked first, and unlocked when the database closes.
 */
import { join } from 'node:path';
import type { Config } from './config.js';
import { secretsFromMaster, loadMasterSecret, type Secrets } from './crypto/secrets.js';
import { lockDataDir, tookOverMessage, type DataDirLock } from './database/data-dir-lock.js';
import { openDatabase, type Database } from './database/database.js';
import { migrate } from './database/migrations.js';

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
    const secrets = secretsFromMaster(loadMasterSecret(config.dataDir, config.secret));
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
      const applied = options.migrate === false ? [] : await migrate(database.db, database.kind);
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
