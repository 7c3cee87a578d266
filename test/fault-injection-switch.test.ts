/**
 * Fault injection switched on and off while serving (docs/operating.md, "Fault rules"): `coregate faults
 * enable|disable` and `PUT /admin/faults/injection` turn the `X-Coregate-Fault` header and the fault rules on
 * or off without a restart, kept in the store, for every worker; COREGATE_SANDBOX_FAULTS is only the value
 * before the first switch. Real processes: `coregate serve` and the CLI, on the embedded database and on
 * PostgreSQL with `--workers 2`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { adminStatement, CLI, serve, stop, type Served } from './support/serve-process.js';

interface DemoCredentials {
  readonly apiToken: string;
  readonly adminPassword: string;
}

const credentialsOf = (dataDir: string) =>
  JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')) as DemoCredentials;

/** findBySSN asking for a forced CORE_UNAVAILABLE: 503 while fault injection is on, 403 SANDBOX_FAULTS_DISABLED off. */
async function forcedCall(baseUrl: string, credentials: DemoCredentials): Promise<{ status: number; code: string }> {
  const call = () =>
    fetch(`${baseUrl}/gw/627/persistent/findby/findBySSN`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${credentials.apiToken}`,
        'content-type': 'application/json',
        'x-coregate-fault': 'code=CORE_UNAVAILABLE',
      },
      body: JSON.stringify({
        Credentials: { AdministrativeCredentials: { Password: credentials.adminPassword } },
        SSN: '384856358',
      }),
    });
  // The server may close a kept-alive connection (its keep-alive timeout) as the call is sent on it; the call
  // changes nothing, so it is sent again, once, on a new connection.
  const response = await call().catch((error: Error & { cause?: { code?: string } }) => {
    if (error.cause?.code === 'UND_ERR_SOCKET') return call();
    throw error;
  });
  const body = (await response.json()) as { code?: string };
  return { status: response.status, code: body.code ?? '' };
}

const FORCED = { status: 503, code: 'CORE_UNAVAILABLE' };
const REFUSED = { status: 403, code: 'SANDBOX_FAULTS_DISABLED' };

/** Calls until `runs` calls in a row answer `expected`: every worker (they take turns) has learnt the switch. */
async function untilEveryWorker(served: Served, credentials: DemoCredentials, expected: object, runs = 8) {
  for (let inARow = 0; inARow < runs;) {
    const answer = await forcedCall(served.baseUrl, credentials).catch(
      (error: Error & { cause?: { code?: string } }) => {
        // A worker may close a kept-alive connection as the next call is sent on it: that call never arrived.
        if (error.cause?.code === 'UND_ERR_SOCKET') return undefined;
        throw error;
      },
    );
    if (!answer) continue;
    inARow = answer.status === (expected as typeof FORCED).status ? inARow + 1 : 0;
    if (inARow === 0) assert.deepEqual(answer, answer.status === 503 ? FORCED : REFUSED, 'no other answer');
  }
}

function cli(env: NodeJS.ProcessEnv, ...args: string[]) {
  return spawnSync(process.execPath, [...CLI, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
}

describe('fault injection switched while serving, on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-fault-switch-'));
  const env = { COREGATE_DATA_DIR: dataDir, DATABASE_URL: '', COREGATE_URL: '', COREGATE_SANDBOX_FAULTS: '' };
  let served: Served;
  let credentials: DemoCredentials;
  before(async () => {
    served = await serve({ env: { ...env, PORT: '0', LOG_LEVEL: 'warn' }, ready: /Try it:\n.*\n/ });
    credentials = credentialsOf(dataDir);
  });
  after(async () => {
    await stop(served.child);
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('while off, the CLI refuses a rule naming the one cause and how to turn it on; the header is refused', async () => {
    const refused = cli(env, 'faults', 'add', '--operations', 'findBySSN', '--code', 'CORE_UNAVAILABLE');
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(refused.stderr, /fault injection is off \(coregate faults enable, or PUT \/admin\/faults\/injection/);
    assert.doesNotMatch(refused.stderr, /admin scope|admin token/);
    assert.deepEqual(await forcedCall(served.baseUrl, credentials), REFUSED);
  });

  test('faults enable turns it on at once, without a restart: the header forces its fault and rules can be added', async () => {
    const enabled = cli(env, 'faults', 'enable');
    assert.equal(enabled.status, 0, enabled.stderr);
    assert.match(enabled.stdout, /^Fault injection is on/);
    assert.deepEqual(await forcedCall(served.baseUrl, credentials), FORCED);
    const added = cli(env, 'faults', 'add', '--operations', 'findByShortName', '--code', 'CORE_TIMEOUT');
    assert.equal(added.status, 0, added.stderr);
    const state = await fetch(`${served.baseUrl}/admin/faults/injection`, {
      headers: { authorization: `Bearer ${credentials.apiToken}` },
    });
    assert.deepEqual(await state.json(), { enabled: true });
  });

  test('faults disable turns it off again; the rules are kept for the next enable', async () => {
    const disabled = cli(env, 'faults', 'disable');
    assert.equal(disabled.status, 0, disabled.stderr);
    assert.match(disabled.stdout, /^Fault injection is off/);
    assert.deepEqual(await forcedCall(served.baseUrl, credentials), REFUSED);
  });

  test('the switch is kept in the store: with no server, COREGATE_SANDBOX_FAULTS=on no longer overrides a disable', async () => {
    await stop(served.child);
    const list = cli({ ...env, COREGATE_SANDBOX_FAULTS: 'on' }, 'faults', 'list');
    assert.equal(list.status, 1, list.stdout);
    assert.match(list.stderr, /fault injection is off/);
    assert.equal(cli(env, 'faults', 'enable').status, 0);
    const listed = cli(env, 'faults', 'list');
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(listed.stdout, /findByShortName\tboth\tCORE_TIMEOUT/);
  });
});

describe('fault injection and the start value', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-fault-start-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test('COREGATE_SANDBOX_FAULTS=on is the value while the store was never switched', () => {
    const env = { COREGATE_DATA_DIR: dataDir, DATABASE_URL: '', COREGATE_URL: '' };
    assert.equal(cli({ ...env, COREGATE_SANDBOX_FAULTS: 'off' }, 'faults', 'list').status, 1);
    const listed = cli({ ...env, COREGATE_SANDBOX_FAULTS: 'on' }, 'faults', 'list');
    assert.equal(listed.status, 0, listed.stderr);
    assert.equal(listed.stdout, 'No fault rules\n');
  });
});

describe(
  'fault injection switched while serving, on PostgreSQL with --workers 2',
  { skip: !process.env.TEST_DATABASE_URL && 'TEST_DATABASE_URL is not set' },
  () => {
    const adminUrl = process.env.TEST_DATABASE_URL ?? '';
    const database = `coregate_fault_switch_${process.pid}`;
    const databaseUrl = adminUrl && Object.assign(new URL(adminUrl), { pathname: `/${database}` }).href;
    const dataDir = mkdtempSync(join(tmpdir(), 'coregate-fault-switch-pg-'));
    let served: Served;
    let credentials: DemoCredentials;
    before(async () => {
      await adminStatement(adminUrl, `create database ${database}`);
      served = await serve({
        args: ['--demo', '--workers', '2'],
        env: { COREGATE_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, PORT: '0', LOG_LEVEL: 'warn' },
      });
      credentials = credentialsOf(dataDir);
    });
    after(async () => {
      if (served) await stop(served.child);
      await adminStatement(adminUrl, `drop database if exists ${database} with (force)`);
      rmSync(dataDir, { recursive: true, force: true });
    });

    test('every worker learns a switch made through the admin API, and one made by the CLI on the database', async () => {
      assert.deepEqual(await forcedCall(served.baseUrl, credentials), REFUSED);
      const switched = await fetch(`${served.baseUrl}/admin/faults/injection`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${credentials.apiToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ enabled: true }),
      });
      assert.deepEqual(await switched.json(), { enabled: true });
      await untilEveryWorker(served, credentials, FORCED);
      // The CLI with the database's URL and no COREGATE_URL changes the store itself; the workers read it.
      const disabled = cli(
        { COREGATE_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, COREGATE_URL: '' },
        'faults',
        'disable',
      );
      assert.equal(disabled.status, 0, disabled.stderr);
      await untilEveryWorker(served, credentials, REFUSED);
    });
  },
);
