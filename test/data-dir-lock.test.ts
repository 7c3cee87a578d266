/**
 * One owner per embedded data directory: a second process fails at once instead of splitting the
 * database; a lock left by a dead process, or by another host's process whose heartbeat stopped, is taken
 * over (by exactly one of several racing processes); the owner keeps its heartbeat fresh; closing releases
 * it; PostgreSQL is never locked. Then the same with real `coregate` processes.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  linkSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { openRuntime, type RuntimeOptions } from '../src/runtime.js';
import {
  DataDirLockedError,
  HEARTBEAT_MS,
  LOCK_FILE,
  lockDataDir,
  processStart,
  type LockHolder,
} from '../src/database/data-dir-lock.js';
import { ping } from '../src/database/database.js';
import { CLI } from './support/serve-process.js';

const temporaryDirs: string[] = [];
const freshDataDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'coregate-lock-'));
  temporaryDirs.push(dir);
  return dir;
};
after(() => temporaryDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

const embedded = (dataDir: string) => loadConfig({ COREGATE_DATA_DIR: dataDir });

/**
 * Opens the embedded database without migrating (quicker). The query starts Kysely's driver: a Kysely
 * that never ran one does not close PGlite on destroy, and the open PGlite keeps the test process alive.
 */
async function openUnmigrated(dataDir: string, options: RuntimeOptions = {}) {
  const runtime = await openRuntime(embedded(dataDir), { ...options, migrate: false });
  await ping(runtime.database.db);
  return runtime;
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const { pid } = spawnSync(process.execPath, ['-e', '']);
  assert.ok(pid);
  assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
  return pid;
}

function writeLock(dataDir: string, holder: Partial<LockHolder> & { pid: number }): void {
  const lock = { hostname: hostname(), command: 'coregate serve', startedAt: '2026-01-01T00:00:00.000Z', ...holder };
  writeFileSync(join(dataDir, LOCK_FILE), JSON.stringify(lock));
}

/** Sets a file's mtime (a lock's heartbeat) `ms` into the past. */
function ageFile(file: string, ms: number): void {
  const then = new Date(Date.now() - ms);
  utimesSync(file, then, then);
}

const heartbeatAge = (file: string) => Date.now() - statSync(file).mtimeMs;

/** A lock another host's process wrote, its heartbeat `ageMs` old. */
function writeForeignLock(dataDir: string, ageMs: number, holder: Partial<LockHolder> = {}): void {
  // Its pid is one that runs here, so only the heartbeat can make it stale.
  writeLock(dataDir, { pid: process.pid, hostname: 'elsewhere.example', heartbeatMs: HEARTBEAT_MS, ...holder });
  ageFile(join(dataDir, LOCK_FILE), ageMs);
}

const readLock = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, LOCK_FILE), 'utf8')) as LockHolder;

