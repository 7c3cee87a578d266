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
import { withDemoPasswords } from '../scripts/openapi-answers.js';
import type { DemoCredentials } from '../src/cli/demo.js';
import { PLACEHOLDER } from '../src/http/openapi-examples.js';
import { createServer } from 'node:net';
import { freePort } from './support/pg-cluster.js';
import { adminStatement, CLI, serve, spawnServe, stop } from './support/serve-process.js';

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

/**
 * `coregate serve --demo` on `dataDir` (and `databaseUrl`, if any), resolved once it listens; with `logging`,
 * at LOG_LEVEL info (`--workers 2` on PostgreSQL) and resolved once the whole banner is out.
 */
const serveDemo = (dataDir: string, databaseUrl = '', logging?: { workers?: number }) =>
  serve({
    args: ['--demo', ...(logging?.workers ? ['--workers', String(logging.workers)] : [])],
    env: {
      COREGATE_DATA_DIR: dataDir,
      COREGATE_SECRET: SECRET,
      DATABASE_URL: databaseUrl,
      PORT: '0',
      LOG_LEVEL: logging ? 'info' : 'warn',
      // On PostgreSQL the banner shows the demo only when asked.
      COREGATE_SHOW_DEMO: 'true',
    },
    ...(logging ? { ready: /Try it:\n(?:.*\n)*?.*curl .*\n/ } : {}),
  });

/** The start banner's lines, from the one naming the URL to the curl call, which ends it. */
function bannerOf(output: string): string[] {
  const lines = output.split('\n');
  const first = lines.findIndex((line) => line.startsWith('coregate is serving'));
  const last = lines.findIndex((line, index) => index > first && line.trim().startsWith('curl '));
  assert.ok(first >= 0 && last > first, output);
  return lines.slice(first, last + 1);
}

/** A banner with no log line inside it (log lines are JSON objects). */
function assertOneBlock(output: string): void {
  assert.match(output, /^\{"level":30/m, 'the log writes info lines around the banner');
  assert.deepEqual(
    bannerOf(output).filter((line) => line.startsWith('{')),
    [],
    output,
  );
}

/** Calls an operation with the demo token: status and answer. */
async function call(baseUrl: string, token: string, path: string, body: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, answer: (await response.json()) as Record<string, unknown> };
}

/** The request example /openapi.json shows for the operation at `path`. */
async function documentedExample(baseUrl: string, path: string): Promise<Record<string, unknown>> {
  type Body = { content: Record<string, { examples: { demo: { value: never } } }> };
  const document = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as {
    paths: Record<string, { post: { requestBody: Body & { $ref?: string } } }>;
    components: { requestBodies: Record<string, Body> };
  };
  const body = document.paths[path]!.post.requestBody;
  // A body several operations share is a component.
  const shared = body.$ref?.replace('#/components/requestBodies/', '');
  const media = (shared === undefined ? body : document.components.requestBodies[shared]!).content['application/json'];
  return media!.examples.demo.value;
}

/** The demo's passwords as /docs asks for them with the token (GET /admin/demo-credentials). */
async function passwordsForDocs(baseUrl: string, token: string): Promise<Record<string, string>> {
  const response = await fetch(`${baseUrl}/admin/demo-credentials`, { headers: { authorization: `Bearer ${token}` } });
  assert.equal(response.status, 200);
  return (await response.json()) as Record<string, string>;
}

