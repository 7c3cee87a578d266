/**
 * Runs the tests with node:test's spec reporter and a progress line at least every 30 s
 * (test/support/progress-reporter.mjs); node's own summary is the last thing printed.
 * Run: npm test (every file, as CI does), or npm run test:quick (without the process-level suites of
 * test/suites.ts). Arguments after `--` go to node --test (e.g. --test-name-pattern=...).
 */
import { spawn } from 'node:child_process';
import { quickFiles, testFiles } from '../test/suites.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const passed = args.filter((arg) => arg !== '--quick');
const files = quick ? quickFiles() : testFiles();

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
  { stdio: 'inherit', env: { ...process.env, TEST_FILE_COUNT: String(files.length) } },
);
// Ctrl-C reaches the child too (same process group): wait for it to end and report what it did.
process.on('SIGINT', () => {});
child.on('exit', (code, signal) => {
  process.exitCode = code ?? (signal ? 1 : 0);
});
