/**
 * `npm run bench`: seeds the datasets, starts coregate on PostgreSQL and on PGlite, Prism and the
 * Fastify ceiling, measures every scenario on every target, runs the scale checks, prints the results
 * and writes them to bench/results/<timestamp>.json. `npm run bench -- --help` lists the options.
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import {
  dropRunCopies,
  passedSettings,
  postgresVersion,
  prepareGateway,
  preparePglite,
  preparePostgres,
  PGLITE_MAX_ACCOUNTS,
  type Credentials,
  type Dataset,
} from './datasets.js';
import { profileLines, summarizeProfiles, writeWindows, type Windows } from './cpu-profile.js';
import { warmUpSeconds } from './load.js';
import { combined, measureScenario, type Measurement, type MeasurementSettings } from './measure.js';
import {
  parseOptions,
  SCALE_CHECKS,
  TARGETS,
  USAGE,
  UsageError,
  type BenchOptions,
  type TargetWord,
} from './options.js';
import {
  gatewayCost,
  gatewayCostLines,
  gatewayLines,
  machineFacts,
  resultsTable,
  scaleCheckLines,
  writeResults,
} from './report.js';
import { lookupScaleCheck, pagingScaleCheck, SCALE_MEASUREMENTS, SMALL_ACCOUNTS, type ScaleCheck } from './scale.js';
import { measuredOn, SCENARIOS, SOAP_PREFIX, type Scenario } from './scenarios.js';
import { BENCH_DIR, buildServers, installCleanup, stopAllChildren } from './servers.js';
import {
  ceilingTarget,
  coregateTarget,
  coreTarget,
  forwarderTarget,
  gatewayTarget,
  handwrittenTarget,
  prismTarget,
  startCeiling,
  startCoregate,
  startPrism,
  type Target,
} from './targets.js';

interface Selection {
  readonly targets: readonly TargetWord[];
  readonly scenarios: readonly Scenario[];
  readonly scaleChecks: boolean;
}

/** What `--only`, `--skip-pglite` and `--skip-prism` leave to run. */
function select(options: BenchOptions): Selection {
  const targetWords = options.only.filter((word): word is TargetWord => (TARGETS as readonly string[]).includes(word));
  const otherWords = options.only.filter((word) => !targetWords.includes(word as TargetWord) && word !== SCALE_CHECKS);
  const matching = (word: string) => SCENARIOS.filter((scenario) => scenario.name.toLowerCase().startsWith(word));
  const unknown = otherWords.filter((word) => matching(word).length === 0);
  if (unknown.length > 0) {
    throw new UsageError(
      `--only: no target or scenario ${unknown.join(', ')}; scenarios are ${SCENARIOS.map((s) => s.name).join(', ')}`,
    );
  }
  const narrowsWork = otherWords.length > 0 || options.only.includes(SCALE_CHECKS);
  const targets = (targetWords.length > 0 ? targetWords : TARGETS).filter(
    (id) => !(id === 'pglite' && options.skipPglite) && !(id === 'prism' && options.skipPrism),
  );
  const scenarios = narrowsWork
    ? SCENARIOS.filter((scenario) => otherWords.some((word) => matching(word).includes(scenario)))
    : SCENARIOS;
  return {
    // Without scenarios only the scale checks run, and they need PostgreSQL alone.
    targets: TARGETS.filter((id) => targets.includes(id) && (scenarios.length > 0 || id === 'pg')),
    scenarios,
    scaleChecks: (!narrowsWork || options.only.includes(SCALE_CHECKS)) && targets.includes('pg'),
  };
}

interface Prepared {
  readonly dataset: Dataset;
  readonly credentials: Credentials;
}

async function prepare(dataset: Promise<Dataset>): Promise<Prepared> {
  const ready = await dataset;
  const seeding = ready.reused ? 'reused' : `seeded at ${ready.seeding.accountsPerSecond} accounts/s`;
  console.log(`Dataset ${ready.name}: ${ready.accounts} accounts, ${seeding}`);
  return { dataset: ready, credentials: ready.credentials };
}

interface Datasets {
  readonly postgres?: Prepared;
  readonly pglite?: Prepared;
  /** The 10,000-account PostgreSQL dataset of the lookup scale check. */
  readonly small?: Prepared;
}