describe('the embedded data directory lock', () => {
  test('a second open of the same data dir fails at once, naming the owner and the way out', async () => {
    const dataDir = freshDataDir();
    const runtime = await openUnmigrated(dataDir, { command: 'coregate serve' });
    try {
      const started = Date.now();
      const refused = await openRuntime(embedded(dataDir)).then(
        () => assert.fail('the second open succeeded'),
        (error: unknown) => error,
      );
      assert.ok(Date.now() - started < 1000, 'it does not wait');
      assert.ok(refused instanceof DataDirLockedError);
      assert.equal(refused.code, 'DATA_DIR_LOCKED');
      assert.match(
        refused.message,
        new RegExp(`in ${dataDir} is in use by process ${process.pid} \\(coregate serve, since \\S+Z\\)`),
      );
      assert.match(
        refused.message,
        /stop it first, or use DATABASE_URL \(PostgreSQL\) to share a database between processes$/,
      );
      assert.doesNotMatch(refused.message, /\n/);
    } finally {
      await runtime.database.close();
    }
  });

  test('the lock file names the owning process', async () => {
    const dataDir = freshDataDir();
    const lock = await lockDataDir(dataDir, 'coregate token create');
    try {
      const holder = readLock(dataDir);
      assert.equal(holder.pid, process.pid);
      assert.equal(holder.hostname, hostname());
      assert.equal(holder.command, 'coregate token create');
      assert.ok(!Number.isNaN(Date.parse(holder.startedAt)));
      assert.equal(holder.processStart, processStart(process.pid));
      assert.equal(holder.heartbeatMs, HEARTBEAT_MS);
    } finally {
      lock.release();
    }
  });

  test('closing the database releases the lock, so the next open succeeds', async () => {
    const dataDir = freshDataDir();
    const first = await openUnmigrated(dataDir);
    await first.database.close();
    assert.equal(existsSync(join(dataDir, LOCK_FILE)), false);
    const second = await openUnmigrated(dataDir);
    await second.database.close();
  });

  test('a lock left by a dead process is taken over, and the takeover is reported in one line', async () => {
    const dataDir = freshDataDir();
    const dead = deadPid();
    writeLock(dataDir, { pid: dead });
    const reported: string[] = [];
    const runtime = await openUnmigrated(dataDir, { report: (line) => reported.push(line) });
    try {
      assert.equal(readLock(dataDir).pid, process.pid);
      assert.equal(reported.length, 1);
      assert.match(
        reported[0]!,
        new RegExp(`^took over the stale lock of process ${dead} \\(coregate serve, since 2026-01-01T00:00:00Z\\)`),
      );
      assert.doesNotMatch(reported[0]!, /\n/);
    } finally {
      await runtime.database.close();
    }
  });

  test(
    'a lock whose pid now belongs to another process (a reused pid) is taken over',
    { skip: processStart(process.pid) === undefined && 'no /proc' },
    async () => {
      const dataDir = freshDataDir();
      // This very process, as if it had reused the pid of an owner that started at another time.
      writeLock(dataDir, { pid: process.pid, processStart: '1' });
      const lock = await lockDataDir(dataDir);
      try {
        assert.equal(lock.tookOver?.holder?.pid, process.pid);
      } finally {
        lock.release();
      }
    },
  );

  test('a lock of a live process whose start time cannot be compared is respected', async () => {
    const dataDir = freshDataDir();
    writeLock(dataDir, { pid: process.pid });
    await assert.rejects(lockDataDir(dataDir), DataDirLockedError);
  });

  test('a lock of another host whose heartbeat is fresh is refused, naming the host, the process, since when and when it turns stale', async () => {
    const dataDir = freshDataDir();
    writeForeignLock(dataDir, 4_000, { pid: 4242 });
    await assert.rejects(lockDataDir(dataDir), (error: Error) => {
      assert.ok(error instanceof DataDirLockedError);
      assert.match(
        error.message,
        /is in use by process 4242 on host elsewhere\.example \(coregate serve, since 2026-01-01T00:00:00Z, last heartbeat [45] s ago\); stop it first, or use DATABASE_URL .*; if it no longer runs there, its lock is stale in 2[67] s and a start after that takes it over$/,
      );
      return true;
    });
    assert.equal(readLock(dataDir).pid, 4242, 'the lock is left as it was');
  });

  test('a lock of another host is judged by the heartbeat interval it names', async () => {
    const dataDir = freshDataDir();
    // 40 s old: stale under the default interval, not under its own of a minute.
    writeForeignLock(dataDir, 40_000, { heartbeatMs: 60_000 });
    await assert.rejects(lockDataDir(dataDir), /stale in 1(39|40) s/);
  });

  test('a lock of another host whose heartbeat stopped is taken over, and the takeover is reported in one line', async () => {
    const dataDir = freshDataDir();
    writeForeignLock(dataDir, 3_600_000, { pid: 4242 });
    const reported: string[] = [];
    const runtime = await openUnmigrated(dataDir, { report: (line) => reported.push(line) });
    try {
      assert.equal(readLock(dataDir).pid, process.pid);
      assert.equal(reported.length, 1);
      assert.match(
        reported[0]!,
        new RegExp(
          `^took over the stale lock of process 4242 on host elsewhere\\.example \\(coregate serve, since 2026-01-01T00:00:00Z\\) ` +
            `on ${join(dataDir, LOCK_FILE)}: its last heartbeat is 360\\d s old \\(stale after 30 s\\)$`,
        ),
      );
    } finally {
      await runtime.database.close();
    }
  });

  test('a lock of this host whose process runs is respected however old its heartbeat', async () => {
    const dataDir = freshDataDir();
    // A live owner's heartbeat pauses while PGlite runs a long statement on its thread.
    writeLock(dataDir, { pid: process.pid, processStart: processStart(process.pid) });
    ageFile(join(dataDir, LOCK_FILE), 3_600_000);
    await assert.rejects(lockDataDir(dataDir), DataDirLockedError);
  });

  test('the owner keeps its heartbeat fresh while it holds the lock, and stops once it releases it', async () => {
    const dataDir = freshDataDir();
    const lock = await lockDataDir(dataDir, 'coregate serve', { heartbeatMs: 50 });
    // Another name for the lock's file, which outlives the release.
    const witness = join(dataDir, 'witness');
    linkSync(lock.file, witness);
    try {
      ageFile(witness, 3_600_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.ok(heartbeatAge(lock.file) < 1_000, `heartbeat ${heartbeatAge(lock.file)} ms old`);
    } finally {
      lock.release();
    }
    ageFile(witness, 3_600_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.ok(heartbeatAge(witness) > 3_000_000, 'no heartbeat after the release');
  });

  test('a command holding the lock exits when its work is done: the heartbeat does not keep it alive', () => {
    const dataDir = freshDataDir();
    const holder = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        "import { lockDataDir } from './src/database/data-dir-lock.ts'; await lockDataDir(process.env.DATA_DIR, 'holder', { heartbeatMs: 50 });",
      ],
      { env: { ...process.env, DATA_DIR: dataDir }, encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(holder.status, 0, holder.stderr);
    assert.equal(existsSync(join(dataDir, LOCK_FILE)), false, 'released on exit');
  });

  test('releasing never deletes a lock that is not its own', async () => {
    const dataDir = freshDataDir();
    const lock = await lockDataDir(dataDir);
    writeLock(dataDir, { pid: deadPid(), command: 'someone else' });
    lock.release();
    assert.equal(readLock(dataDir).command, 'someone else');
  });

  test('a takeover left half done by a crash does not block the next one', async () => {
    const dataDir = freshDataDir();
    writeLock(dataDir, { pid: deadPid() });
    // What a process that crashed while replacing that stale lock leaves: its claim on it.
    const digest = (await import('node:crypto'))
      .createHash('sha256')
      .update(readFileSync(join(dataDir, LOCK_FILE)))
      .digest('hex');
    const claim = join(dataDir, `${LOCK_FILE}.${digest.slice(0, 16)}.takeover`);
    writeFileSync(
      claim,
      JSON.stringify({ pid: deadPid(), hostname: hostname(), command: 'crashed', startedAt: '2026-01-01T00:00:00Z' }),
    );
    const lock = await lockDataDir(dataDir);
    try {
      assert.equal(readLock(dataDir).pid, process.pid);
      assert.deepEqual(readdirSync(dataDir), [LOCK_FILE], 'the claims are gone');
    } finally {
      lock.release();
    }
  });

  test('the lock is not taken with DATABASE_URL (PostgreSQL is shared)', async () => {
    const dataDir = freshDataDir();
    const held = await lockDataDir(dataDir, 'coregate serve');
    try {
      // An unreachable server: the open fails on the database, not on the data directory's lock.
      const config = { ...embedded(dataDir), databaseUrl: 'postgres://127.0.0.1:1/none' };
      await assert.rejects(openRuntime(config), (error: Error) => !(error instanceof DataDirLockedError));
      assert.equal(readLock(dataDir).command, 'coregate serve');
    } finally {
      held.release();
    }
    const unlocked = freshDataDir();
    await assert.rejects(openRuntime({ ...embedded(unlocked), databaseUrl: 'postgres://127.0.0.1:1/none' }));
    assert.equal(existsSync(join(unlocked, LOCK_FILE)), false);
  });
});

/**
 * A process that takes the lock when told: `go <time>` (it waits until then, so all racers start
 * together) answers `owner <pid>` or `refused <message>`; `release` gives up a lock it owns.
 */
const RACER = `
import { createInterface } from 'node:readline';
import { lockDataDir } from './src/database/data-dir-lock.ts';
let lock;
for await (const line of createInterface({ input: process.stdin })) {
  const [word, at] = line.split(' ');
  if (word === 'go') {
    while (Date.now() < Number(at));
    try {
      lock = await lockDataDir(process.env.DATA_DIR, 'racer');
      process.stdout.write('owner ' + process.pid + '\\n');
    } catch (error) {
      process.stdout.write('refused ' + error.message + '\\n');
    }
  } else if (word === 'release') {
    lock?.release();
    lock = undefined;
    process.stdout.write('released\\n');
  }
}
`;

interface Racer {
  readonly child: ChildProcess;
  next(): Promise<string>;
}

function startRacer(dataDir: string): Racer {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', RACER], {
    env: { ...process.env, DATA_DIR: dataDir },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return { child, next: async () => (await lines.next()).value as string };
}

describe('racing takeovers', () => {
  test('several processes replacing one stale lock at the same moment give exactly one owner, whichever host left it', async () => {
    const dataDir = freshDataDir();
    const racers = Array.from({ length: 4 }, () => startRacer(dataDir));
    const send = (line: string) => racers.forEach(({ child }) => child.stdin!.write(`${line}\n`));
    try {
      for (let round = 1; round <= 10; round += 1) {
        // Odd rounds: a dead process of this host; even rounds: another host's process whose heartbeat stopped.
        if (round % 2 === 1) writeLock(dataDir, { pid: deadPid(), command: `crashed ${round}` });
        else writeForeignLock(dataDir, 3_600_000, { command: `crashed ${round}` });
        // The first round also waits for the racers to load.
        send(`go ${Date.now() + (round === 1 ? 3000 : 100)}`);
        const answers = await Promise.all(racers.map((racer) => racer.next()));
        const owners = answers.filter((answer) => answer.startsWith('owner '));
        assert.equal(owners.length, 1, `round ${round}: ${answers.join(' | ')}`);
        const owner = Number(owners[0]!.split(' ')[1]);
        assert.equal(readLock(dataDir).pid, owner);
        for (const answer of answers.filter((a) => !a.startsWith('owner '))) {
          assert.match(answer, new RegExp(`^refused .* in use by process ${owner} \\(racer, `));
        }
        assert.deepEqual(readdirSync(dataDir), [LOCK_FILE], 'no claim or temporary file is left');
        send('release');
        await Promise.all(racers.map((racer) => racer.next()));
        assert.equal(existsSync(join(dataDir, LOCK_FILE)), false);
      }
    } finally {
      racers.forEach(({ child }) => child.stdin!.end());
      await Promise.all(racers.map(({ child }) => child.exitCode ?? new Promise((done) => child.once('exit', done))));
    }
  });
});

const cliEnv = (dataDir: string) => ({
  ...process.env,
  COREGATE_DATA_DIR: dataDir,
  DATABASE_URL: '',
  PORT: '0',
  LOG_LEVEL: 'warn',
});

interface Server {
  readonly child: ChildProcess;
  output(): string;
}

/** Starts `coregate serve` and resolves once it listens. */
function serve(dataDir: string): Promise<Server> {
  const child = spawn(process.execPath, [...CLI, 'serve'], { env: cliEnv(dataDir), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not serving within 120 s:\n${output}`)), 120_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/serving the Core Account Records API at http/.test(output)) {
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}:\n${output}`)));
  });
}

