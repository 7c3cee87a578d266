/**
 * Runs the tests with node:test's spec reporter and a progress line at least every 30 s
 * (test/support/progress-reporter.mjs); node's own summary is the last thing printed.
 * Run: npm test (every file, as CI does), or npm run test:quick (without the process-level suites of
 * test/suites.ts). Arguments after `--` go to node --test (e.g. --test-name-pattern=...).
 */
import { spawn, spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { quickFiles, testFiles } from '../test/suites.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const passed = args.filter((arg) => arg !== '--quick');
const files = quick ? quickFiles() : testFiles();

/**
 * The process-level suites start `coregate` hundreds of times: they run a build of the current source, made
 * here once (under 1 s), instead of tsx compiling it on every start (test/support/serve-process.ts, `CLI`).
 * Inside the repository, where its dependencies are found.
 */
const TEST_BUILD = 'node_modules/.cache/coregate-test-build';
const testCli: NodeJS.ProcessEnv = {};
if (!quick) {
  const built = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts', TEST_BUILD], { stdio: 'inherit' });
  if (built.status !== 0) {
    console.error('npm test: compiling the command line for the process-level suites failed');
    process.exit(1);
  }
  testCli.COREGATE_TEST_CLI = resolve(TEST_BUILD, 'coregate.js');
}

const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-reporter=./test/support/progress-reporter.mjs',
    '--test-reporter-destination=stdout',
    '--test-concurrency=2',
    ...passed,
    ...files,
  ],
  { stdio: 'inherit', env: { ...process.env, ...testCli, TEST_FILE_COUNT: String(files.length) } },
);
// Ctrl-C reaches the child too (same process group): wait for it to end and report what it did.
process.on('SIGINT', () => {});
child.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal ? 1 : 0);
});
