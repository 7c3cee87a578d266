/**
 * Reliability when PostgreSQL goes away (a restart, a failover): the server process never ends; while
 * the database is unreachable every call is a 503 UNAVAILABLE with Retry-After, answered within a bounded
 * time, and /ready says 503; service resumes by itself within seconds of the database returning, for
 * `serve` and for `serve --workers N` (which also starts while the database is still down). Acknowledged
 * updates survive and none is applied twice. The database is a real cluster the test creates and
 * restarts (initdb on a free port), and the server is the real `coregate serve` process.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { hashPassword } from '../src/crypto/passwords.js';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { seedDatabase } from '../src/seed/load.js';
import { SCOPES } from '../src/contract/scopes.js';
import { settings, SETTING, tokens } from '../src/store/access.js';
import { openDatabase } from '../src/database/database.js';
import { migrate } from '../src/database/migrations.js';
import { createPgCluster, freePort, postgresBinDir, type PgCluster } from './support/pg-cluster.js';
import { spawnServe, stop, type Starting } from './support/serve-process.js';

const ADMIN_PASSWORD = 'outage-admin-pass';
const MASTER = randomBytes(32).toString('hex');
/** The bound on any answer during an outage: the connect timeout the server is given, plus slack. */
const CONNECT_TIMEOUT_MS = 2_000;
const ANSWER_BOUND_MS = CONNECT_TIMEOUT_MS + 3_000;
/** How soon after the database is back the service must answer again. */
const RESUME_BOUND_MS = 15_000;

/** The data directory holds only the generated files of a PostgreSQL start (the secret comes from the environment). */
const dataDir = mkdtempSync(join(tmpdir(), 'coregate-outage-data-'));
const noServer = postgresBinDir() === undefined && 'PostgreSQL server binaries are not installed';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts `coregate serve` on the cluster. */
function spawnOnCluster(databaseUrl: string, port: number, args: readonly string[] = []): Starting {
  return spawnServe({
    args,
    env: {
      DATABASE_URL: databaseUrl,
      COREGATE_SECRET: MASTER,
      COREGATE_DATA_DIR: dataDir,
      COREGATE_DB_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      // However long the cluster takes to come back, the start waits for it (the bound has its own suite).
      COREGATE_DB_START_TIMEOUT_S: '0',
      COREGATE_RATE_LIMIT: '1000000',
      COREGATE_FINDBY_RATE_LIMIT: '1000000',
      PORT: String(port),
      LOG_LEVEL: 'warn',
    },
  });
}

interface Answer {
  readonly status: number;
  readonly ms: number;
  readonly retryAfter: string | null;
  readonly code?: string;
  readonly body: Record<string, unknown>;
}

async function post(
  baseUrl: string,
  token: string,
  path: string,
  body: object,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ Credentials: { AdministrativeCredentials: { Password: ADMIN_PASSWORD } }, ...body }),
    signal: AbortSignal.timeout(60_000),
  });
  const parsed = (await response.json()) as Record<string, unknown>;
  return {
    status: response.status,
    ms: performance.now() - started,
    retryAfter: response.headers.get('retry-after'),
    code: typeof parsed.code === 'string' ? parsed.code : undefined,
    body: parsed,
  };
}

async function ready(baseUrl: string): Promise<number> {
  return (await fetch(`${baseUrl}/ready`, { signal: AbortSignal.timeout(60_000) })).status;
}

/** Polls until `check` holds or the time is up; returns the milliseconds it took. */
async function within(ms: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check().catch(() => false)) return Date.now() - started;
    if (Date.now() - started > ms) assert.fail(`${what} did not happen within ${ms} ms`);
    await sleep(200);
  }
}

const SHARE = { AccountNumber: '0000000001', ShareId: '0000' };
const updateShare = (description: string) => ({ ...SHARE, ShareFields: { Description: description } });
const UPDATE_PATH = '/gw/627/persistent/account/updateShareByID';
const LOOKUP_PATH = '/gw/627/persistent/findby/findByShortName';

