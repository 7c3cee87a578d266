/**
 * The CLI's admin commands against a running server: while `coregate serve` holds an embedded data
 * directory (the lock case), and with COREGATE_URL (on PostgreSQL, where a server and the commands share the
 * database), `token`, `user`, `audit`, `export`, `import` and `reset` call the server's admin API, say so on
 * stderr, and print exactly what they print on the data directory itself. A failed `export --out` leaves no
 * `.partial` file. The commands run in this process (as `coregate <command>` runs them, stdout and stderr
 * captured); one runs as a process of its own.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { UsageError } from '../src/cli/args.js';
import { adminPasswordCommand, auditCommand, tokenCommand, userCommand } from '../src/cli/commands.js';
import { exportCommand, importCommand, resetCommand } from '../src/cli/data.js';
import { loadConfig, type Config } from '../src/config.js';
import { SCOPES } from '../src/contract/scopes.js';
import { lockDataDir, SERVER_FILE } from '../src/database/data-dir-lock.js';
import { openRuntime } from '../src/runtime.js';
import { DEFAULT_SEED, seedDatabase } from '../src/seed/load.js';
import { seedMemberSecrets } from '../src/seed/member-secrets.js';
import { demoDataset, tokens } from '../src/store/access.js';
import { adminStatement, CLI, serve, SOURCE_CLI, stop, type Served } from './support/serve-process.js';

const DEMO = { seed: DEFAULT_SEED, accounts: 3 };
const COMMANDS = {
  token: tokenCommand,
  user: userCommand,
  audit: auditCommand,
  export: exportCommand,
  import: importCommand,
  reset: resetCommand,
  'admin-password': adminPasswordCommand,
};

interface Ran {
  readonly stdout: readonly string[];
  readonly stderr: string;
}

/** Runs `coregate <command> …argv` in this process with `config`: its printed lines and what it wrote to stderr. */
async function run(config: Config, command: keyof typeof COMMANDS, ...argv: string[]): Promise<Ran> {
  const stdout: string[] = [];
  let stderr = '';
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  }) as typeof process.stderr.write;
  try {
    await COMMANDS[command](argv, config, (line) => stdout.push(line));
  } finally {
    process.stderr.write = write;
  }
  return { stdout, stderr };
}

