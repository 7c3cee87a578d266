/**
 * Opens what every command needs: the master secret, the database (embedded under the data directory
 * or PostgreSQL), migrated to the current schema.
 */
import { join } from 'node:path';
import type { Config } from './config.js';
import { secretsFromMaster, loadMasterSecret, type Secrets } from './security/secrets.js';
import { openDatabase, type Database } from './store/database.js';
import { migrate } from './store/migrations.js';

export interface Runtime {
  readonly database: Database;
  readonly secrets: Secrets;
  /** Migrations applied by this open. */
  readonly applied: readonly string[];
}

export function embeddedDatabaseDir(config: Config): string {
  return join(config.dataDir, 'pglite');
}

export async function openRuntime(config: Config, options: { migrate?: boolean } = {}): Promise<Runtime> {
  const secrets = secretsFromMaster(loadMasterSecret(config.dataDir, config.secret));
  const database = await openDatabase(
    config.databaseUrl
      ? { url: config.databaseUrl, poolSize: config.databasePoolSize }
      : { dataDir: embeddedDatabaseDir(config) },
  );
  try {
    const applied = options.migrate === false ? [] : await migrate(database.db);
    return { database, secrets, applied };
  } catch (error) {
    await database.close();
    throw error;
  }
}
