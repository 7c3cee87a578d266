/**
 * The reporter of `npm test` (test/support/progress-reporter.mjs): spec's output, a progress line whenever
 * nothing was printed for the interval, and node's own summary as the last thing printed, which CI reads.
 * A fixture test lasts until this test has read a progress line, so no timing decides the outcome.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

test('prints a progress line while a test runs, and ends with node’s summary', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'coregate-progress-'));
  const seen = join(dir, 'seen');
  const { NODE_TEST_CONTEXT: _, ...runnerless } = process.env;
  try {
    const child = spawn(
      process.execPath,
      ['--test', '--test-reporter=./test/support/progress-reporter.mjs', 'test/fixtures/progress/waits.test.mjs'],
      // Without NODE_TEST_CONTEXT, which tells a test process to report to the runner that started it.
      { env: { ...runnerless, TEST_PROGRESS_EVERY_MS: '200', TEST_FILE_COUNT: '1', PROGRESS_SEEN_FILE: seen } },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      if (/^… \d+ tests \(0 failed\), 0\/1 files, 0 min$/m.test(output)) writeFileSync(seen, '');
    });
    const status = await new Promise((resolve) => child.once('close', resolve));
    assert.equal(status, 0, output);
    const lines = output.trimEnd().split('\n');
    const summary = lines.findIndex((line) => line.startsWith('ℹ tests 2'));
    assert.ok(summary > 0, output);
    assert.ok(lines.slice(0, summary).some((line) => line.startsWith('… ')));
    assert.deepEqual(
      lines.slice(summary).filter((line) => !line.startsWith('ℹ ')),
      [],
      'the summary is the last thing printed',
    );
    assert.match(lines.at(-1)!, /^ℹ duration_ms \d/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
