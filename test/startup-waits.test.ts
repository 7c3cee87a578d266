/**
 * Start-up waits are bounded and named: `coregate serve` waits for a PostgreSQL it cannot reach for
 * COREGATE_DB_START_TIMEOUT_S (0: forever), each waiting line naming DATABASE_URL, the host and port and the
 * driver's error (never the password), then exits 1 with one clear line; a host name that does not resolve
 * stops the start at once, for the database, Redis and the SymXchange cores alike. The real `coregate serve`
 * process, against a port nothing listens on and a name no resolver knows (`.invalid`, RFC 6761).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadConfig } from '../src/config.js';
import { freePort } from './support/pg-cluster.js';
import { CLI, stop } from './support/serve-process.js';

const PASSWORD = 'start-wait-secret';
const UNRESOLVABLE = 'nonexistent.invalid';
const dataDir = mkdtempSync(join(tmpdir(), 'coregate-start-waits-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

const environment = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({
  ...process.env,
  COREGATE_DATA_DIR: dataDir,
  COREGATE_SECRET: 'cd'.repeat(32),
  DATABASE_URL: '',
  REDIS_URL: '',
  PORT: '0',
  LOG_LEVEL: 'warn',
  ...env,
});

/** Runs `coregate serve` to its end (60 s at most): its exit status, its stderr lines and how long it took. */
async function serveToEnd(env: NodeJS.ProcessEnv, args: readonly string[] = []) {
  const started = performance.now();
  const child = spawn(process.execPath, [...CLI, 'serve', ...args], {
    env: environment(env),
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 60_000,
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [status] = (await once(child, 'close')) as [number | null];
  const lines = stderr.trim().split('\n');
  return { status, lines, stderr, seconds: (performance.now() - started) / 1000 };
}

const unreachableDatabase = async () => `postgres://coregate:${PASSWORD}@127.0.0.1:${await freePort()}/records`;

test('COREGATE_DB_START_TIMEOUT_S is 60 s unless set; 0 means no bound', () => {
  assert.equal(loadConfig({}).databaseStartTimeoutS, 60);
  assert.equal(loadConfig({ COREGATE_DB_START_TIMEOUT_S: '0' }).databaseStartTimeoutS, 0);
  assert.throws(() => loadConfig({ COREGATE_DB_START_TIMEOUT_S: '-1' }), /COREGATE_DB_START_TIMEOUT_S must be/);
});

describe('a database nothing listens for', { concurrency: true }, () => {
  test('each waiting line names DATABASE_URL, the host and port and the error; when the bound runs out, one line and exit 1', async () => {
    const url = await unreachableDatabase();
    const { port } = new URL(url);
    const run = await serveToEnd({ DATABASE_URL: url, COREGATE_DB_START_TIMEOUT_S: '2' });
    assert.equal(run.status, 1, run.stderr);
    const waiting = run.lines.slice(0, -1);
    assert.ok(waiting.length >= 2, run.stderr);
    for (const line of waiting)
      assert.match(
        line,
        new RegExp(
          `^the database at 127\\.0\\.0\\.1:${port} \\(DATABASE_URL\\) is not reachable \\(ECONNREFUSED: .*\\); trying again in \\d+ ms$`,
        ),
      );
    assert.match(
      run.lines.at(-1)!,
      new RegExp(
        `^coregate serve failed: the database at 127\\.0\\.0\\.1:${port} \\(DATABASE_URL\\) was not reachable within 2 s \\(ECONNREFUSED.*\\); giving up \\(COREGATE_DB_START_TIMEOUT_S`,
      ),
    );
    assert.ok(run.seconds < 20, `gave up after ${run.seconds.toFixed(1)} s`);
    assert.ok(!run.stderr.includes(PASSWORD), 'the password is never shown');
  });

  test('with serve --workers, the first worker to give up ends the start: one line, exit 1', async () => {
    const run = await serveToEnd({ DATABASE_URL: await unreachableDatabase(), COREGATE_DB_START_TIMEOUT_S: '2' }, [
      '--workers',
      '2',
    ]);
    assert.equal(run.status, 1, run.stderr);
    assert.match(run.lines[0]!, /^worker \d+: the database at 127\.0\.0\.1:\d+ \(DATABASE_URL\) is not reachable/);
    const failed = run.lines.filter((line) => line.startsWith('coregate serve failed'));
    assert.equal(failed.length, 1, run.stderr);
    assert.match(failed[0]!, /was not reachable within 2 s/);
    assert.doesNotMatch(run.stderr, /exited|starting another/, 'no worker is forked to wait again');
  });

  test('COREGATE_DB_START_TIMEOUT_S=0 keeps waiting', async () => {
    const env = environment({ DATABASE_URL: await unreachableDatabase(), COREGATE_DB_START_TIMEOUT_S: '0' });
    const child = spawn(process.execPath, [...CLI, 'serve'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      // 250 + 500 + 1000 ms of waits: the 2 s a bound of 1 s would not have allowed.
      for (let waited = 0; !stderr.includes('trying again in 2000 ms'); waited += 100) {
        assert.ok(waited < 30_000, stderr);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(child.exitCode, null, 'still waiting');
    } finally {
      await stop(child);
    }
  });
});

describe(
  'a host name that does not resolve stops the start at once, naming its variable',
  { concurrency: true },
  () => {
    const cases: [string, NodeJS.ProcessEnv, RegExp][] = [
      [
        'DATABASE_URL',
        { DATABASE_URL: `postgres://coregate:${PASSWORD}@${UNRESOLVABLE}:5433/records` },
        /^coregate serve failed: the database at nonexistent\.invalid:5433 \(DATABASE_URL\) cannot be reached: its host does not resolve \(ENOTFOUND/,
      ],
      [
        'REDIS_URL',
        { REDIS_URL: `redis://:${PASSWORD}@${UNRESOLVABLE}:6380` },
        /^coregate serve failed: REDIS_URL names the host nonexistent\.invalid:6380, and nonexistent\.invalid does not resolve \(ENOTFOUND\)/,
      ],
      [
        'COREGATE_SYMXCHANGE_URL',
        { COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: `https://${UNRESOLVABLE}:24604` },
        /^coregate serve failed: COREGATE_SYMXCHANGE_URL names the host nonexistent\.invalid:24604, and nonexistent\.invalid does not resolve/,
      ],
    ];
    for (const [variable, env, message] of cases) {
      test(variable, async () => {
        const run = await serveToEnd(env);
        assert.equal(run.status, 1, run.stderr);
        assert.equal(run.lines.length, 1, run.stderr);
        assert.match(run.lines[0]!, message);
        assert.ok(!run.stderr.includes(PASSWORD), 'the password is never shown');
      });
    }
  },
);