/** Seeds (or reuses) the datasets the selection needs, one after the other. */
async function prepareDatasets(options: BenchOptions, selection: Selection, notes: string[]): Promise<Datasets> {
  const { accounts, seed, reuse, databaseUrl } = options;
  const wants = (...ids: TargetWord[]) => ids.some((id) => selection.targets.includes(id));
  const postgres = wants('pg', 'gateway', 'forwarder', 'handwritten')
    ? await prepare(preparePostgres(databaseUrl, accounts, seed, reuse))
    : undefined;
  const pglite =
    wants('pglite') || (wants('handwritten') && !options.skipPglite)
      ? await prepare(preparePglite(accounts, seed, reuse))
      : undefined;
  if (pglite && pglite.dataset.accounts < accounts) {
    notes.push(`PGlite holds ${pglite.dataset.accounts} accounts (at most ${PGLITE_MAX_ACCOUNTS}), not ${accounts}`);
  }
  const small = !selection.scaleChecks
    ? undefined
    : accounts === SMALL_ACCOUNTS
      ? postgres
      : await prepare(preparePostgres(databaseUrl, SMALL_ACCOUNTS, seed, reuse));
  return { postgres, pglite, small };
}

async function coregateOn(id: 'pg' | 'pglite', prepared: Prepared, workers: number): Promise<Target> {
  const server = await startCoregate(`coregate on ${prepared.dataset.name}`, prepared.dataset, workers);
  return coregateTarget(id, server, prepared.dataset, prepared.credentials);
}

/** Starts every selected server; Prism and the ceiling borrow the first coregate target's requests. */
async function startTargets(
  selection: Selection,
  datasets: Datasets,
  options: BenchOptions,
  answerSizes: ReadonlyMap<string, number>,
  notes: string[],
  profiles?: ReadonlyMap<'gateway' | 'forwarder', string>,
): Promise<Target[]> {
  const { workers } = options;
  const coregates = await Promise.all([
    datasets.postgres && selection.targets.includes('pg') ? coregateOn('pg', datasets.postgres, workers) : undefined,
    datasets.pglite && selection.targets.includes('pglite') ? coregateOn('pglite', datasets.pglite, 1) : undefined,
  ]);
  const targets = coregates.filter((target): target is Target => target !== undefined);
  if (selection.targets.includes('handwritten')) {
    for (const prepared of [datasets.postgres, datasets.pglite]) {
      if (prepared)
        targets.push(await handwrittenTarget(prepared.dataset, prepared.dataset.kind === 'postgres' ? workers : 1));
    }
    notes.push(`the hand-written anchor ran ${workers} process(es) on PostgreSQL, as coregate; 1 on PGlite`);
  }
  const fronts = selection.targets.filter((id) => id === 'gateway' || id === 'forwarder');
  if (datasets.postgres && fronts.length > 0) {
    const { dataset, credentials } = datasets.postgres;
    const core = await coreTarget(dataset, credentials, workers);
    targets.push(core);
    const front = (id: 'gateway' | 'forwarder') => ({ workers, profileDir: profiles?.get(id) });
    const gateway = fronts.includes('gateway')
      ? await gatewayTarget(core, dataset, await prepareGateway(options.databaseUrl), front('gateway'))
      : undefined;
    if (gateway) targets.push(gateway);
    // The forwarder's answers are checked against the gateway's, when it runs.
    if (fronts.includes('forwarder')) targets.push(await forwarderTarget(core, front('forwarder'), gateway));
    notes.push(
      `the ${fronts.join(' and the ')} and their core each ran ${workers} process(es) on this machine, beside PostgreSQL and the load generator`,
    );
  }
  const [lender] = coregates.filter((target): target is Target => target !== undefined);
  if (!lender) {
    if (selection.targets.some((id) => id === 'prism' || id === 'ceiling'))
      notes.push('Prism and the ceiling need a coregate target (pg or pglite)');
    return targets;
  }
  if (selection.targets.includes('prism')) targets.push(prismTarget(await startPrism(lender.server), lender));
  if (selection.targets.includes('ceiling')) {
    targets.push(ceilingTarget(await startCeiling(workers), lender, answerSizes));
    notes.push(`the ceiling ran ${workers} process(es), as coregate/PostgreSQL; coregate/PGlite and Prism run 1`);
  }
  return targets;
}