describe('a PostgreSQL restart under load', { skip: noServer }, () => {
  let cluster: PgCluster;
  let token: string;

  before(async () => {
    cluster = await createPgCluster();
    const database = await openDatabase({ url: cluster.url });
    try {
      await migrate(database.db, database.kind);
      await seedDatabase(database, secretsFromMaster(Buffer.from(MASTER, 'hex')), { accounts: 3, seed: 1 });
      await settings.set(database.db, SETTING.adminPasswordHash, await hashPassword(ADMIN_PASSWORD));
      token = (await tokens.create(database.db, 'outage', SCOPES)).token;
    } finally {
      await database.close();
    }
  });
  after(() => {
    cluster?.remove();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /**
   * Sends updates (each with its own Idempotency-Key and description, retried with the same key until
   * acknowledged) and lookups while `during` runs; returns every answer.
   */
  async function underLoad(baseUrl: string, during: () => Promise<void>) {
    const answers: { kind: 'update' | 'lookup'; answer: Answer }[] = [];
    const acknowledged: string[] = [];
    let running = true;
    const updater = (async () => {
      while (running) {
        const id = randomBytes(4).toString('hex');
        const description = `OUTAGE ${id}`;
        const key = `outage-${id}`;
        for (;;) {
          const answer = await post(baseUrl, token, UPDATE_PATH, updateShare(description), { 'idempotency-key': key });
          answers.push({ kind: 'update', answer });
          if (answer.status === 200) {
            acknowledged.push(description);
            break;
          }
          if (!running) break;
          await sleep(100);
        }
      }
    })();
    const looker = (async () => {
      while (running) {
        answers.push({ kind: 'lookup', answer: await post(baseUrl, token, LOOKUP_PATH, { ShortName: 'NOBODY' }) });
        await sleep(50);
      }
    })();
    try {
      await during();
    } finally {
      running = false;
      await Promise.all([updater, looker]);
    }
    return { answers, acknowledged };
  }

  /** Every acknowledged update is stored, and each exactly once (one history row per description). */
  async function assertUpdatesKept(acknowledged: readonly string[]) {
    const database = await openDatabase({ url: cluster.url });
    try {
      const { rows } = await sql<{ value: string; count: number }>`select new_character as value, count(*)::int as count
        from account_fm_history where field_name = 'Description' and new_character like 'OUTAGE %'
        group by new_character`.execute(database.db);
      const counts = new Map(rows.map((row) => [row.value, row.count]));
      for (const description of acknowledged) assert.equal(counts.get(description), 1, `${description} applied once`);
      for (const [value, count] of counts) assert.equal(count, 1, `${value} applied once`);
    } finally {
      await database.close();
    }
  }

  function assertOutageAnswers(answers: readonly { answer: Answer }[]) {
    const failures = answers.filter(({ answer }) => answer.status !== 200);
    assert.ok(failures.length > 0, 'some calls met the outage');
    for (const { answer } of failures) {
      assert.equal(answer.status, 503, `an outage answer is 503: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.code, 'UNAVAILABLE');
      assert.ok(Number(answer.retryAfter) > 0, 'with Retry-After');
    }
    for (const { answer } of answers) assert.ok(answer.ms < ANSWER_BOUND_MS, `answered in ${Math.round(answer.ms)} ms`);
  }

  test('serve: calls get 503 UNAVAILABLE while PostgreSQL is down, the process lives, and service resumes by itself', async () => {
    const served = await spawnOnCluster(cluster.url, await freePort()).listening;
    try {
      assert.equal(await ready(served.baseUrl), 200);
      const { answers, acknowledged } = await underLoad(served.baseUrl, async () => {
        await sleep(1_000);
        cluster.stop();
        await sleep(3_000);
        assert.equal(served.child.exitCode, null, 'the server is still running');
        assert.equal(await ready(served.baseUrl), 503, '/ready says 503 while the database is down');
        const during = await post(served.baseUrl, token, LOOKUP_PATH, { ShortName: 'NOBODY' });
        assert.equal(during.status, 503);
        cluster.start();
        await within(RESUME_BOUND_MS, 'service resuming', async () => (await ready(served.baseUrl)) === 200);
        await within(
          RESUME_BOUND_MS,
          'an update succeeding',
          async () =>
            (
              await post(served.baseUrl, token, UPDATE_PATH, updateShare('OUTAGE after'), {
                'idempotency-key': 'outage-after',
              })
            ).status === 200,
        );
        await sleep(1_000);
      });
      assertOutageAnswers(answers);
      assert.ok(acknowledged.length > 0, 'updates were acknowledged');
      assert.equal(served.child.exitCode, null, 'the server is still running');
      assert.equal(await stop(served.child), 0, 'and stops cleanly');
      await assertUpdatesKept([...acknowledged, 'OUTAGE after']);
    } finally {
      await stop(served.child);
    }
  });

  test('serve --workers 2: workers survive the restart, and start while the database is down, serving as soon as it is back', async () => {
    cluster.stop();
    const port = await freePort();
    const starting = spawnOnCluster(cluster.url, port, ['--workers', '2']);
    // The workers wait for the database instead of dying or hanging without listening.
    await within(60_000, 'both workers reporting the wait', async () => {
      const waiting = new Set(
        starting.output().match(/worker \d+: the database at \S+ \(DATABASE_URL\) is not reachable/g) ?? [],
      );
      return waiting.size === 2;
    });
    await sleep(2_000);
    assert.equal(starting.child.exitCode, null, 'the server waits');
    cluster.start();
    const started = performance.now();
    const served = await starting.listening;
    assert.ok(
      performance.now() - started < RESUME_BOUND_MS,
      'the port is served within seconds of the database returning',
    );
    try {
      const { answers, acknowledged } = await underLoad(served.baseUrl, async () => {
        await sleep(1_000);
        cluster.stop();
        await sleep(3_000);
        assert.equal(await ready(served.baseUrl), 503);
        cluster.start();
        await within(RESUME_BOUND_MS, 'both workers serving again', async () => {
          const statuses = await Promise.all(Array.from({ length: 6 }, () => ready(served.baseUrl)));
          return statuses.every((status) => status === 200);
        });
        await sleep(1_000);
      });
      assertOutageAnswers(answers);
      assert.doesNotMatch(served.output(), /exited \(/, 'no worker died');
      assert.equal(await stop(served.child), 0);
      await assertUpdatesKept(acknowledged);
    } finally {
      await stop(served.child);
    }
  });
});