function signal(child: ChildProcess, name: NodeJS.Signals): Promise<number | null> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill(name);
  });
}

const createToken = (dataDir: string, name: string) =>
  spawnSync(process.execPath, [...CLI, 'token', 'create', '--name', name], { env: cliEnv(dataDir), encoding: 'utf8' });

describe('coregate processes on one data directory', () => {
  const dataDir = freshDataDir();
  let server: Server;
  before(async () => {
    server = await serve(dataDir);
  });
  after(async () => {
    if (server.child.exitCode === null) await signal(server.child, 'SIGTERM');
  });

  test('a second serve on the same data dir exits 1 at once, naming the first', () => {
    const second = spawnSync(process.execPath, [...CLI, 'serve'], {
      env: cliEnv(dataDir),
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(second.status, 1);
    assert.match(
      second.stderr,
      new RegExp(`^coregate serve failed: .* in use by process ${server.child.pid} \\(coregate serve, `),
    );
  });

  test('migrate while serve runs exits 1 at once with one line naming the server; after it stops, it succeeds', async () => {
    const migrate = () => spawnSync(process.execPath, [...CLI, 'migrate'], { env: cliEnv(dataDir), encoding: 'utf8' });
    const started = Date.now();
    const refused = migrate();
    assert.equal(refused.status, 1);
    assert.ok(Date.now() - started < 10_000, 'within a few seconds');
    assert.equal(refused.stdout, '');
    assert.match(
      refused.stderr,
      new RegExp(
        `^coregate migrate failed: the embedded database in \\S+ is in use by process ${server.child.pid} \\(coregate serve, since \\S+\\); stop it first, or use DATABASE_URL .*\\n$`,
      ),
    );
    // An admin command goes through the server's admin API instead (test/cli-admin.test.ts).
    const created = createToken(dataDir, 'x');
    assert.equal(created.status, 0, created.stderr);
    assert.match(
      created.stderr,
      new RegExp(`^coregate token: via the admin API of the coregate serving .* \\(process ${server.child.pid}\\)`),
    );
    assert.equal(await signal(server.child, 'SIGTERM'), 0);
    const after = migrate();
    assert.equal(after.status, 0, after.stderr);
    assert.match(after.stdout, /up to date/);
  });

  test('the next start after serve is killed with SIGKILL takes over its stale lock', async () => {
    const killed = await serve(dataDir);
    await signal(killed.child, 'SIGKILL');
    assert.equal(readLock(dataDir).pid, killed.child.pid, 'the killed server left its lock');
    server = await serve(dataDir);
    assert.match(
      server.output(),
      new RegExp(`took over the stale lock of process ${killed.child.pid} \\(coregate serve, `),
    );
    assert.equal(readLock(dataDir).pid, server.child.pid);
  });
});

describe('a data dir that comes from another host', () => {
  test('a command takes over the lock whose heartbeat stopped, saying so in one line on stderr', () => {
    const dataDir = freshDataDir();
    // What a container rescheduled onto this host finds on its volume.
    writeForeignLock(dataDir, 3_600_000, { pid: 7, command: 'coregate serve' });
    const listed = spawnSync(process.execPath, [...CLI, 'token', 'list'], { env: cliEnv(dataDir), encoding: 'utf8' });
    assert.equal(listed.status, 0, listed.stderr);
    assert.match(
      listed.stderr,
      new RegExp(
        `^coregate: took over the stale lock of process 7 on host elsewhere\\.example \\(coregate serve, since 2026-01-01T00:00:00Z\\) ` +
          `on ${join(dataDir, LOCK_FILE)}: its last heartbeat is 360\\d s old \\(stale after 30 s\\)\\n$`,
      ),
    );
    assert.equal(existsSync(join(dataDir, LOCK_FILE)), false, 'released when the command ends');
  });
});
