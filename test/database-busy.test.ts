/**
 * A 503 says why the database could not serve the call, on a PostgreSQL cluster of the test's own: a pool
 * whose connections all stay in use answers that they are (with Retry-After), not that the database is
 * unreachable; a database that cannot be reached (its server stopped) still says so. The pool has one
 * connection, held by a slow query, and a call waits 500 ms for it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { SCOPES } from '../src/contract/scopes.js';
import { hashPassword } from '../src/crypto/passwords.js';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { openDatabase, type Database } from '../src/database/database.js';
import { migrate } from '../src/database/migrations.js';
import { buildApp } from '../src/http/app.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { settings, SETTING, tokens } from '../src/store/access.js';
import { ADMIN_PASSWORD, adminCredentials } from './support/harness.js';
import { createPgCluster, postgresBinDir, type PgCluster } from './support/pg-cluster.js';

const noServer = postgresBinDir() === undefined && 'PostgreSQL server binaries are not installed';
const CONNECT_TIMEOUT_MS = 500;
/** How long the slow query holds the pool's one connection: well past a call's wait for it. */
const HELD_SECONDS = 3;
const findBySSN = operationPath(OPERATIONS.find((operation) => operation.name === 'findBySSN')!);

describe('what a 503 of the database says, on PostgreSQL', { skip: noServer }, () => {
  let cluster: PgCluster;
  let database: Database;
  let app: FastifyInstance;
  let token: string;

  before(async () => {
    cluster = await createPgCluster();
    database = await openDatabase({ url: cluster.url, poolSize: 1, connectTimeoutMs: CONNECT_TIMEOUT_MS });
    await migrate(database.db, database.kind);
    await settings.set(database.db, SETTING.adminPasswordHash, await hashPassword(ADMIN_PASSWORD));
    token = (await tokens.create(database.db, 'busy', SCOPES)).token;
    const config = { ...loadConfig({}), databasePoolSize: 1, databaseConnectTimeoutMs: CONNECT_TIMEOUT_MS };
    app = await buildApp({
      db: database.db,
      databaseKind: database.kind,
      secrets: secretsFromMaster(randomBytes(32)),
      config,
    });
    await app.ready();
  });
  after(async () => {
    await app?.close();
    await database?.close();
    cluster?.remove();
  });

  const lookup = () =>
    app.inject({
      method: 'POST',
      url: findBySSN,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ Credentials: adminCredentials, SSN: '123456789' }),
    });

  /** `call`, made while a slow query holds the pool's one connection. */
  async function whileHeld(call: () => Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse> {
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const slow = database.db.connection().execute(async (connection) => {
      holding();
      await sql`select pg_sleep(${HELD_SECONDS})`.execute(connection);
    });
    await held;
    try {
      return await call();
    } finally {
      await slow;
    }
  }

  function assertUnavailable(answer: LightMyRequestResponse, detail: RegExp, retryAfter: string): void {
    assert.equal(answer.statusCode, 503, answer.body);
    assert.match(String(answer.headers['content-type']), /^application\/problem\+json/);
    assert.equal(answer.json().code, 'UNAVAILABLE');
    assert.match(answer.json().detail, detail);
    assert.equal(answer.headers['retry-after'], retryAfter);
  }

  test('a call that finds every connection of the pool in use is a 503 saying so, with Retry-After', async () => {
    assert.equal((await lookup()).statusCode, 200, 'served while a connection is free');
    const answer = await whileHeld(lookup);
    assertUnavailable(answer, /^The database's connections are all in use \(COREGATE_DB_POOL\); retry shortly$/, '2');
    assert.doesNotMatch(answer.json().detail, /not reachable/);
  });

  test('/ready says the connections are all in use too', async () => {
    const answer = await whileHeld(() => app.inject({ method: 'GET', url: '/ready' }));
    assertUnavailable(answer, /connections are all in use/, '2');
  });

  test('a call while the database cannot be reached is a 503 saying it is not reachable', async () => {
    cluster.stop();
    assertUnavailable(await lookup(), /^The database is not reachable; retry shortly$/, '5');
  });
});