function summary(measurement: Measurement): string {
  if (!measurement.ok) return `FAILED\n${measurement.reason}`;
  const { requestsPerSecond, p50Ms, p99Ms, non2xx, timeouts, socketErrors, machineBusyCores } = measurement.result;
  const errors = non2xx + timeouts + socketErrors;
  const busy = machineBusyCores === undefined ? '' : `, machine busy ${machineBusyCores.toFixed(1)} cores`;
  return `${requestsPerSecond.toFixed(0)} req/s, p50 ${p50Ms} ms, p99 ${p99Ms} ms${errors ? `, ${errors} errors` : ''}${busy}`;
}

/** A measurement to take: a scenario on a target (or its id alone), whole or one of its two halves. */
interface Run<T extends { readonly id: string } = Target> {
  readonly scenario: Scenario;
  readonly target: T;
  readonly half?: 1 | 2;
}

/** Fronts of the core measured side by side: the gateway's cost is judged against the forwarder's. */
const PAIRED_FRONTS = ['gateway', 'forwarder'] as const;

/**
 * Each scenario on each target it is measured on, scenario by scenario. A SOAP twin and its JSON scenario
 * are measured on a target together, in halves and in the order JSON, SOAP, SOAP, JSON: the machine's
 * speed drifts within a run (a shared VM), and the ratio of the two then meets the same drift on both
 * sides; measured one after the other, a drift moved it by a third. The gateway and the forwarder are
 * measured on a scenario together the same way (gateway, forwarder, forwarder, gateway).
 */
function measurementOrder<T extends { readonly id: string }>(
  targets: readonly T[],
  scenarios: readonly Scenario[],
): Run<T>[] {
  const order: Run<T>[] = [];
  const done = new Set<string>();
  const measures = (scenario: Scenario, target: T) =>
    !done.has(`${scenario.name}|${target.id}`) && measuredOn(scenario, target.id);
  const add = (...runs: Run<T>[]) => {
    for (const run of runs) {
      done.add(`${run.scenario.name}|${run.target.id}`);
      order.push(run);
    }
  };
  for (const scenario of scenarios) {
    const twin = scenarios.find((other) => other.name === `${SOAP_PREFIX}${scenario.name}`);
    for (const target of targets) {
      if (!measures(scenario, target)) continue;
      const partner =
        target.id === PAIRED_FRONTS[0]
          ? targets.find((other) => other.id === PAIRED_FRONTS[1] && measures(scenario, other))
          : undefined;
      if (twin && measures(twin, target)) {
        add(
          { scenario, target, half: 1 },
          { scenario: twin, target, half: 1 },
          { scenario: twin, target, half: 2 },
          { scenario, target, half: 2 },
        );
      } else if (partner) {
        add(
          { scenario, target, half: 1 },
          { scenario, target: partner, half: 1 },
          { scenario, target: partner, half: 2 },
          { scenario, target, half: 2 },
        );
      } else add({ scenario, target });
    }
  }
  return order;
}

/** Measures every scenario on every target; coregate's answer sizes size the ceiling's answers. */
async function measureAll(
  targets: readonly Target[],
  scenarios: readonly Scenario[],
  settings: MeasurementSettings,
  answerSizes: Map<string, number>,
): Promise<Measurement[]> {
  const measurements: Measurement[] = [];
  const runs = measurementOrder(targets, scenarios);
  const wholes = runs.filter((run) => run.half !== 2).length;
  // A half lasts half the measurement, in whole seconds (autocannon's rate is a mean of seconds).
  const halfSettings = { ...settings, seconds: Math.ceil(settings.seconds / 2) };
  const firstHalves = new Map<string, Measurement>();
  const report = (measurement: Measurement, target: Target) => {
    process.stdout.write(`[${measurements.length + 1}/${wholes}] ${measurement.scenario} on ${target.label}: `);
    console.log(summary(measurement));
    measurements.push(measurement);
    if (measurement.ok && (target.id === 'pg' || target.id === 'pglite')) {
      for (const [operation, bytes] of Object.entries(measurement.answerBytes)) {
        if (!answerSizes.has(operation)) answerSizes.set(operation, bytes);
      }
    }
  };
  // A twin's second half ends before its JSON scenario's; it is reported after it. Of paired fronts, the
  // forwarder's second half ends first, and is reported first.
  let twinDone: Measurement | undefined;
  for (const { scenario, target, half } of runs) {
    const key = `${scenario.name}|${target.id}`;
    const measurement = await measureScenario(target, scenario, half ? halfSettings : settings);
    if (half === 1) firstHalves.set(key, measurement);
    else if (half === undefined) report(measurement, target);
    else if (scenario.name.startsWith(SOAP_PREFIX)) twinDone = combined(firstHalves.get(key)!, measurement);
    else {
      report(combined(firstHalves.get(key)!, measurement), target);
      if (twinDone) report(twinDone, target);
      twinDone = undefined;
    }
  }
  return measurements;
}

