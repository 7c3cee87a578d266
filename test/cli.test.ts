/**
 * The README's quickstart as a user runs it: `npm start` compiles the command line and runs
 * `coregate serve`, which on a fresh data directory seeds the demo, prints and stores the demo
 * credentials, serves the API; a second start reuses everything. Plus the token and user commands.
 */
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { startCommand } from '../scripts/start-command.js';
import { loadConfig } from '../src/config.js';
import { openRuntime } from '../src/runtime.js';
import { freePort } from './support/pg-cluster.js';
import { adminStatement, CLI, serve, spawnServe, stop } from './support/serve-process.js';

/**
 * Compiles the command line as `npm start` does, into a directory of its own (inside the repository,
 * where its dependencies resolve), and returns the arguments that run it.
 */
function compiledCli(): { args: string[]; remove: () => void } {
  mkdirSync('node_modules/.cache', { recursive: true });
  const outdir = mkdtempSync(join('node_modules/.cache', 'coregate-build-'));
  const built = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts', outdir], { encoding: 'utf8' });
  assert.equal(built.status, 0, built.stderr);
  const { flags } = startCommand();
  return {
    args: [...flags, join(outdir, 'coregate.js')],
    remove: () => rmSync(outdir, { recursive: true, force: true }),
  };
}

interface Started {
  readonly child: ChildProcess;
  readonly output: string;
  readonly baseUrl: string;
}

/** Starts `coregate serve` and resolves once its output matches `ready` (by default: the demo banner). */
async function start(
  dataDir: string,
  options: { cli?: readonly string[]; args?: string[]; env?: NodeJS.ProcessEnv; ready?: RegExp } = {},
): Promise<Started> {
  const served = await serve({
    cli: options.cli,
    args: options.args,
    env: { COREGATE_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '', ...options.env },
    ready: options.ready ?? /Try it:\n.*\n/,
  });
  return { child: served.child, output: served.output(), baseUrl: served.baseUrl };
}

function cli(dataDir: string, ...args: string[]) {
  return run(CLI, dataDir, ...args);
}

function run(command: readonly string[], dataDir: string, ...args: string[]) {
  return spawnSync(process.execPath, [...command, ...args], {
    env: { ...process.env, COREGATE_DATA_DIR: dataDir, DATABASE_URL: '' },
    encoding: 'utf8',
  });
}