const LOGON = '/gw/627/persistent/usermanagement/logon';
const LOGOFF = '/gw/627/persistent/usermanagement/logoff';
const FIND_BY_SSN = '/gw/627/persistent/findby/findBySSN';

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
    assert.notEqual(fresh.userPassword, lost.userPassword, "the demo user's password is replaced too");
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
        // As on the embedded database, the first start shows the demo token and admin password this once.
        const { apiToken, adminPassword } = readCredentials(dataDir);
        assert.ok(served.output().includes(`  Demo token:     ${apiToken}\n`), served.output());
        assert.ok(served.output().includes(`  Admin password: ${adminPassword}\n`));
      } finally {
        await stop(served.child);
      }
    });

    test('a start after the credentials file was deleted writes fresh ones, says so in one line, and the lost token stops working', () =>
      assertReissued(dataDir, databaseUrl));

    test('serve --workers 2 prints its banner in one block, whatever the workers log meanwhile', async () => {
      const served = await serveDemo(dataDir, databaseUrl, { workers: 2 });
      try {
        assert.match(served.output(), /2 worker processes/);
        assertOneBlock(served.output());
      } finally {
        await stop(served.child);
      }
    });
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

  describe('after coregate admin-password, the next start', () => {
    const NEW_PASSWORD = 'changed-admin-pw';
    let served: Awaited<ReturnType<typeof serveDemo>>;
    before(async () => {
      const changed = cli(dataDir, 'admin-password', '--password', NEW_PASSWORD);
      assert.equal(changed.status, 0, changed.stderr);
      served = await serveDemo(dataDir, '', {});
    });
    after(() => stop(served.child));

    test("names the credentials file, which holds the new password, and the banner's curl call and /docs work with it", async () => {
      const credentials = readCredentials(dataDir);
      assert.equal(credentials.adminPassword, NEW_PASSWORD);
      const banner = bannerOf(served.output());
      assert.ok(
        banner.some((line) => line.includes(`ADMIN_PASSWORD=$(jq -r .adminPassword ${credentialsFile(dataDir)})`)),
      );
      // The curl line as the shell runs it after the banner's TOKEN=… ADMIN_PASSWORD=… line.
      const curl = banner
        .at(-1)!
        .replaceAll('$TOKEN', credentials.apiToken)
        .replaceAll(`'"$ADMIN_PASSWORD"'`, NEW_PASSWORD);
      const url = /curl -s (\S+)/.exec(curl)![1]!;
      const body = /-d '(.+)'$/.exec(curl.trim())![1]!;
      assert.equal(
        (await call(served.baseUrl, credentials.apiToken, new URL(url).pathname, JSON.parse(body))).status,
        200,
      );
      const example = await documentedExample(served.baseUrl, FIND_BY_SSN);
      assert.deepEqual(example.Credentials, { AdministrativeCredentials: { Password: PLACEHOLDER.adminPassword } });
      assert.equal((await passwordsForDocs(served.baseUrl, credentials.apiToken)).adminPassword, NEW_PASSWORD);
    });

    test('prints its banner in one block between the JSON log lines', () => assertOneBlock(served.output()));

    test("the reference's logon example, its password filled in as /docs does, signs on as the demo user, and logoff ends the session logon answered", async () => {
      const { apiToken, userNumber, userPassword } = readCredentials(dataDir);
      const logon = await documentedExample(served.baseUrl, LOGON);
      assert.deepEqual(logon.Credentials, {
        UserNumberCredentials: { UserNumber: userNumber, Password: PLACEHOLDER.userPassword },
      });
      const passwords = await passwordsForDocs(served.baseUrl, apiToken);
      assert.equal(passwords.userPassword, userPassword);
      const signedOn = await call(served.baseUrl, apiToken, LOGON, withDemoPasswords(logon, passwords));
      assert.equal(signedOn.status, 200, JSON.stringify(signedOn.answer));
      const logoff = await documentedExample(served.baseUrl, LOGOFF);
      const session = { Credentials: { TokenCredentials: { TokenId: signedOn.answer.TokenId } } };
      assert.deepEqual(Object.keys(logoff), Object.keys(session), 'the example is its credentials alone');
      assert.equal((await call(served.baseUrl, apiToken, LOGOFF, session)).status, 200);
      assert.equal((await call(served.baseUrl, apiToken, LOGOFF, session)).status, 403, 'the session is over');
    });
  });

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

describe(
  'serve on an empty PostgreSQL store',
  { skip: !process.env.TEST_DATABASE_URL && 'TEST_DATABASE_URL is not set' },
  () => {
    const adminUrl = process.env.TEST_DATABASE_URL ?? '';
    const database = `coregate_empty_${process.pid}`;
    const databaseUrl = adminUrl && Object.assign(new URL(adminUrl), { pathname: `/${database}` }).href;
    const dataDir = missingDataDir();
    before(() => adminStatement(adminUrl, `create database ${database}`));
    after(() => adminStatement(adminUrl, `drop database if exists ${database} with (force)`));

    test('the banner says the store is empty and names the commands that fill it', async () => {
      const served = await serve({
        env: { COREGATE_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, PORT: '0', LOG_LEVEL: 'warn' },
        ready: /coregate admin-password .*\n/,
      });
      try {
        const output = served.output();
        assert.match(output, /The store is empty/);
        for (const command of [
          'coregate serve --demo',
          'coregate seed',
          'coregate token create',
          'coregate admin-password',
        ])
          assert.ok(output.includes(command), `${command} is named:\n${output}`);
      } finally {
        await stop(served.child);
      }
    });
  },
);

describe('the port is held from the first check to serving', () => {
  const dataDir = missingDataDir();

  test('while the demo is seeded, nothing else can take the port; then the server listens on it', async () => {
    const port = await freePort();
    const starting = spawnServe({
      env: { COREGATE_DATA_DIR: dataDir, DATABASE_URL: '', PORT: String(port), LOG_LEVEL: 'warn' },
    });
    try {
      // The credentials are written before the seeding starts, and the port was taken before either.
      while (!/Seeding demo data/.test(starting.output()) && starting.child.exitCode === null)
        await new Promise((resolve) => setTimeout(resolve, 20));
      const occupant = createServer();
      const bound = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
        occupant.once('error', resolve);
        occupant.listen({ port, host: '127.0.0.1', exclusive: true }, () => resolve(undefined));
      });
      if (!bound) await new Promise((resolve) => occupant.close(resolve));
      assert.equal(bound?.code, 'EADDRINUSE', 'the port is held while seeding');
      assert.ok(readCredentials(dataDir).apiToken, 'the credentials are in their file before the seeding');
      const served = await starting.listening;
      assert.equal(served.baseUrl, `http://127.0.0.1:${port}`);
      assert.equal(await findBySSN(served.baseUrl, readCredentials(dataDir)), 200);
    } finally {
      await stop(starting.child);
    }
  });
});