/** The scale checks on PostgreSQL: lookups at N vs 10,000 accounts, then page depth. */
async function runScaleChecks(
  pg: Target,
  datasets: Datasets,
  workers: number,
  settings: MeasurementSettings,
): Promise<ScaleCheck[]> {
  const { postgres, small } = datasets;
  if (!postgres || !small) return [];
  console.log('Scale checks');
  const smallTarget = small === postgres ? pg : await coregateOn('pg', small, workers);
  let lookup: ScaleCheck;
  try {
    lookup = await lookupScaleCheck(pg, { ...smallTarget, label: `${smallTarget.label} ${SMALL_ACCOUNTS}` }, settings);
  } finally {
    if (smallTarget !== pg) await smallTarget.server.stop();
  }
  const paging = await pagingScaleCheck(pg, postgres.credentials.adminPassword, settings);
  return [lookup, paging];
}

function describeDataset(prepared: Prepared | undefined) {
  if (!prepared) return undefined;
  const { name, accounts, seed, seeding, reused } = prepared.dataset;
  return { name, accounts, seed, reused, seeding };
}

interface Outcome {
  readonly startedAt: Date;
  /** The machine's load averages (1, 5, 15 min) when the run started: other work shares its cores. */
  readonly loadAtStart: readonly number[];
  readonly options: BenchOptions;
  readonly postgres: string;
  readonly datasets: Datasets;
  readonly measurements: readonly Measurement[];
  readonly scaleChecks: readonly ScaleCheck[];
  readonly notes: readonly string[];
}

/** Prints the table, the scale checks and the notes, and writes the results file. */
function report(outcome: Outcome): void {
  const { startedAt, loadAtStart, options, datasets, measurements, scaleChecks, notes } = outcome;
  const loadAtEnd = loadavg();
  if (measurements.length > 0) {
    console.log(`\n${resultsTable(measurements)}`);
    console.log(
      'errors: non-2xx / timeouts / socket errors; /ceiling, /Prism, /hand-written: coregate req/s over theirs',
    );
  }
  if (scaleChecks.length > 0) console.log(`\n${scaleCheckLines(scaleChecks)}`);
  const gateway = gatewayLines(measurements);
  if (gateway) console.log(`\n${gateway}`);
  const cost = gatewayCostLines(gatewayCost(measurements));
  if (cost) console.log(`\n${cost}`);
  for (const note of notes) console.log(`note: ${note}`);
  const loads = (load: readonly number[]) => load.map((value) => value.toFixed(2)).join(' ');
  console.log(`load average (1, 5, 15 min): ${loads(loadAtStart)} at the start, ${loads(loadAtEnd)} at the end`);
  const file = writeResults(startedAt, {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    machine: machineFacts(outcome.postgres),
    loadAverage: { atStart: loadAtStart, atEnd: loadAtEnd },
    settings: {
      accounts: options.accounts,
      seed: options.seed,
      duration: options.duration,
      connections: options.connections,
      rate: options.rate,
      workers: options.workers,
      only: options.only,
      reuse: options.reuse,
      profile: options.profile,
      passedSettings: passedSettings(),
    },
    datasets: {
      postgres: describeDataset(datasets.postgres),
      pglite: describeDataset(datasets.pglite),
      postgresSmall: describeDataset(datasets.small),
    },
    notes,
    measurements,
    scaleChecks,
  });
  console.log(`\nResults written to ${file}`);
}

/**
 * Where a profiled front's CPU went while it was measured: over all its scenarios, then each scenario apart
 * (its windows are noted in the profile directory, for `bench/cpu-profile.ts` to summarize again).
 */
