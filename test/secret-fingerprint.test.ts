/**
 * One secret per store (docs/decisions.md, "One secret per store, checked"): a store records a fingerprint
 * of the secret it was created with, and `serve` (each of its workers too), `seed`, `import` and every other
 * command that opens it refuse another secret with one line naming COREGATE_SECRET and the store, before
 * anything is read or written. As a user runs them, on the embedded database and, with TEST_DATABASE_URL,
 * on PostgreSQL.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { secretsFromMaster } from '../src/crypto/secrets.js';
import { openDatabase, type Database } from '../src/database/database.js';
import { adminStatement, CLI } from './support/serve-process.js';

const SECRET_A = randomBytes(32).toString('hex');
const SECRET_B = randomBytes(32).toString('hex');
/** A refusal comes before anything is opened for long: far sooner than this, or the command did not stop. */
const REFUSED_WITHIN_MS = 90_000;

const postgres = process.env.TEST_DATABASE_URL;

/** A store of the test's own: an embedded database in a data dir, or a PostgreSQL database beside it. */
interface Store {
  readonly dataDir: string;
  /** DATABASE_URL: empty for the embedded database. */
  readonly databaseUrl: string;
  /** How a refusal names it. */
  readonly name: string;
  open(): Promise<Database>;
  remove(): Promise<void>;
}

let stores = 0;

