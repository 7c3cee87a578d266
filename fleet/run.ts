/**
 * `npm run fleet`: sets a whole fleet up in a temporary directory (PostgreSQL, Redis, HAProxy, two store
 * instances, two gateway instances: fleet/topology.ts), runs the scenarios under steady load
 * (fleet/scenarios.ts), prints the results table, writes it to fleet/results/latest.md, and exits 1 if a
 * goal was missed. `npm run fleet -- --help` lists the options.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { killAllChildren } from './children.js';
import { closeClient } from './client.js';
import { EXAMPLE_CONFIG_FILE, EXAMPLE_PLAN, exampleConfigIsCurrent, haproxyConfig } from './haproxy.js';
import { markdownReport, resultsTable, writeReport } from './report.js';
import { runScenario, scenarioPassed, SCENARIOS, verdict, type ScenarioReport } from './scenarios.js';
import { buildCoregate, REPO_ROOT } from './services.js';
import { GATEWAY_WORKERS, startFleet, STORE_WORKERS } from './topology.js';

const USAGE = `Usage: npm run fleet [-- options]

Runs two coregate instances over one PostgreSQL and one Redis behind HAProxy, and two gateway-mode
instances in front of them, through SIGKILL, a rolling restart, a Redis outage and a PostgreSQL restart
under steady load; prints the results and writes fleet/results/latest.md. Exits 1 if a goal is missed.
  --only KEYS      run only these scenarios (comma-separated: ${SCENARIOS.map((scenario) => scenario.key).join(',')})
  --keep           keep the run's directory (logs, HAProxy configuration) even when every goal is met
  --strict         fail on a known issue too (docs/fleet.md, "Findings"), not only on a new failure
  --write-config   rewrite the example fleet/haproxy.cfg from fleet/haproxy.ts and stop
Needs haproxy, redis-server and PostgreSQL's server binaries (initdb, pg_ctl).`;

const RESULTS_FILE = join(REPO_ROOT, 'fleet', 'results', 'latest.md');

const print = (line: string) => process.stdout.write(`${line}\n`);

function version(command: string, args: readonly string[]): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8' }).split('\n')[0]!.trim();
  } catch {
    throw new Error(`${command} is not installed (${USAGE.split('\n').at(-1)})`);
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      keep: { type: 'boolean' },
      strict: { type: 'boolean' },
      'write-config': { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    print(USAGE);
    return 0;
  }
  if (values['write-config']) {
    writeFileSync(EXAMPLE_CONFIG_FILE, haproxyConfig(EXAMPLE_PLAN));
    print(`wrote ${EXAMPLE_CONFIG_FILE}`);
    return 0;
  }
  if (!exampleConfigIsCurrent()) {
    process.stderr.write(
      'fleet/haproxy.cfg is not what fleet/haproxy.ts writes: run npm run fleet -- --write-config\n',
    );
    return 1;
  }
  const strict = values.strict === true;
  const keys = values.only?.split(',').map((key) => key.trim());
  const scenarios = keys ? SCENARIOS.filter((scenario) => keys.includes(scenario.key)) : SCENARIOS;
  if (keys && scenarios.length !== keys.length) {
    process.stderr.write(`--only: scenarios are ${SCENARIOS.map((scenario) => scenario.key).join(', ')}\n`);
    return 2;
  }
  const tools = [version('haproxy', ['-v']), version('redis-server', ['--version']), version('pg_ctl', ['--version'])];
  const startedAt = new Date();
  print('building coregate');
  await buildCoregate();
  const dir = mkdtempSync(join(tmpdir(), 'coregate-fleet-'));
  print(`setting the fleet up in ${dir}`);
  const fleet = await startFleet(dir, (line) => print(`  ${line}`)).catch((error: unknown) => {
    print(`the fleet did not start; logs are in ${dir}/logs`);
    throw error;
  });
  const reports: ScenarioReport[] = [];
  try {
    // Unique per run, short (update values must fit 40 characters), so that runs on one database never mix.
    const runTag = Date.now().toString(36).slice(-5);
    for (const scenario of scenarios) {
      print(`scenario ${scenario.title}`);
      const report = await runScenario(fleet, scenario, runTag);
      reports.push(report);
      for (const goal of report.goals) print(`  ${verdict(goal, strict)} ${goal.name}: ${goal.detail}`);
      for (const note of report.notes) print(`  note: ${note}`);
    }
  } finally {
    await fleet.stop().catch((error: unknown) => print(`stopping the fleet: ${(error as Error).message}`));
    await closeClient();
  }
  const passed = reports.every((report) => scenarioPassed(report, strict));
  const topology = [
    `HAProxy (${tools[0]}) in front of 2 store instances (serve --workers ${STORE_WORKERS}) and ` +
      `2 gateway instances (serve, ${GATEWAY_WORKERS} process each; core: the store fleet's SOAP face through HAProxy)`,
    `one PostgreSQL (${tools[2]}) and one Redis (${tools[1]}), the run's own`,
    `Node.js ${process.version}, ${(await import('node:os')).availableParallelism()} cores`,
  ];
  const markdown = markdownReport(reports, { startedAt, totalMs: Date.now() - startedAt.getTime(), topology, strict });
  writeReport(RESULTS_FILE, markdown);
  print('');
  print(resultsTable(reports, strict));
  print('');
  const known = [
    ...new Set(
      reports.flatMap((report) =>
        report.goals.filter((goal) => verdict(goal, strict) === 'known').map((goal) => goal.knownIssue),
      ),
    ),
  ];
  const outcome = passed ? 'every goal met' : 'GOALS FAILED';
  print(
    `${known.length > 0 ? `${outcome} but for known issues (${known.join('; ')})` : outcome}; the report is in ${RESULTS_FILE}`,
  );
  if (passed && !values.keep) rmSync(dir, { recursive: true, force: true });
  else print(`logs and the HAProxy configuration are kept in ${dir}`);
  return passed ? 0 : 1;
}

process.once('exit', killAllChildren);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAllChildren();
    process.exit(130);
  });
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`fleet run failed: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
