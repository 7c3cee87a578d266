/**
 * Test harness: a migrated database (embedded in memory, or a private schema of TEST_DATABASE_URL), the
 * app built on it, an API token and the admin password, and helpers to call operations.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { buildApp, LOG_REDACT } from '../../src/http/app.js';
import { SCOPES, type Scope } from '../../src/contract/scopes.js';
import { settings, SETTING, tokens } from '../../src/store/access.js';
import { dropSchema, openDatabase, type Database } from '../../src/database/database.js';
import { migrate } from '../../src/database/migrations.js';
import { hashPassword } from '../../src/crypto/passwords.js';
import { secretsFromMaster, type Secrets } from '../../src/crypto/secrets.js';
import type { AppOptions } from '../../src/http/app.js';
import { migratedTemplate } from './migrated-template.js';
import { clearPans, clearSsns, scrubLogNoise } from './sensitive.js';

export const ADMIN_PASSWORD = 'test-admin-password';

export interface Backend {
  readonly name: 'pglite' | 'postgres';
  readonly url?: string;
}

/** The databases the storage-facing suites run on: always the embedded one, PostgreSQL when configured. */
export const BACKENDS: readonly Backend[] = [
  { name: 'pglite' },
  ...(process.env.TEST_DATABASE_URL ? [{ name: 'postgres' as const, url: process.env.TEST_DATABASE_URL }] : []),
];

/** A test's own database; on PostgreSQL, `reopen` connects once more to the same schema (another instance). */
export interface TestDatabase extends Database {
  readonly reopen?: () => Promise<Database>;
}

/**
 * A migrated database of a test's own: in memory (from the migrated template, migrated-template.ts), or a
 * fresh schema of TEST_DATABASE_URL dropped on close.
 */
export async function openTestDatabase(backend: Pick<Backend, 'url'>): Promise<TestDatabase> {
  const schema = backend.url ? `test_${randomBytes(6).toString('hex')}` : undefined;
  const database = await openDatabase(
    backend.url ? { url: backend.url, schema } : { loadDataDir: await migratedTemplate() },
  );
  await migrate(database.db, database.kind);
  return {
    ...database,
    ...(backend.url ? { reopen: () => openDatabase({ url: backend.url, schema }) } : {}),
    async close() {
      await database.close();
      if (backend.url && schema) await dropSchema(backend.url, schema);
    },
  };
}

export interface Harness {
  readonly app: FastifyInstance;
  readonly database: TestDatabase;
  readonly secrets: Secrets;
  readonly config: Config;
  /** A token with every scope. */
  readonly token: string;
  /** POSTs a body to a path with the token; `Credentials` default to the admin password. */
  call(path: string, body: Record<string, unknown>, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  /**
   * Another instance of the service on the same database (PostgreSQL only): its own connections, app and
   * caches, the same secrets and token. Closed with the harness.
   */
  anotherInstance(): Promise<Pick<Harness, 'app' | 'call'> & { readonly db: Database['db'] }>;
  tokenWith(scopes: readonly Scope[]): Promise<string>;
  /** Log lines written so far (the service's own pino output, with its redaction). */
  logs(): readonly string[];
  /** Closes the app and database; fails if a clear card number or SSN reached the logs. */
  close(): Promise<void>;
}

export const adminCredentials = { AdministrativeCredentials: { Password: ADMIN_PASSWORD } };

export async function createHarness(
  backend: Backend,
  configOverrides: Partial<Config> = {},
  appOptions: Pick<AppOptions, 'jwt' | 'limiter'> = {},
): Promise<Harness> {
  const database = await openTestDatabase(backend);
  const secrets = secretsFromMaster(randomBytes(32));
  const config = {
    ...loadConfig({}),
    credentialCacheMs: 60_000,
    // No refusal floor: a refused credential is answered at once, where the default would wait four checks'
    // time (over a second at the start of a loaded test machine) on each. test/lockout.test.ts sets and
    // measures the floor.
    credentialRefusalMs: 0,
    rateLimitPerMinute: 1_000_000,
    findByRateLimitPerMinute: 1_000_000,
    // Every answer of every test is checked against its operation's response schema.
    checkResponses: true,
    ...configOverrides,
  };
  await settings.set(database.db, SETTING.adminPasswordHash, await hashPassword(ADMIN_PASSWORD));
  const { token } = await tokens.create(database.db, 'test', SCOPES);
  const logLines: string[] = [];
  const logger = {
    level: 'info',
    redact: { paths: LOG_REDACT, censor: '[redacted]' },
    stream: { write: (line: string) => void logLines.push(line) },
  };
  const app = await buildApp({ db: database.db, databaseKind: database.kind, secrets, config, logger, ...appOptions });
  await app.ready();
  const caller =
    (instance: FastifyInstance): Harness['call'] =>
    (path, body, headers = {}) =>
      instance.inject({
        method: 'POST',
        url: path,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
        payload: JSON.stringify({ Credentials: adminCredentials, ...body }),
      });
  const others: { app: FastifyInstance; database: Database }[] = [];
  let tokenCount = 0;
  return {
    app,
    database,
    secrets,
    config,
    token,
    call: caller(app),
    async anotherInstance() {
      if (!database.reopen) throw new Error('another instance needs PostgreSQL: an embedded database has one process');
      const other = await database.reopen();
      const otherApp = await buildApp({
        db: other.db,
        databaseKind: other.kind,
        secrets,
        config,
        logger,
        ...appOptions,
      });
      await otherApp.ready();
      others.push({ app: otherApp, database: other });
      return { app: otherApp, db: other.db, call: caller(otherApp) };
    },
    async tokenWith(scopes) {
      tokenCount += 1;
      return (await tokens.create(database.db, `scoped-${tokenCount}`, scopes)).token;
    },
    logs: () => logLines,
    async close() {
      for (const other of others) {
        await other.app.close();
        await other.database.close();
      }
      await app.close();
      const logs = scrubLogNoise(logLines);
      const leaked = [...clearPans(logs), ...clearSsns(logs)];
      if (leaked.length > 0) throw new Error(`member data in clear in the logs: ${leaked.join(', ')}`);
      await database.close();
    },
  };
}