/** Runs node with `args` (the command line and its arguments) as a process of its own, with `env` for its settings. */
function runCli(args: readonly string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, args, {
      env: { ...process.env, DATABASE_URL: '', COREGATE_URL: '', COREGATE_ADMIN_TOKEN: '', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * What an admin command calling a live server must not load (support/loaded-modules.mjs lists what it does):
 * the server, the database engines and query builder, the schemas' library, the catalog, the store, the
 * runtime, the operations. Their loading is what made a command take seconds.
 */
const SERVER_MODULES =
  /\/node_modules\/(fastify|@fastify\/[^/]+|@electric-sql\/pglite|kysely|pg|typebox)\/|\/src\/(catalog\/index|runtime|http\/|store\/|operations\/|seed\/load|database\/database)/;

/** A store of the demo dataset's first accounts with a demo token of every scope in its demo-credentials.json. */
async function prepareStore(config: Config): Promise<string> {
  const runtime = await openRuntime(config);
  try {
    await seedDatabase(runtime.database, runtime.secrets, DEMO);
    await seedMemberSecrets(runtime.database.db, DEMO.accounts);
    await demoDataset.set(runtime.database.db, DEMO);
    const { token } = await tokens.create(runtime.database.db, `demo-${Date.now()}`, SCOPES);
    writeFileSync(join(config.dataDir, 'demo-credentials.json'), JSON.stringify({ apiToken: token }), { mode: 0o600 });
    return token;
  } finally {
    await runtime.database.close();
  }
}

/** What varies between two runs of a command (secrets, times, names given): replaced by placeholders. */
function normalized(lines: readonly string[], names: Readonly<Record<string, string>> = {}): string[] {
  return lines.map((line) => {
    let text = line
      .replace(/cg_[A-Za-z0-9_-]{43}/g, '<token>')
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>')
      .replace(/ in \d+\.\d s/g, ' in <seconds>')
      .replace(/(Password(?: of user \d+)?: )\S+$/, '$1<password>');
    for (const [name, placeholder] of Object.entries(names)) text = text.replaceAll(name, placeholder);
    return text;
  });
}

/** Outputs of the commands that change something, run one way (remote or local), normalized for comparing. */
async function changeEverything(
  config: Config,
  names: { token: string; user: number },
  files: { directory: string },
): Promise<Record<string, string[]>> {
  const { token, user } = names;
  const as = { [token]: '<name>', [`user ${user}`]: 'user <user>', [files.directory]: '<dir>' };
  const outputs: Record<string, string[]> = {};
  const record = async (key: string, command: keyof typeof COMMANDS, ...argv: string[]) => {
    outputs[key] = normalized((await run(config, command, ...argv)).stdout, as);
  };
  await record(
    'token create',
    'token',
    'create',
    '--name',
    token,
    '--scopes',
    'findby,share:read',
    '--expires-days',
    '7',
  );
  await assert.rejects(run(config, 'token', 'create', '--name', token), (error: Error) => {
    assert.ok(error instanceof UsageError);
    assert.equal(error.message, `A token named ${token} exists already`);
    return true;
  });
  await record('token revoke', 'token', 'revoke', '--name', token);
  await assert.rejects(run(config, 'token', 'revoke', '--name', token), /No live token named/);
  await record('user add', 'user', 'add', '--number', String(user), '--name', 'Teller');
  await assert.rejects(run(config, 'user', 'add', '--number', String(user), '--name', 'Again'), UsageError);
  await record('user disable', 'user', 'disable', '--number', String(user));
  await record('user enable', 'user', 'enable', '--number', String(user));
  await record('user unlock', 'user', 'unlock', '--number', String(user));
  await record('user password', 'user', 'password', '--number', String(user));
  await record('user password given', 'user', 'password', '--number', String(user), '--password', 'teller-pw-1');
  await assert.rejects(run(config, 'user', 'disable', '--number', '9876'), /No user 9876/);
  const file = join(files.directory, 'records.ndjson');
  await record('export', 'export', '--out', file);
  await record('import', 'import', file, '--replace');
  await record('reset', 'reset');
  return outputs;
}

/** What reading commands print: equal on the same store, whichever way they went. */
async function readEverything(config: Config, window: { since: string; until: string }) {
  return {
    tokens: (await run(config, 'token', 'list')).stdout,
    users: (await run(config, 'user', 'list')).stdout,
    audit: (await run(config, 'audit', '--since', window.since, '--until', window.until, '--operation', 'admin:*'))
      .stdout,
  };
}

const EXPECTED_CHANGES = {
  'token create': ['<token>', '# <name>: scopes findby, share:read, expires <time>'],
  'token revoke': ['Revoked <name>'],
  'user add': ['Added user <user> (Teller)', 'Password: <password>'],
  'user disable': ['Disabled user <user> (Teller)'],
  'user enable': ['Enabled user <user> (Teller)'],
  'user unlock': ['Unlocked user <user> (Teller): 0 lockouts cleared'],
  'user password': ['Password of user <user>: <password>'],
  'user password given': ['Password of user <user> set'],
  export: ['Exported <count> records (3 accounts) to <dir>/records.ndjson in <seconds>'],
  import: [
    'Imported <count> records (3 accounts) from <dir>/records.ndjson in <seconds>',
    `The records are demo dataset seed ${DEMO.seed}, 3 accounts: coregate reset goes back to it`,
  ],
  reset: [
    `Reset to demo dataset seed ${DEMO.seed}, 3 accounts (<count> records) in <seconds>; API tokens, users and the administrative password are unchanged`,
  ],
};

/** The outputs with record counts as placeholders too (they differ between the datasets only). */
const counted = (outputs: Record<string, string[]>) =>
  Object.fromEntries(
    Object.entries(outputs).map(([key, lines]) => [
      key,
      lines.map((line) => line.replace(/[\d,]+ records/, '<count> records')),
    ]),
  );

describe('the admin commands while coregate serves the embedded data directory (the lock case)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-cli-admin-'));
  const work = mkdtempSync(join(tmpdir(), 'coregate-cli-admin-files-'));
  const config = loadConfig({ COREGATE_DATA_DIR: dataDir });
  let served: Served;
  let remote: Record<string, string[]>;
  let remoteReads: Awaited<ReturnType<typeof readEverything>>;
  let window: { since: string; until: string };

  before(async () => {
    await prepareStore(config);
    served = await serve({
      env: { COREGATE_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: '', COREGATE_URL: '' },
    });
  });
  after(async () => {
    if (served && served.child.exitCode === null) await stop(served.child);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  test('the server writes where it listens beside its lock', () => {
    const address = JSON.parse(readFileSync(join(dataDir, SERVER_FILE), 'utf8'));
    assert.equal(address.url, served.baseUrl);
    assert.equal(address.pid, served.child.pid);
  });

  test('a failed export --out leaves no .partial file, remote or local', async () => {
    const out = join(work, 'refused.ndjson');
    const findbyOnly = (await run(config, 'token', 'create', '--name', 'findby-only', '--scopes', 'findby')).stdout[0]!;
    const refused = loadConfig({
      COREGATE_DATA_DIR: dataDir,
      COREGATE_URL: served.baseUrl,
      COREGATE_ADMIN_TOKEN: findbyOnly,
    });
    await assert.rejects(run(refused, 'export', '--out', out), /lacks the admin scope/);
    await assert.rejects(run(config, 'export', '--out', join(work, 'missing-dir', 'x.ndjson')), /ENOENT/);
    const held = mkdtempSync(join(tmpdir(), 'coregate-held-'));
    const lock = await lockDataDir(held, 'a test holding the data directory');
    try {
      await assert.rejects(run(loadConfig({ COREGATE_DATA_DIR: held }), 'export', '--out', out), /in use by process/);
    } finally {
      lock.release();
      rmSync(held, { recursive: true, force: true });
    }
    assert.deepEqual(
      readdirSync(work).filter((name) => name.startsWith('refused')),
      [],
    );
  });

  test('each command calls the admin API instead of refusing, and says so in one line on stderr', async () => {
    const listed = await run(config, 'token', 'list');
    assert.equal(
      listed.stderr,
      `coregate token: via the admin API of the coregate serving ${dataDir} (process ${served.child.pid}) at ${served.baseUrl}\n`,
    );
    assert.match(listed.stdout.join('\n'), /^demo-\d+\t.*admin\tactive$/m);
    const since = new Date().toISOString();
    remote = await changeEverything(config, { token: 'remote-bot', user: 41 }, { directory: work });
    assert.deepEqual(counted(remote), EXPECTED_CHANGES);
    await new Promise((resolve) => setTimeout(resolve, 500));
    window = { since, until: new Date().toISOString() };
    // The events of the calls so far are written within the audit's flush interval.
    await new Promise((resolve) => setTimeout(resolve, 500));
    remoteReads = await readEverything(config, window);
    assert.match(remoteReads.users.join('\n'), /^41\tTeller$/m);
    assert.ok(remoteReads.audit.length > 10, remoteReads.audit.join('\n'));
    assert.match(remoteReads.audit.join('\n'), /\tadmin:token\.create\t.*\ttoken:remote-bot$/m);
  });

  test('audit --limit N prints the newest N events, newest first; with --oldest the oldest N, oldest first', async () => {
    const audit = async (...argv: string[]) =>
      (
        await run(config, 'audit', '--since', window.since, '--until', window.until, '--operation', 'admin:*', ...argv)
      ).stdout.slice(1);
    const everyEvent = await audit('--oldest');
    assert.ok(everyEvent.length > 6, everyEvent.join('\n'));
    assert.deepEqual(await audit(), everyEvent.toReversed());
    assert.deepEqual(await audit('--limit', '3'), everyEvent.slice(-3).reverse());
    assert.deepEqual(await audit('--limit', '3', '--oldest'), everyEvent.slice(0, 3));
  });

  test('coregate token list run as a process of its own goes through the server too', async () => {
    const ran = await runCli([...CLI, 'token', 'list'], { COREGATE_DATA_DIR: dataDir });
    assert.equal(ran.status, 0, ran.stderr);
    assert.match(
      ran.stderr,
      /^coregate token: via the admin API of the coregate serving .* at http:\/\/127\.0\.0\.1:\d+\n$/,
    );
    assert.deepEqual(ran.stdout.trimEnd().split('\n'), remoteReads.tokens);
  });

  test('an admin command calling the server loads no store or server module: no Fastify, PGlite, Kysely, TypeBox or catalog', async () => {
    for (const command of [
      ['token', 'list'],
      ['user', 'list'],
      ['audit', '--since', '1h', '--limit', '1'],
      ['faults', 'disable'],
    ]) {
      const modules = join(work, `modules-${command[0]}.txt`);
      const ran = await runCli(
        ['--import', 'tsx', '--import', './test/support/loaded-modules.mjs', SOURCE_CLI.at(-1)!, ...command],
        { COREGATE_DATA_DIR: dataDir, LOADED_MODULES_FILE: modules },
      );
      assert.equal(ran.status, 0, ran.stderr);
      assert.match(ran.stderr, /via the admin API/);
      const loaded = readFileSync(modules, 'utf8').split('\n');
      assert.ok(
        loaded.some((url) => url.endsWith('/src/cli/remote.ts')),
        'the hook saw the modules',
      );
      assert.deepEqual(
        loaded.filter((url) => SERVER_MODULES.test(url)),
        [],
        `coregate ${command.join(' ')}`,
      );
    }
  });

  test('COREGATE_URL and COREGATE_ADMIN_TOKEN reach the same server from anywhere', async () => {
    const demoToken = JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')).apiToken;
    const elsewhere = loadConfig({
      COREGATE_DATA_DIR: join(work, 'no-data-here'),
      COREGATE_URL: served.baseUrl,
      COREGATE_ADMIN_TOKEN: demoToken,
    });
    const listed = await run(elsewhere, 'user', 'list');
    assert.equal(listed.stderr, `coregate user: via the admin API of the coregate at ${served.baseUrl}\n`);
    assert.deepEqual(listed.stdout, remoteReads.users);
    assert.ok(!existsSync(join(work, 'no-data-here')), 'nothing was opened locally');
  });

  test('admin-password is not part of the admin API, and says so while the server holds the data directory', async () => {
    await assert.rejects(run(config, 'admin-password'), /set on the data directory only.*stop the server/);
  });

  test('with the server stopped, the same commands work on the data directory and print the same', async () => {
    assert.equal(await stop(served.child), 0);
    assert.ok(!existsSync(join(dataDir, SERVER_FILE)), 'the address went with the server');
    assert.deepEqual(await readEverything(config, window), remoteReads);
    const local = await changeEverything(config, { token: 'local-bot', user: 42 }, { directory: work });
    assert.deepEqual(local, remote);
    assert.equal((await run(config, 'token', 'list')).stderr, '', 'nothing said about a server');
  });
});

const postgres = process.env.TEST_DATABASE_URL;

describe(
  'the admin commands with COREGATE_URL, on PostgreSQL',
  { skip: postgres ? false : 'no TEST_DATABASE_URL' },
  () => {
    const name = `coregate_cli_admin_${randomBytes(4).toString('hex')}`;
    const url = postgres ? Object.assign(new URL(postgres), { pathname: `/${name}` }).href : '';
    const dataDir = mkdtempSync(join(tmpdir(), 'coregate-cli-admin-pg-'));
    const work = mkdtempSync(join(tmpdir(), 'coregate-cli-admin-pg-files-'));
    const local = loadConfig({ COREGATE_DATA_DIR: dataDir, DATABASE_URL: url });
    let remoteConfig: Config;
    let served: Served;

    before(async () => {
      await adminStatement(postgres!, `create database ${name}`);
      const token = await prepareStore(local);
      served = await serve({
        args: ['--no-demo'],
        env: { COREGATE_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', DATABASE_URL: url, COREGATE_URL: '' },
      });
      remoteConfig = loadConfig({
        COREGATE_DATA_DIR: dataDir,
        DATABASE_URL: url,
        COREGATE_URL: served.baseUrl,
        COREGATE_ADMIN_TOKEN: token,
      });
    });
    after(async () => {
      if (served && served.child.exitCode === null) await stop(served.child);
      await adminStatement(postgres!, `drop database if exists ${name} with (force)`);
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(work, { recursive: true, force: true });
    });

    test('each command goes through the server and prints what the same command prints on the database itself', async () => {
      const since = new Date().toISOString();
      const remote = await changeEverything(remoteConfig, { token: 'remote-bot', user: 51 }, { directory: work });
      assert.deepEqual(counted(remote), EXPECTED_CHANGES);
      const locally = await changeEverything(local, { token: 'local-bot', user: 52 }, { directory: work });
      assert.deepEqual(locally, remote);
      await new Promise((resolve) => setTimeout(resolve, 700));
      const window = { since, until: new Date().toISOString() };
      await new Promise((resolve) => setTimeout(resolve, 500));
      const viaServer = await readEverything(remoteConfig, window);
      assert.match(viaServer.tokens.join('\n'), /^remote-bot\tfindby,share:read\trevoked /m);
      assert.deepEqual(await readEverything(local, window), viaServer);
      assert.match(
        (await run(remoteConfig, 'token', 'list')).stderr,
        /^coregate token: via the admin API of the coregate at http/,
      );
    });
  },
);