function printProfiles(id: string, directory: string, measurements: readonly Measurement[]): void {
  if (!existsSync(directory)) return;
  const windows: Record<string, Windows> = {};
  for (const m of measurements) if (m.ok && m.target === id) windows[m.scenario] = m.result.windowsUs ?? [];
  writeWindows(directory, windows);
  console.log(
    `\n${profileLines(`CPU profile of the ${id}, all scenarios (${directory})`, summarizeProfiles(directory, Object.values(windows).flat()))}`,
  );
  for (const [scenario, spans] of Object.entries(windows)) {
    console.log(`\n${profileLines(`CPU profile of the ${id}, ${scenario}`, summarizeProfiles(directory, spans), 15)}`);
  }
}

/** Where `--profile` has the gateway's and the forwarder's processes write their CPU profiles. */
function profileDirectories(startedAt: Date): Map<'gateway' | 'forwarder', string> {
  const root = join(BENCH_DIR, '.data', 'profiles', startedAt.toISOString().replace(/[:.]/g, '-'));
  return new Map([
    ['gateway', join(root, 'gateway')],
    ['forwarder', join(root, 'forwarder')],
  ]);
}

async function run(options: BenchOptions): Promise<void> {
  const startedAt = new Date();
  const loadAtStart = loadavg();
  const selection = select(options);
  const settings = {
    seconds: options.duration,
    connections: options.connections,
    ...(options.rate === undefined ? {} : { rate: options.rate }),
  };
  const notes = [
    "RSS is the server's whole process tree (with cluster workers); PostgreSQL's processes are not counted",
  ];
  const measured = [
    ...new Set(
      selection.targets.flatMap((id) =>
        id === 'gateway' || id === 'forwarder'
          ? [id, 'core']
          : id === 'handwritten'
            ? ['handwritten-pg', ...(options.skipPglite ? [] : ['handwritten-pglite'])]
            : [id],
      ),
    ),
  ];
  // The order measureAll takes, halves (each with its own warm-up) included, then the scale checks.
  const whole = options.duration + warmUpSeconds(options.duration);
  const half = Math.ceil(options.duration / 2);
  const seconds =
    measurementOrder(
      measured.map((id) => ({ id })),
      selection.scenarios,
    ).reduce((sum, run) => sum + (run.half ? half + warmUpSeconds(half) : whole), 0) +
    (selection.scaleChecks ? SCALE_MEASUREMENTS * whole : 0);
  const minutes = seconds / 60;
  console.log(
    `Targets: ${selection.targets.join(', ') || 'none'}; ${selection.scenarios.length} scenarios` +
      `${selection.scaleChecks ? ' and the scale checks' : ''}; measuring takes about ${minutes.toFixed(1)} min`,
  );
  const postgres = await postgresVersion(options.databaseUrl).catch((error: Error) => `unreachable: ${error.message}`);
  await buildServers();
  const datasets = await prepareDatasets(options, selection, notes);
  const answerSizes = new Map<string, number>();
  const profiles = options.profile ? profileDirectories(startedAt) : undefined;
  const targets = await startTargets(selection, datasets, options, answerSizes, notes, profiles);
  const measurements = await measureAll(targets, selection.scenarios, settings, answerSizes);
  const pg = targets.find((target) => target.id === 'pg');
  const scaleChecks = selection.scaleChecks && pg ? await runScaleChecks(pg, datasets, options.workers, settings) : [];
  // The profiled processes write their profiles as they exit.
  await stopAllChildren();
  report({ startedAt, loadAtStart, options, postgres, datasets, measurements, scaleChecks, notes });
  for (const [id, directory] of profiles ?? []) printProfiles(id, directory, measurements);
}

async function main(argv: readonly string[]): Promise<number> {
  let options;
  try {
    options = parseOptions(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (!options) {
    console.log(USAGE);
    return 0;
  }
  installCleanup(() => process.exit(130));
  try {
    await run(options);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n\n${USAGE}`);
      return 2;
    }
    console.error(`The benchmark failed: ${(error as Error).stack ?? String(error)}`);
    return 1;
  } finally {
    await stopAllChildren();
    await dropRunCopies();
  }
}

process.exitCode = await main(process.argv.slice(2));