describe('quickstart: the compiled coregate serve on a fresh data directory', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-quickstart-'));
  let compiled: ReturnType<typeof compiledCli>;
  let first: Started;
  before(async () => {
    compiled = compiledCli();
    first = await start(dataDir, { cli: compiled.args });
  });
  after(async () => {
    // Also when a filter skipped the test that stops it.
    if (first.child.exitCode === null) await stop(first.child);
    rmSync(dataDir, { recursive: true, force: true });
    compiled.remove();
  });

  test('the first start seeds the demo and prints the token, the admin password and a curl call', () => {
    const credentials = JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8'));
    assert.match(credentials.apiToken, /^cg_/);
    assert.ok(credentials.adminPassword.length >= 16);
    assert.match(first.output, /Demo data seeded/);
    assert.ok(first.output.includes(credentials.apiToken));
    assert.ok(first.output.includes(credentials.adminPassword));
    assert.match(first.output, /curl -s http:\/\/127\.0\.0\.1:\d+\/gw\/627\/persistent\/findby\//);
  });

  test('demo-credentials.json is readable by its owner only', () => {
    assert.equal(statSync(join(dataDir, 'demo-credentials.json')).mode & 0o777, 0o600);
  });

  test('the printed curl call works', async () => {
    const line = first.output.split('\n').find((l) => l.trim().startsWith('curl '))!;
    const url = /curl -s (\S+)/.exec(line)![1]!;
    const token = /Bearer ([^']+)'/.exec(line)![1]!;
    const body = /-d '(.+)'$/.exec(line.trim())![1]!;
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body,
    });
    assert.equal(response.status, 200);
    const result = (await response.json()) as { AccountNumber: string[] };
    assert.ok(result.AccountNumber.length > 0, 'the demo short name matches accounts');
  });

  test('a second start reuses the data and the credentials, and names the credentials file instead of printing the secrets', async () => {
    const credentials = readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8');
    assert.equal(await stop(first.child), 0);
    const second = await start(dataDir, { cli: compiled.args });
    try {
      assert.doesNotMatch(second.output, /Demo data seeded/);
      assert.equal(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8'), credentials);
      const { apiToken, adminPassword } = JSON.parse(credentials);
      assert.ok(!second.output.includes(apiToken), 'the token is not printed again');
      assert.ok(!second.output.includes(adminPassword), 'the admin password is not printed again');
      assert.ok(second.output.includes(join(dataDir, 'demo-credentials.json')), 'the banner names the file');
      assert.match(second.output, /TOKEN=\$\(jq -r \.apiToken /);
      const health = await fetch(`${second.baseUrl}/ready`);
      assert.equal(health.status, 200);
    } finally {
      await stop(second.child);
    }
  });

  test('the compiled seed command encodes on worker threads', () => {
    const fresh = mkdtempSync(join(tmpdir(), 'coregate-compiled-seed-'));
    try {
      const seeded = run(compiled.args, fresh, 'seed', '--accounts', '40', '--workers', '2');
      assert.equal(seeded.status, 0, seeded.stderr);
      assert.match(seeded.stdout, /Seeded 40 accounts/);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});

/** The Node.js processes a process has forked (its cluster workers). */
function workersOf(pid: number): string[] {
  return spawnSync('ps', ['-o', 'pid=,comm=', '--ppid', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([child, command]) => child && command === 'node')
    .map(([child]) => child!);
}

describe('coregate serve --workers', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-workers-'));
  const adminUrl = process.env.TEST_DATABASE_URL;
  const database = `coregate_workers_${process.pid}`;
  const databaseUrl = adminUrl ? Object.assign(new URL(adminUrl), { pathname: `/${database}` }).href : '';
  const admin = (statement: string) => adminStatement(adminUrl!, statement);
  before(async () => {
    if (adminUrl) await admin(`create database ${database}`);
  });
  after(async () => {
    if (adminUrl) await admin(`drop database if exists ${database} with (force)`);
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('is refused on the embedded database, which belongs to one process', () => {
    const refused = cli(dataDir, 'serve', '--workers', '2');
    assert.equal(refused.status, 2);
    assert.match(refused.stderr, /--workers needs DATABASE_URL/);
  });

  test(
    'runs N processes on one port on PostgreSQL, replaces a worker that dies, and stops them all on SIGTERM',
    { skip: !adminUrl && 'TEST_DATABASE_URL is not set' },
    async () => {
      const served = await start(dataDir, {
        args: ['--workers', '2'],
        env: { DATABASE_URL: databaseUrl },
        ready: /2 worker processes/,
      });
      const workers = workersOf(served.child.pid!);
      assert.equal(workers.length, 2, 'two worker processes');
      for (let i = 0; i < 10; i += 1) assert.equal((await fetch(`${served.baseUrl}/ready`)).status, 200);
      // A worker that dies is replaced.
      process.kill(Number(workers[0]), 'SIGKILL');
      let current: string[] = [];
      for (let waited = 0; waited < 60_000; waited += 250) {
        current = workersOf(served.child.pid!);
        if (current.length === 2 && !current.includes(workers[0]!)) break;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.equal(current.length, 2, 'two worker processes again');
      assert.ok(!current.includes(workers[0]!), 'the killed worker was replaced');
      assert.equal(await stop(served.child), 0);
      for (const pid of current) assert.throws(() => process.kill(Number(pid), 0), 'the worker has exited');
    },
  );

  test(
    'from its first check until its workers listen: nothing finds it free while they start',
    { skip: !adminUrl && 'TEST_DATABASE_URL is not set' },
    async () => {
      const port = await freePort();
      const starting = spawnServe({
        args: ['--workers', '2'],
        env: { COREGATE_DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl },
        ready: /2 worker processes/,
      });
      try {
        let served = false;
        void starting.listening.then(
          () => (served = true),
          () => (served = true),
        );
        // Connections, every 20 ms until it serves: refused before the primary's check; then closed at once by
        // the primary holding the port; then kept open, served. Only the moment between the primary letting the
        // port go and the cluster binding it for the first worker may find nothing there.
        const probe = () =>
          new Promise<'refused' | 'held' | 'served'>((resolve) => {
            const socket = connect({ port, host: '127.0.0.1' });
            socket.once('error', () => resolve('refused'));
            socket.once('connect', () => {
              const timer = setTimeout(() => {
                socket.destroy();
                resolve('served');
              }, 100);
              socket.once('close', () => {
                clearTimeout(timer);
                resolve('held');
              });
            });
          });
        const seen: string[] = [];
        while (!served) {
          seen.push(await probe());
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const running = await starting.listening;
        seen.push(await probe());
        const firstHeld = seen.indexOf('held');
        const firstServed = seen.indexOf('served');
        const held = seen.filter((result) => result === 'held').length;
        const refusedMeanwhile = seen.slice(firstHeld, firstServed).filter((result) => result === 'refused').length;
        assert.ok(firstHeld >= 0 && firstServed > firstHeld, `held, then served: ${seen.join(' ')}`);
        // The workers' start takes a second or more, all of it with the port held.
        assert.ok(held >= 10, `held for ${held} probes only: ${seen.join(' ')}`);
        assert.ok(refusedMeanwhile <= 1, `free ${refusedMeanwhile} times while starting: ${seen.join(' ')}`);
        assert.equal((await fetch(`${running.baseUrl}/ready`)).status, 200);
        assert.equal(await stop(running.child), 0);
      } finally {
        // A failed check leaves no server behind (it would outlive the database dropped after the suite).
        if (starting.child.exitCode === null && starting.child.signalCode === null) await stop(starting.child);
      }
    },
  );
});

describe('coregate token and user commands', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-cli-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test('token create prints a token once; list shows it; revoke marks it revoked', () => {
    const created = cli(dataDir, 'token', 'create', '--name', 'lending-app', '--scopes', 'findby,collateral:read');
    assert.equal(created.status, 0, created.stderr);
    assert.match(created.stdout, /^cg_[A-Za-z0-9_-]{43}\n# lending-app: scopes findby, collateral:read/);
    assert.match(cli(dataDir, 'token', 'list').stdout, /lending-app\tfindby,collateral:read\tactive/);
    assert.equal(cli(dataDir, 'token', 'revoke', '--name', 'lending-app').status, 0);
    assert.match(cli(dataDir, 'token', 'list').stdout, /lending-app\t.*\trevoked/);
  });

  test('bad arguments exit 2 with the usage', () => {
    const unknownScope = cli(dataDir, 'token', 'create', '--name', 'x', '--scopes', 'everything');
    assert.equal(unknownScope.status, 2);
    assert.match(unknownScope.stderr, /Unknown scope everything/);
    const badNumber = cli(dataDir, 'user', 'add', '--number', '12000', '--name', 'Too big');
    assert.equal(badNumber.status, 2);
    assert.match(badNumber.stderr, /1\.\.9999/);
  });

  test('user add generates a password when none is given; list shows the user', () => {
    const added = cli(dataDir, 'user', 'add', '--number', '25', '--name', 'Loan officer');
    assert.equal(added.status, 0, added.stderr);
    assert.match(added.stdout, /Password: \S{20,}/);
    assert.match(cli(dataDir, 'user', 'list').stdout, /^25\tLoan officer$/m);
  });

  test("user list shows until when a user's password is locked out, and the failures counted towards the next lock", async () => {
    const runtime = await openRuntime(loadConfig({ COREGATE_DATA_DIR: dataDir, DATABASE_URL: '' }));
    try {
      // One caller locked out of user 25, another with two wrong passwords.
      await sql`insert into credential_lockout (subject, failures, locks, locked_until) values
        ('user:25@192.0.2.7/teller', 0, 1, now() + interval '10 minutes'),
        ('user:25@192.0.2.8/teller', 2, 0, null)`.execute(runtime.database.db);
    } finally {
      await runtime.database.close();
    }
    const listed = cli(dataDir, 'user', 'list');
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(
      listed.stdout,
      /^25\tLoan officer\tlocked until \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\t2 failed passwords$/m,
    );
    assert.equal(cli(dataDir, 'user', 'unlock', '--number', '25').status, 0);
    assert.match(cli(dataDir, 'user', 'list').stdout, /^25\tLoan officer$/m);
  });

  test('migrate creates the schema once and then reports it up to date', () => {
    const fresh = mkdtempSync(join(tmpdir(), 'coregate-migrate-'));
    try {
      assert.match(cli(fresh, 'migrate').stdout, /Applied 0001_catalog/);
      assert.match(cli(fresh, 'migrate').stdout, /up to date/);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });

  test('seed loads N accounts, refuses to seed over existing accounts, and replaces them with --reset', () => {
    const seeded = cli(dataDir, 'seed', '--accounts', '30', '--seed', '7');
    assert.equal(seeded.status, 0, seeded.stderr);
    assert.match(seeded.stdout, /Seeded 30 accounts \(seed 7\)/);
    assert.match(seeded.stdout, /account\s+30$/m);
    assert.match(seeded.stderr, /30\/30/, 'a progress bar on stderr');
    const again = cli(dataDir, 'seed', '--accounts', '30');
    assert.equal(again.status, 2);
    assert.match(again.stderr, /--reset/);
    const reset = cli(dataDir, 'seed', '--accounts', '40', '--reset');
    assert.equal(reset.status, 0, reset.stderr);
    assert.match(reset.stdout, /account\s+40$/m);
  });

  test('seed without --accounts or with a bad count exits 2', () => {
    assert.equal(cli(dataDir, 'seed').status, 2);
    assert.equal(cli(dataDir, 'seed', '--accounts', 'many').status, 2);
  });

  test('member set-secret stores a member secret; bad input exits 2', () => {
    const set = cli(dataDir, 'member', 'set-secret', '--account', '0000000001', '--home-banking-password', 'hb-secret');
    assert.equal(set.status, 0, set.stderr);
    assert.match(set.stdout, /Member secrets of 0000000001 set/);
    assert.equal(cli(dataDir, 'member', 'set-secret', '--account', '12').status, 2);
  });

  test('audit reads the trail since a time, and rejects a bad --since', () => {
    const audit = cli(dataDir, 'audit', '--since', '1h');
    assert.equal(audit.status, 0, audit.stderr);
    assert.match(audit.stdout, /^at\tstatus\tcode\toperation/);
    assert.equal(cli(dataDir, 'audit', '--since', 'yesterday-ish').status, 2);
  });

  test('every command answers --help', () => {
    for (const command of [
      'serve',
      'migrate',
      'seed',
      'token',
      'user',
      'admin-password',
      'member',
      'audit',
      'export',
      'import',
      'reset',
      'core',
    ]) {
      const help = cli(dataDir, command, '--help');
      assert.equal(help.status, 0, command);
      assert.match(help.stdout, /^Usage: coregate/, command);
    }
  });
});

describe("the gateway try-out of docs/gateway.md: coregate in front of coregate's SOAP face as the core", () => {
  const coreDir = mkdtempSync(join(tmpdir(), 'coregate-core-'));
  const gatewayDir = mkdtempSync(join(tmpdir(), 'coregate-gateway-'));
  let core: Started;
  let gateway: Started;
  before(async () => {
    core = await start(coreDir, { env: { COREGATE_SOAP_AUTH: 'credentials' } });
    gateway = await start(gatewayDir, {
      env: { COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: core.baseUrl },
      ready: /Demo token:/,
    });
  });
  after(async () => {
    for (const started of [gateway, core]) if (started && started.child.exitCode === null) await stop(started.child);
    rmSync(coreDir, { recursive: true, force: true });
    rmSync(gatewayDir, { recursive: true, force: true });
  });

  test('the gateway starts without demo data, names its core, and keeps only a demo token', () => {
    assert.match(gateway.output, /Gateway mode: no demo data/);
    assert.match(gateway.output, new RegExp(`Sym 627 .* is answered by the SymXchange core at ${core.baseUrl}`));
    const credentials = JSON.parse(readFileSync(join(gatewayDir, 'demo-credentials.json'), 'utf8'));
    assert.deepEqual(Object.keys(credentials), ['apiToken']);
  });

  test("a call with the gateway's token and the core's password is answered from the core", async () => {
    const { apiToken } = JSON.parse(readFileSync(join(gatewayDir, 'demo-credentials.json'), 'utf8'));
    const { adminPassword } = JSON.parse(readFileSync(join(coreDir, 'demo-credentials.json'), 'utf8'));
    const response = await fetch(`${gateway.baseUrl}/gw/627/persistent/findby/findBySSN`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        Credentials: { AdministrativeCredentials: { Password: adminPassword } },
        SSN: '384856358',
      }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    assert.deepEqual(await response.json(), { AccountNumber: ['0000000005', '0000000013'], MessageId: 'findBySSN' });
    const ready = await (await fetch(`${gateway.baseUrl}/ready`)).json();
    assert.deepEqual(ready, { status: 'ready', core: '627: closed, SymXchange 3.0' });
  });

  test("the store's commands refuse in gateway mode, saying why", () => {
    const env = {
      ...process.env,
      COREGATE_DATA_DIR: gatewayDir,
      DATABASE_URL: '',
      COREGATE_CORE: 'symxchange',
      COREGATE_SYMXCHANGE_URL: core.baseUrl,
    };
    for (const args of [
      ['seed', '--accounts', '5'],
      ['user', 'list'],
      ['admin-password'],
      ['member', 'set-secret', '--account', '0000000001', '--audio-access-code', '1234'],
    ]) {
      const run = spawnSync(process.execPath, [...CLI, ...args], { env, encoding: 'utf8' });
      assert.equal(run.status, 1, args.join(' '));
      assert.match(
        run.stderr,
        /changes coregate's own store, which gateway mode \(COREGATE_CORE=symxchange\) does not read/,
      );
    }
  });
});

describe('settings are checked before any work', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-settings-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  /** `coregate serve` on a fresh data directory with `env`; it must stop before touching the directory. */
  function refusedStart(env: NodeJS.ProcessEnv) {
    const run = spawnSync(process.execPath, [...CLI, 'serve'], {
      env: { ...process.env, COREGATE_DATA_DIR: dataDir, PORT: '0', DATABASE_URL: '', ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 1, run.stderr);
    assert.equal(run.stdout, '', 'nothing is served, seeded or printed');
    assert.equal(run.stderr.trimEnd().split('\n').length, 1, `one line: ${run.stderr}`);
    assert.deepEqual(readdirSync(dataDir), [], 'nothing was opened, migrated or seeded');
    return run.stderr.trimEnd();
  }

  test('a bad LOG_LEVEL stops the start with one line naming it', () => {
    assert.match(refusedStart({ LOG_LEVEL: 'verbose' }), /^coregate serve failed: LOG_LEVEL must be one of /);
  });

  test('a bad LOG_FORMAT stops the start with one line naming it', () => {
    assert.match(
      refusedStart({ LOG_FORMAT: 'fancy' }),
      /^coregate serve failed: LOG_FORMAT must be one of json, pretty/,
    );
  });

  test('a DATABASE_URL that is not a postgres:// URL stops the start with one line naming it, not repeating it', () => {
    const line = refusedStart({ DATABASE_URL: 'mysql://app:s3cret@db:3306/core' });
    assert.match(line, /^coregate serve failed: DATABASE_URL must be a postgres:\/\/ URL/);
    assert.ok(!line.includes('s3cret'));
  });

  test('a busy port stops the start with one line naming PORT, before the database is opened', async () => {
    const occupant = createServer();
    await new Promise<void>((resolve) => occupant.listen(0, '127.0.0.1', resolve));
    const { port } = occupant.address() as { port: number };
    try {
      const line = refusedStart({ PORT: String(port) });
      assert.equal(
        line,
        `coregate serve failed: PORT ${port} is already in use on 127.0.0.1: stop what listens there, or set PORT to a free port`,
      );
    } finally {
      await new Promise((resolve) => occupant.close(resolve));
    }
  });

  for (const [command, actions] of [
    ['token', 'create, list or revoke'],
    ['user', 'add, list, disable, enable, unlock or password'],
    ['member', 'set-secret'],
  ] as const) {
    test(`coregate ${command} without an action exits 2 with its usage`, () => {
      const run = cli(dataDir, command);
      assert.equal(run.status, 2);
      assert.equal(run.stdout, '');
      assert.match(
        run.stderr,
        new RegExp(`^coregate ${command} needs an action: ${actions}\\n\\nUsage: coregate ${command}`),
      );
    });
  }
});

describe('LOG_FORMAT=pretty', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-pretty-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test('logs readable lines for a terminal, one per request, instead of JSON', async () => {
    const served = await serve({
      args: ['--no-demo'],
      env: { COREGATE_DATA_DIR: dataDir, PORT: '0', DATABASE_URL: '', LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' },
    });
    try {
      assert.equal((await fetch(`${served.baseUrl}/health`, { headers: { 'x-request-id': 'pretty-1' } })).status, 200);
      let output = served.output();
      // The request's own line (the data directory's random name may hold "pretty-1" too).
      for (let waited = 0; !output.includes('reqId: "pretty-1"') && waited < 5_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        output = served.output();
      }
      const lines = output.split('\n').filter((line) => line.includes('GET /health'));
      assert.equal(lines.length, 1, output);
      assert.match(lines[0]!, /INFO.*GET \/health 200 [0-9.]+ ms/);
      assert.match(output, /reqId: "pretty-1"/);
      assert.doesNotMatch(output, /^\{"level"/m, 'no JSON lines');
    } finally {
      await stop(served.child);
    }
  });
});