async function createStore(backend: 'pglite' | 'postgres'): Promise<Store> {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-secret-'));
  if (backend === 'pglite') {
    return {
      dataDir,
      databaseUrl: '',
      name: `the embedded database in ${dataDir}`,
      open: () => openDatabase({ dataDir: join(dataDir, 'pglite') }),
      remove: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const database = `coregate_secret_${process.pid}_${(stores += 1)}`;
  const url = Object.assign(new URL(postgres!), { pathname: `/${database}` });
  await adminStatement(postgres!, `create database ${database}`);
  return {
    dataDir,
    databaseUrl: url.href,
    name: `PostgreSQL ${url.hostname}:${url.port || 5432}/${database}`,
    open: () => openDatabase({ url: url.href, poolSize: 1 }),
    async remove() {
      await adminStatement(postgres!, `drop database if exists ${database} with (force)`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The environment of a command on `store` under `secret` (undefined: COREGATE_SECRET not set). */
function environment(store: Store, secret: string | undefined): NodeJS.ProcessEnv {
  return {
    ...process.env,
    COREGATE_DATA_DIR: store.dataDir,
    DATABASE_URL: store.databaseUrl,
    COREGATE_SECRET: secret ?? '',
    COREGATE_URL: '',
    PORT: '0',
    LOG_LEVEL: 'warn',
  };
}

/** Runs `coregate <args>` on `store` under `secret`; a command that does not end in time is killed. */
function coregate(store: Store, secret: string | undefined, ...args: string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [...CLI, ...args], {
    env: environment(store, secret),
    encoding: 'utf8',
    timeout: REFUSED_WITHIN_MS,
  });
}

/** The same, not waited for: commands started together. */
function coregateAsync(
  store: Store,
  secret: string | undefined,
  ...args: string[]
): Promise<{ status: number | null; stderr: string }> {
  const child = spawn(process.execPath, [...CLI, ...args], { env: environment(store, secret) });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stderr })));
}

/**
 * Asserts that `command` stopped at once (exit 1) with one line, refusing `store` for its secret and naming
 * COREGATE_SECRET; returns the line.
 */
function assertRefused(store: Store, result: SpawnSyncReturns<string>, command: string): string {
  assert.equal(result.status, 1, `${command} exits 1 (not killed after ${REFUSED_WITHIN_MS} ms):\n${result.stderr}`);
  const lines = result.stderr.split('\n');
  assert.equal(lines.length, 2, `one line on stderr:\n${result.stderr}`);
  const line = lines[0]!;
  assert.ok(line.startsWith(`coregate ${command} failed: this store (${store.name}) was created with `), line);
  assert.match(line, /COREGATE_SECRET/);
  return line;
}

/** Every table of the store with its rows as text, in a fixed order. */
async function tableTexts(store: Store): Promise<Map<string, { rows: number; text: string }>> {
  const database = await store.open();
  try {
    const { rows: tables } = await sql<{ name: string }>`select table_name as name from information_schema.tables
      where table_schema = current_schema() order by table_name`.execute(database.db);
    const texts = new Map<string, { rows: number; text: string }>();
    for (const { name } of tables) {
      const { rows } = await sql<{ rows: number; text: string | null }>`select count(*) as rows,
        string_agg(t::text, '|' order by t::text) as text from ${sql.table(name)} as t`.execute(database.db);
      texts.set(name, { rows: rows[0]!.rows, text: rows[0]!.text ?? '' });
    }
    return texts;
  } finally {
    await database.close();
  }
}

/** Each table's row count and a digest of its rows: equal when nothing was written. */
async function contents(store: Store): Promise<Record<string, string>> {
  const texts = await tableTexts(store);
  return Object.fromEntries(
    [...texts].map(([table, { rows, text }]) => [
      table,
      `${rows} rows, ${createHash('sha256').update(text).digest('hex')}`,
    ]),
  );
}

/** The fingerprint the store records, if any (none where its table does not exist). */
async function recordedFingerprint(store: Store): Promise<Buffer | undefined> {
  const database = await store.open();
  try {
    const { rows } = await sql<{ present: boolean }>`
      select to_regclass('coregate_store_secret') is not null as present`.execute(database.db);
    if (!rows[0]?.present) return undefined;
    const { rows: recorded } = await sql<{ fingerprint: Uint8Array }>`
      select fingerprint from coregate_store_secret`.execute(database.db);
    return recorded[0] ? Buffer.from(recorded[0].fingerprint) : undefined;
  } finally {
    await database.close();
  }
}

const fingerprintOf = (secret: string) => secretsFromMaster(Buffer.from(secret, 'hex')).fingerprint();

const BACKENDS = ['pglite' as const, ...(postgres ? ['postgres' as const] : [])];

for (const backend of BACKENDS) {
  describe(`one secret per store on ${backend}`, () => {
    let store: Store;
    let records: string;
    /** The store as secret A seeded it. */
    let seeded: Record<string, string>;

    before(async () => {
      store = await createStore(backend);
      records = join(store.dataDir, 'records.ndjson');
      const seed = coregate(store, SECRET_A, 'seed', '--accounts', '2');
      assert.equal(seed.status, 0, seed.stderr);
      const exported = coregate(store, SECRET_A, 'export', '--out', records);
      assert.equal(exported.status, 0, exported.stderr);
      seeded = await contents(store);
    });
    after(() => store?.remove());

    test('serve with another COREGATE_SECRET exits 1 at once with the one line, and writes nothing', async () => {
      const line = assertRefused(store, coregate(store, SECRET_B, 'serve'), 'serve');
      assert.match(line, /was created with another secret than COREGATE_SECRET: set COREGATE_SECRET to the secret/);
      assert.deepEqual(await contents(store), seeded);
    });

    test('seed with another COREGATE_SECRET is refused the same way, and writes nothing', async () => {
      assertRefused(store, coregate(store, SECRET_B, 'seed', '--accounts', '1', '--reset'), 'seed');
      assert.deepEqual(await contents(store), seeded);
    });

    test('import with another COREGATE_SECRET is refused the same way, and writes nothing', async () => {
      assertRefused(store, coregate(store, SECRET_B, 'import', records, '--replace'), 'import');
      assert.deepEqual(await contents(store), seeded);
    });

    test('every other command that opens the store is refused the same way, and writes nothing', async () => {
      const commands = [
        ['migrate'],
        ['token', 'create', '--name', 'stranger'],
        ['reset'],
        ['export', '--out', join(store.dataDir, 'stranger.ndjson')],
      ];
      for (const command of commands) assertRefused(store, coregate(store, SECRET_B, ...command), command[0]!);
      assert.ok(!existsSync(join(store.dataDir, 'stranger.ndjson')), 'no export was written');
      assert.deepEqual(await contents(store), seeded);
    });

    test('without COREGATE_SECRET, the store is refused for the secret.key generated in its data dir, which is not kept', async () => {
      const line = assertRefused(store, coregate(store, undefined, 'serve'), 'serve');
      assert.match(
        line,
        /was created with a secret that is not here \(COREGATE_SECRET is not set and .* has no secret\.key\): set COREGATE_SECRET to/,
      );
      assert.ok(!existsSync(join(store.dataDir, 'secret.key')), 'the generated secret.key was removed');
      assert.deepEqual(await contents(store), seeded);
    });

    test("with a secret.key in the data dir that is not the store's, the line names the file and COREGATE_SECRET", async () => {
      const file = join(store.dataDir, 'secret.key');
      writeFileSync(file, `${SECRET_B}\n`, { mode: 0o600 });
      try {
        const line = assertRefused(store, coregate(store, undefined, 'migrate'), 'migrate');
        assert.ok(line.includes(`another secret than ${file}, used because COREGATE_SECRET is not set`), line);
      } finally {
        rmSync(file);
      }
    });

    test("with COREGATE_SECRET set over the store's own secret.key, the line says to use the file", async () => {
      const file = join(store.dataDir, 'secret.key');
      writeFileSync(file, `${SECRET_A}\n`, { mode: 0o600 });
      try {
        const line = assertRefused(store, coregate(store, SECRET_B, 'migrate'), 'migrate');
        assert.ok(line.includes(`was created with the secret in ${file}, not with COREGATE_SECRET`), line);
        assert.match(line, /remove COREGATE_SECRET so that the file is used/);
      } finally {
        rmSync(file);
      }
    });

    test('the secret the store was created with opens it', () => {
      const migrated = coregate(store, SECRET_A, 'migrate');
      assert.equal(migrated.status, 0, migrated.stderr);
      assert.match(migrated.stdout, /The database is up to date/);
    });

    test('the fingerprint recorded is neither the secret nor a key derived from it, and neither is stored anywhere', async () => {
      const recorded = await recordedFingerprint(store);
      assert.deepEqual(recorded, fingerprintOf(SECRET_A));
      assert.notDeepEqual(recorded, fingerprintOf(SECRET_B));
      const secrets = secretsFromMaster(Buffer.from(SECRET_A, 'hex'));
      // The keys the secret is derived into: the data's (HMAC, AES-GCM) and every purpose's (secrets.key).
      const keys = ['lookup-hmac', 'at-rest-aes-gcm', 'paging-token', 'credential-cache', 'lockout-slowdown'].map(
        (purpose) => secrets.key(purpose),
      );
      const everything = [...(await tableTexts(store)).values()].map(({ text }) => text).join('\n');
      for (const key of [Buffer.from(SECRET_A, 'hex'), ...keys]) {
        assert.ok(!recorded!.equals(key));
        assert.ok(!everything.includes(key.toString('hex')), 'no table holds the secret or a key derived from it');
      }
    });

    // A store from before fingerprints: as 0015 found it, with no table to record one in.
    const forgetFingerprint = async () => {
      const database = await store.open();
      try {
        await sql`drop table coregate_store_secret`.execute(database.db);
        await sql`delete from coregate_migration where id = '0016_store_secret'`.execute(database.db);
      } finally {
        await database.close();
      }
    };

    test('a store from before fingerprints is refused for a secret its sealed values do not open, and is left as it was', async () => {
      await forgetFingerprint();
      const before = await contents(store);
      const line = assertRefused(store, coregate(store, SECRET_B, 'serve'), 'serve');
      assert.match(line, /was created with another secret than COREGATE_SECRET/);
      assert.deepEqual(await contents(store), before, 'neither migrated nor given a fingerprint');
    });

    test('a store from before fingerprints records its own on the first start, and then refuses another secret', async () => {
      assert.equal(await recordedFingerprint(store), undefined);
      const migrated = coregate(store, SECRET_A, 'migrate');
      assert.equal(migrated.status, 0, migrated.stderr);
      assert.match(migrated.stdout, /Applied 0016_store_secret/);
      assert.deepEqual(await recordedFingerprint(store), fingerprintOf(SECRET_A));
      const stillSeeded = await contents(store);
      assertRefused(store, coregate(store, SECRET_B, 'token', 'list'), 'token');
      assert.deepEqual(await contents(store), stillSeeded);
    });
  });
}

describe(
  'one secret per store, for a fleet on one PostgreSQL',
  { skip: postgres ? false : 'no TEST_DATABASE_URL' },
  () => {
    const created: Store[] = [];
    const newStore = async () => {
      const store = await createStore('postgres');
      created.push(store);
      return store;
    };
    after(async () => {
      for (const store of created) await store.remove();
    });

    test('serve --workers 2 with another secret: no worker serves, and the start ends with the one line', async () => {
      const store = await newStore();
      const seed = coregate(store, SECRET_A, 'seed', '--accounts', '1');
      assert.equal(seed.status, 0, seed.stderr);
      const seeded = await contents(store);
      const line = assertRefused(store, coregate(store, SECRET_B, 'serve', '--workers', '2'), 'serve');
      assert.match(line, /was created with another secret than COREGATE_SECRET/);
      assert.deepEqual(await contents(store), seeded);
    });

    test('instances starting together on a new database with one secret all start', async () => {
      const store = await newStore();
      const started = await Promise.all([1, 2, 3].map(() => coregateAsync(store, SECRET_A, 'migrate')));
      for (const { status, stderr } of started) assert.equal(status, 0, stderr);
      assert.deepEqual(await recordedFingerprint(store), fingerprintOf(SECRET_A));
    });

    test('instances starting together without COREGATE_SECRET agree on the secret.key one of them generates', async () => {
      const store = await newStore();
      const started = await Promise.all([1, 2, 3].map(() => coregateAsync(store, undefined, 'migrate')));
      for (const { status, stderr } of started) assert.equal(status, 0, stderr);
      const generated = readFileSync(join(store.dataDir, 'secret.key'), 'utf8').trim();
      assert.deepEqual(await recordedFingerprint(store), fingerprintOf(generated));
    });

    test('instances starting together on a new database with two secrets: the first recorded wins, the other is refused', async () => {
      const store = await newStore();
      const [a, b] = await Promise.all([
        coregateAsync(store, SECRET_A, 'migrate'),
        coregateAsync(store, SECRET_B, 'migrate'),
      ]);
      const recorded = await recordedFingerprint(store);
      const [winner, loser] = recorded?.equals(fingerprintOf(SECRET_A)) ? [a, b] : [b, a];
      assert.ok(recorded?.equals(fingerprintOf(SECRET_A)) || recorded?.equals(fingerprintOf(SECRET_B)));
      assert.equal(winner.status, 0, winner.stderr);
      assert.equal(loser.status, 1, loser.stderr);
      assert.match(
        loser.stderr,
        /^coregate migrate failed: this store \(PostgreSQL .*\) was created with another secret than COREGATE_SECRET/,
      );
    });
  },
);
