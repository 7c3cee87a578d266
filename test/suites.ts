/**
 * Which test files `npm run test:quick` leaves out: the process-level suites, which start a `coregate serve`,
 * the CLI, a PostgreSQL cluster of their own (initdb), Chromium, Redis, npm or another program, and the few
 * in-process suites that take minutes on their own. `npm test` runs every file. test/suites.test.ts keeps
 * the first list honest: a file that starts a process is on it, and every file on either list exists.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The process-level suites, each with what it starts. */
export const PROCESS_SUITES: Readonly<Record<string, string>> = {
  'test/audit.test.ts': 'serve processes killed mid-flush, on a PostgreSQL cluster of its own',
  'test/cli-admin.test.ts': 'coregate serve and the CLI against it',
  'test/cli.test.ts': 'the compiled CLI, coregate serve',
  'test/core-fault-rules.test.ts': 'coregate serve in gateway mode',
  'test/data-dir-lock.test.ts': 'processes racing for a data directory',
  'test/data-lifecycle.test.ts': 'coregate export, import and reset, serving and not',
  'test/database-busy.test.ts': 'a PostgreSQL cluster of its own',
  'test/database-outage.test.ts': 'coregate serve on a PostgreSQL cluster it stops and starts',
  'test/demo-credentials.test.ts': 'coregate serve',
  'test/docs-browser.test.ts': 'coregate serve and Chromium',
  'test/edge-limits.test.ts': 'coregate serve',
  'test/fault-injection-switch.test.ts': 'coregate serve and the faults command, on PostgreSQL with workers',
  'test/fault-rules.test.ts': 'coregate serve and the faults command',
  'test/gateway-database-outage.test.ts': 'a PostgreSQL cluster of its own',
  'test/gateway-faults.test.ts': 'coregate serve in gateway mode',
  'test/gateway-load.test.ts': 'coregate serve in gateway mode under load',
  'test/gateway-tls.test.ts': 'openssl, coregate serve in gateway mode',
  'test/memory-bounds.test.ts': 'coregate serve, driven until its memory settles',
  'test/package.test.ts': 'npm pack, npm install and npx coregate',
  'test/progress-reporter.test.ts': "node --test with npm test's reporter",
  'test/rate-limit.test.ts': 'Redis servers of its own',
  'test/recording.test.ts': 'coregate recording import and replay from the command line',
  'test/secret-fingerprint.test.ts': 'coregate serve',
  'test/slow-clients.test.ts': 'coregate serve, and a PostgreSQL cluster of its own',
  'test/startup-waits.test.ts': 'coregate serve waiting for a PostgreSQL cluster of its own',
  'test/symxchange-facts.test.ts': 'the facts script',
  'test/symxchange-releases.test.ts': 'coregate serve as a core of each release',
  'test/tracing.test.ts': 'coregate serve as a core and as its gateway',
};

/**
 * The in-process suites that each take a minute or more of a 2-core machine: every example of the OpenAPI
 * document run against the demo dataset, or every operation on each database.
 */
export const SLOW_SUITES: Readonly<Record<string, string>> = {
  'test/contract.test.ts': 'every example of the OpenAPI document, on the demo dataset and in each mode',
  'test/answer-cache.test.ts': 'every lookup, answered from memory and after each kind of change',
  'test/admin-api.test.ts': 'every admin call, under limits and in gateway mode',
  'test/collateral.test.ts': 'every collateral operation, on each database',
  'test/envelope.test.ts': 'the envelope checks of every operation',
  'test/bulk-load.test.ts': 'bulk loads of the demo dataset',
  'test/gateway-exactly-once.test.ts': 'keyed updates through a gateway and its core',
  'test/gateway-slow-core.test.ts': 'a gateway in front of a core that answers late',
  'test/fuzz.test.ts': 'generated bodies for every operation',
  'test/gateway.test.ts': 'every operation through a gateway and its core',
  'test/metrics.test.ts': 'the metrics of calls in each mode',
  'test/security.test.ts': 'tokens, scopes, credentials and the password throttle, on each database',
  'test/lockout.test.ts': 'lockouts and the refusal floor, which waits out its hash costs',
  'test/stalled-exports.test.ts': 'exports whose clients stall, waited out to their cut',
  'test/share-update-rules.test.ts': 'the update rules of every record type on every face',
};

/** Every test file `npm test` runs, relative to the repository: test/*.test.ts and packages/*\/test/*.test.ts. */
export function testFiles(root = process.cwd()): string[] {
  const tests = (dir: string) =>
    readdirSync(join(root, dir))
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => `${dir}/${name}`);
  const packages = readdirSync(join(root, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => {
      try {
        return tests(`packages/${entry.name}/test`);
      } catch {
        return [];
      }
    });
  return [...tests('test'), ...packages].sort();
}

/** The files `npm run test:quick` runs: the unit and in-process suites. */
export function quickFiles(root = process.cwd()): string[] {
  return testFiles(root).filter((file) => !Object.hasOwn(PROCESS_SUITES, file) && !Object.hasOwn(SLOW_SUITES, file));
}
