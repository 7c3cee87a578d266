/**
 * The demo set-up's credentials file as `coregate serve` keeps it: a missing data dir is created for it
 * (readable by its owner only) before anything is seeded; a file that cannot be written stops the start
 * with nothing half done; a demo store whose file is gone gets fresh credentials, and the lost token stops
 * working; a store seeded by `coregate seed` keeps its own. On the embedded database, and on PostgreSQL
 * when `TEST_DATABASE_URL` is set.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { DemoCredentials } from '../src/cli/demo.js';
import { adminStatement, CLI, serve, stop } from './support/serve-process.js';

/** A master secret of its own, so that nothing but the demo set-up creates the data dir. */
const SECRET = 'ab'.repeat(32);

const temporaryDirs: string[] = [];
after(() => temporaryDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A data dir path whose parent does not exist yet either. */
function missingDataDir(): string {
  const root = mkdtempSync(join(tmpdir(), 'coregate-demo-'));
  temporaryDirs.push(root);
  return join(root, 'volume', 'data');
}

const credentialsFile = (dataDir: string) => join(dataDir, 'demo-credentials.json');
const readCredentials = (dataDir: string) =>
  JSON.parse(readFileSync(credentialsFile(dataDir), 'utf8')) as Required<DemoCredentials>;

/** A FindBy call with the demo credentials, answered from the demo dataset: its status. */
async function findBySSN(baseUrl: string, credentials: Required<DemoCredentials>): Promise<number> {
  const response = await fetch(`${baseUrl}/gw/627/persistent/findby/findBySSN`, {
    method: 'POST',
    headers: { authorization: `Bearer ${credentials.apiToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      Credentials: { AdministrativeCredentials: { Password: credentials.adminPassword } },
      SSN: '384856358',
    }),
  });
  await response.body?.cancel();
  return response.status;
}

/** `coregate serve --demo` on `dataDir` (and `databaseUrl`, if any), resolved once it listens. */
const serveDemo = (dataDir: string, databaseUrl = '') =>
  serve({
    args: ['--demo'],
    env: {
      COREGATE_DATA_DIR: dataDir,
      COREGATE_SECRET: SECRET,
      DATABASE_URL: databaseUrl,
      PORT: '0',
      LOG_LEVEL: 'warn',
    },
  });

/** The command line on the embedded database in `dataDir`, run to its end. */
const cli = (dataDir: string, ...args: string[]) =>
  spawnSync(process.execPath, [...CLI, ...args], {
    env: { ...process.env, COREGATE_DATA_DIR: dataDir, COREGATE_SECRET: SECRET, DATABASE_URL: '', PORT: '0' },
    encoding: 'utf8',
    timeout: 120_000,
  });

/** A start after the credentials file of a demo store was deleted: fresh credentials, the lost token revoked. */
async function assertReissued(dataDir: string, databaseUrl = ''): Promise<void> {
  const lost = readCredentials(dataDir);
  unlinkSync(credentialsFile(dataDir));
  const served = await serveDemo(dataDir, databaseUrl);
  try {
    const output = served.output();
    assert.doesNotMatch(output, /Seeding demo data/, 'the dataset is kept');
    const said = output.split('\n').filter((line) => line.includes('was missing'));
    assert.deepEqual(said, [
      `${credentialsFile(dataDir)} was missing: a fresh demo token and admin password are in it (the lost token is revoked)`,
    ]);
    const fresh = readCredentials(dataDir);
    assert.notEqual(fresh.apiToken, lost.apiToken);
    assert.notEqual(fresh.adminPassword, lost.adminPassword);
    assert.equal(statSync(credentialsFile(dataDir)).mode & 0o777, 0o600);
    assert.equal(await findBySSN(served.baseUrl, fresh), 200);
    assert.equal(await findBySSN(served.baseUrl, lost), 401, 'the lost token is revoked');
  } finally {
    await stop(served.child);
  }
}

describe(
  'serve --demo on PostgreSQL',
  { skip: !process.env.TEST_DATABASE_URL && 'TEST_DATABASE_URL is not set' },
  () => {
    const adminUrl = process.env.TEST_DATABASE_URL ?? '';
    const database = `coregate_demo_${process.pid}`;
    const databaseUrl = adminUrl && Object.assign(new URL(adminUrl), { pathname: `/${database}` }).href;
    const dataDir = missingDataDir();
    before(async () => {
      if (adminUrl) await adminStatement(adminUrl, `create database ${database}`);
    });
    after(async () => {
      if (adminUrl) await adminStatement(adminUrl, `drop database if exists ${database} with (force)`);
    });

    test('creates a missing data dir, readable by its owner only, and writes working credentials to it', async () => {
      const served = await serveDemo(dataDir, databaseUrl);
      try {
        assert.match(
          served.output(),
          new RegExp(`Demo data seeded; credentials written to ${credentialsFile(dataDir)}`),
        );
        assert.equal(statSync(dataDir).mode & 0o777, 0o700);
        assert.equal(statSync(credentialsFile(dataDir)).mode & 0o777, 0o600);
        assert.equal(await findBySSN(served.baseUrl, readCredentials(dataDir)), 200);
      } finally {
        await stop(served.child);
      }
    });

    test('a start after the credentials file was deleted writes fresh ones, says so in one line, and the lost token stops working', () =>
      assertReissued(dataDir, databaseUrl));
  },
);

describe('serve --demo on the embedded database', () => {
  const dataDir = missingDataDir();

  test('a credentials file that cannot be written stops the first start before anything is seeded', () => {
    // A directory where the file goes: the file cannot be put in place.
    mkdirSync(credentialsFile(dataDir), { recursive: true });
    const failed = cli(dataDir, 'serve', '--demo');
    assert.equal(failed.status, 1, failed.stderr);
    assert.match(failed.stderr, /^coregate serve failed: .*demo-credentials\.json/m);
    assert.doesNotMatch(failed.stderr, /Seeding demo data/);
  });

  test('the next start sets the demo up, and the failed start left no token behind', async () => {
    rmSync(credentialsFile(dataDir), { recursive: true });
    const served = await serveDemo(dataDir);
    try {
      assert.match(served.output(), /Demo data seeded/);
      assert.equal(await findBySSN(served.baseUrl, readCredentials(dataDir)), 200);
    } finally {
      await stop(served.child);
    }
    const listed = cli(dataDir, 'token', 'list');
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout.trim(), /^demo-\d+\t[^\n]*\tactive$/, 'one token, the one in the file');
  });

  test('a start after the credentials file was deleted writes fresh ones, says so in one line, and the lost token stops working', () =>
    assertReissued(dataDir));

  test('a store seeded by coregate seed, without a credentials file, keeps its own credentials', async () => {
    const seededDir = missingDataDir();
    const seeded = cli(seededDir, 'seed', '--accounts', '5');
    assert.equal(seeded.status, 0, seeded.stderr);
    const served = await serveDemo(seededDir);
    try {
      assert.doesNotMatch(served.output(), /was missing|Demo data seeded/);
      assert.throws(() => statSync(credentialsFile(seededDir)), { code: 'ENOENT' });
    } finally {
      await stop(served.child);
    }
  });
});
