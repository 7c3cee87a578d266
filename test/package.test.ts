/**
 * The one-command install, as a new user meets it: `npm pack` makes a tarball of the compiled command (no
 * source, test, bench or source map), `npm install <tarball>` puts it in an empty folder with its runtime
 * dependencies from the registry alone, and `npx coregate` there, without an argument, starts the embedded
 * sandbox with its data in ./coregate-data, prints what `npm start` prints and answers the README's findBySSN
 * call; the other commands use the same data.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from './support/pg-cluster.js';

/** This process's environment without npm's own variables (set by `npm test`) and coregate's settings. */
function userEnvironment(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const kept = Object.entries(process.env).filter(
    ([name]) => !/^(npm_|COREGATE_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$|LOG_)/i.test(name),
  );
  return { ...Object.fromEntries(kept), ...extra };
}

function run(command: string, args: readonly string[], cwd: string) {
  const result = spawnSync(command, args, { cwd, env: userEnvironment(), encoding: 'utf8', timeout: 120_000 });
  assert.equal(result.status, 0, `${command} ${args.join(' ')}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

interface Packed {
  readonly filename: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly files: readonly { path: string }[];
}

/**
 * The README's curl call of an operation as the body it sends, with the admin password put where the shell
 * would put `$ADMIN_PASSWORD`.
 */
function readmeRequest(readme: string, operation: string, adminPassword: string): { path: string; body: string } {
  const call = new RegExp(
    `curl -s http://localhost:8627(\\S*/${operation}) \\\\\\n(?:.*\\\\\\n)*?\\s*-d '(.*)'\\n`,
  ).exec(readme);
  assert.ok(call, `the README has a curl call of ${operation}`);
  return { path: call[1]!, body: call[2]!.replaceAll(`'"$ADMIN_PASSWORD"'`, adminPassword) };
}

describe('the packed tarball, installed in an empty folder and started with npx', () => {
  const packDir = mkdtempSync(join(tmpdir(), 'coregate-pack-'));
  const folder = mkdtempSync(join(tmpdir(), 'coregate-npx-'));
  let packed: Packed;
  let server: ChildProcess | undefined;
  let output = '';
  let baseUrl = '';

  before(async () => {
    [packed] = JSON.parse(run('npm', ['pack', '--json', '--silent', '--pack-destination', packDir], process.cwd())) as [
      Packed,
    ];
    writeFileSync(join(folder, 'package.json'), '{ "name": "trying-coregate", "private": true }\n');
    run('npm', ['install', join(packDir, packed.filename), '--no-audit', '--no-fund', '--prefer-offline'], folder);
    const port = await freePort();
    // A process group of its own, stopped as a terminal's Ctrl-C stops it: npx, its shell and coregate together.
    server = spawn('npx', ['coregate'], {
      cwd: folder,
      env: userEnvironment({ PORT: String(port) }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npx coregate did not serve within 120 s:\n${output}`)), 120_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (/Try it:\n.*\n/.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      };
      server!.stdout!.on('data', onData);
      server!.stderr!.on('data', onData);
      server!.once('exit', (code) => reject(new Error(`npx coregate exited with ${code}:\n${output}`)));
    });
    baseUrl = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    if (server?.pid !== undefined && server.exitCode === null) {
      try {
        process.kill(-server.pid, 'SIGKILL');
      } catch {
        // The group has ended already.
      }
    }
    rmSync(packDir, { recursive: true, force: true });
    rmSync(folder, { recursive: true, force: true });
  });

  test('the tarball holds the compiled command and its documents: no source, test, bench or source map', () => {
    const paths = packed.files.map((file) => file.path);
    assert.ok(paths.includes('bin/coregate.js') && paths.includes('dist/coregate.js'), paths.join(', '));
    assert.deepEqual(
      paths.filter((path) => /^(src|test|bench|scripts|packages)\/|\.map$|\.ts$/.test(path)),
      [],
    );
    assert.ok(packed.size < 400_000, `packed ${packed.size} bytes`);
  });

  test('only runtime dependencies are installed: no TypeScript, tsx or esbuild', () => {
    for (const tool of ['typescript', 'tsx', 'esbuild'])
      assert.ok(!existsSync(join(folder, 'node_modules', tool)), `${tool} is not installed`);
  });

  test('npx coregate without an argument seeds the demo into ./coregate-data and prints the banner of npm start', () => {
    const dataDir = join(folder, 'coregate-data');
    assert.ok(existsSync(join(dataDir, 'demo-credentials.json')), output);
    assert.match(output, /Demo data seeded/);
    assert.ok(output.includes(`(embedded database in ${dataDir})`), output);
    assert.match(output, /Demo token: +cg_/);
    assert.match(output, /Demo values to try: node_modules\/coregate\/docs\/demo-data\.md/);
    assert.ok(existsSync(join(folder, 'node_modules/coregate/docs/demo-data.md')));
  });

  test("the README's findBySSN call answers the demo SSN's accounts", async () => {
    const { apiToken, adminPassword } = JSON.parse(
      readFileSync(join(folder, 'coregate-data', 'demo-credentials.json'), 'utf8'),
    ) as { apiToken: string; adminPassword: string };
    const readme = readFileSync(join(folder, 'node_modules/coregate/README.md'), 'utf8');
    const { path, body } = readmeRequest(readme, 'findBySSN', adminPassword);
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiToken}`, 'content-type': 'application/json' },
      body,
    });
    assert.equal(response.status, 200, await response.clone().text());
    const { AccountNumber } = (await response.json()) as { AccountNumber: string[] };
    assert.ok(AccountNumber.length > 0, 'the SSN is a demo member');
  });

  test('it stops on a signal, and the other commands use the same ./coregate-data', async () => {
    const exited = new Promise((resolve) => server!.once('exit', resolve));
    process.kill(-server!.pid!, 'SIGINT');
    await exited;
    // The server itself (a grandchild of npx) has let go of the data dir once a command can open it.
    for (let waited = 0; existsSync(join(folder, 'coregate-data', 'coregate.lock')) && waited < 15_000; waited += 100)
      await new Promise((resolve) => setTimeout(resolve, 100));
    assert.match(output, /shutting down/);
    assert.match(run('npx', ['coregate', 'token', 'list'], folder), /^demo-\d+\t.*\tactive/m);
  });
});
