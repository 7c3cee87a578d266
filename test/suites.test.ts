/**
 * `npm run test:quick` runs the unit and in-process suites only (test/suites.ts): a suite that starts a
 * process cannot slip into it, since a file that imports node:child_process or a browser driver, itself or
 * through the test support modules it imports, must be on the list of process-level suites. `npm test` runs
 * every file.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, test } from 'node:test';
import { PROCESS_SUITES, quickFiles, SLOW_SUITES, testFiles } from './suites.js';

/** Modules whose import means the file starts a program of its own. */
const STARTS_PROCESSES = /^(node:)?child_process$|^playwright(-core)?$/;

/** The modules a file imports, statically or with import(), with relative ones resolved to repository paths. */
function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const specifiers = [...source.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'([^']+)'/gm)].map((m) => m[1]!);
  return specifiers.map((specifier) =>
    specifier.startsWith('.') ? normalize(join(dirname(file), specifier)).replace(/\.js$/, '.ts') : specifier,
  );
}

/** Whether a file starts processes: it imports a module that does, itself or through test/support. */
function startsProcesses(file: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return false;
  seen.add(file);
  return importsOf(file).some(
    (module) =>
      STARTS_PROCESSES.test(module) ||
      (module.startsWith('test/support/') && existsSync(module) && startsProcesses(module, seen)),
  );
}

describe('the quick suite', () => {
  test('leaves out every file that starts a process, itself or through test/support', () => {
    const starting = testFiles().filter((file) => startsProcesses(file));
    assert.ok(starting.includes('test/cli.test.ts'), 'the scan finds the suites that spawn the CLI');
    const quickButStarting = starting.filter((file) => quickFiles().includes(file));
    assert.deepEqual(
      quickButStarting,
      [],
      'these suites start processes: add them to PROCESS_SUITES in test/suites.ts',
    );
  });

  test('names only files that exist', () => {
    const listed = [...Object.keys(PROCESS_SUITES), ...Object.keys(SLOW_SUITES)];
    assert.deepEqual(
      listed.filter((file) => !testFiles().includes(file)),
      [],
    );
    assert.equal(new Set(listed).size, listed.length, 'a suite is on one list');
  });

  test('is the unit and in-process suites, and npm test runs them all', () => {
    const quick = quickFiles();
    assert.ok(quick.includes('test/suites.test.ts'));
    assert.ok(quick.includes('test/catalog.test.ts'));
    assert.ok(testFiles().includes('packages/client/test/client.test.ts'));
    assert.equal(
      quick.length + Object.keys(PROCESS_SUITES).length + Object.keys(SLOW_SUITES).length,
      testFiles().length,
    );
  });
});
