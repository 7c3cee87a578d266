/**
 * One gateway process and one forwarder process in front of one core process, on the PostgreSQL dataset:
 * what the benches that watch a process from outside measure (bench/syscalls.ts, bench/collections.ts,
 * bench/heap-in-flight.ts), each front with nothing but its own work in it.
 */
import { join } from 'node:path';
import { DEFAULT_SEED } from '../src/seed/load.js';
import { prepareGateway, preparePostgres } from './datasets.js';
import { SCENARIOS, type Scenario } from './scenarios.js';
import { buildServers, installCleanup, stopAllChildren } from './servers.js';
import { coreTarget, forwarderTarget, gatewayTarget, type CoreTarget, type Target } from './targets.js';

export interface OneProcessEach {
  readonly core: CoreTarget;
  readonly gateway: Target;
  readonly forwarder: Target;
  /** The gateway of another build, when `baselineEntry` named one. */
  readonly baseline?: Target;
}

/**
 * The front, its measured part bracketed by a SIGUSR2 to every process of its group as it starts and another
 * as it ends: what a preloaded watch (bench/gc-watch.mjs, bench/alloc-watch.mjs) opens and closes its window on.
 */
export function signalledAround(front: Target, name: string): Target {
  const signal = () => process.kill(-front.server.pid, 'SIGUSR2');
  return {
    ...front,
    watches: [
      {
        name,
        async start() {
          signal();
          return { stop: () => (signal(), 0) };
        },
      },
    ],
  };
}

/** The scenario of that name; an unknown name stops the bench. */
export function scenarioNamed(name: string): Scenario {
  const scenario = SCENARIOS.find((candidate) => candidate.name === name);
  if (!scenario) throw new Error(`no scenario named ${name}`);
  return scenario;
}

/**
 * Builds the servers, prepares the dataset of `accounts` accounts, starts the core, then the two fronts (and
 * another build's gateway) with `frontEnv` added to their environment (not the core's), and runs `use`; every process is stopped after it,
 * and on Ctrl-C.
 */
export async function withOneProcessEach<T>(
  options: {
    readonly databaseUrl: string;
    readonly accounts: number;
    readonly frontEnv?: NodeJS.ProcessEnv;
    /** Another build's `dist/coregate.js`: its gateway is started too, as `baseline`. */
    readonly baselineEntry?: string;
    /** Each front writes its CPU profile into `<profileDir>/<gateway|forwarder|baseline>` as it stops. */
    readonly profileDir?: string;
  },
  use: (targets: OneProcessEach) => Promise<T>,
): Promise<T> {
  installCleanup(() => process.exit(130));
  await buildServers();
  const dataset = await preparePostgres(options.databaseUrl, options.accounts, DEFAULT_SEED, true);
  try {
    const core = await coreTarget(dataset, dataset.credentials, 1);
    // A front's environment is taken from this process's as it starts.
    Object.assign(process.env, options.frontEnv);
    const gatewayDatabase = await prepareGateway(options.databaseUrl);
    const profiled = (name: string) => (options.profileDir ? { profileDir: join(options.profileDir, name) } : {});
    const gateway = await gatewayTarget(core, dataset, gatewayDatabase, { workers: 1, ...profiled('gateway') });
    const forwarder = await forwarderTarget(core, { workers: 1, ...profiled('forwarder') });
    const baseline = options.baselineEntry
      ? await gatewayTarget(core, dataset, gatewayDatabase, {
          workers: 1,
          ...profiled('baseline'),
          entry: options.baselineEntry,
          label: 'baseline gateway',
        })
      : undefined;
    return await use({ core, gateway, forwarder, ...(baseline ? { baseline } : {}) });
  } finally {
    await stopAllChildren();
  }
}
