/**
 * The benchmark's command-line options (`npm run bench -- --help`).
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { DEFAULT_SEED } from '../src/seed/load.js';

/** The servers a scenario is measured against, as `--only` names them. */
export const TARGETS = ['pg', 'pglite', 'prism', 'ceiling', 'handwritten', 'gateway', 'forwarder'] as const;
/** A target as `--only` names it. */
export type TargetWord = (typeof TARGETS)[number];

/**
 * A server measured: `handwritten` is one hand-written anchor per database; `core` is the SymXchange core
 * the gateway and the hand-written forwarder call, measured with either.
 */
export type TargetId = Exclude<TargetWord, 'handwritten'> | 'handwritten-pg' | 'handwritten-pglite' | 'core';

/** The `--only` word that selects the scale checks. */
export const SCALE_CHECKS = 'scale';

export interface BenchOptions {
  readonly accounts: number;
  readonly seed: number;
  /** Seconds of each measurement. */
  readonly duration: number;
  readonly connections: number;
  /** Requests per second over all connections of a run at `connections`, when paced (`--rate`). */
  readonly rate?: number;
  /** coregate processes serving PostgreSQL. */
  readonly workers: number;
  /** Lower-case words of `--only`; empty means everything. */
  readonly only: readonly string[];
  readonly skipPglite: boolean;
  readonly skipPrism: boolean;
  readonly reuse: boolean;
  /** Profile the gateway and the forwarder (`node --cpu-prof`) and summarize where their CPU goes. */
  readonly profile: boolean;
  /** Admin connection; the bench creates its own databases beside the one it names. */
  readonly databaseUrl: string;
}

export const USAGE = `Usage: npm run bench -- [options]

Seeds PostgreSQL and PGlite datasets (once: each run measures a copy), starts coregate (PostgreSQL and
PGlite), Prism on coregate's OpenAPI document, a bare Fastify ceiling server, a hand-written findBySSN and
getCollateralSelectFields service per database, coregate in gateway mode in front of a coregate
SymXchange core on the PostgreSQL dataset and a hand-written forwarder in front of the same core;
measures every scenario with autocannon, checks that lookups and paging scale and what the gateway adds
and costs against the forwarder, prints a table and writes bench/results/<timestamp>.json.
COREGATE_* variables of the bench's environment reach every coregate it starts (but those naming the
data, the core and the SOAP authentication, which the bench sets).

  --accounts N        accounts in the PostgreSQL dataset (default 100000; PGlite gets at most 100000)
  --seed S            generator seed (default ${DEFAULT_SEED})
  --duration S        seconds per measurement (default 10), after a 1-2 s warm-up
  --connections C     concurrent connections (default 64)
  --rate R            pace the runs at C connections to R requests/s in all (autocannon's overallRate), so
                      that targets compare at the same load: CPU per request at equal rates; runs at one
                      connection stay unpaced (default: as fast as each target answers)
  --workers W         coregate processes on PostgreSQL (default: available parallelism)
  --only a,b          only these targets (${TARGETS.join(', ')}), scenarios (name or name prefix,
                      e.g. findBy, mix) and/or "${SCALE_CHECKS}" for the scale checks
  --skip-pglite       do not seed or measure PGlite
  --skip-prism        do not measure Prism
  --reuse             reuse datasets already seeded with the same accounts and seed
  --profile           run the gateway and the forwarder under node --cpu-prof and print where their CPU
                      goes (profiles in bench/.data/profiles/<timestamp>/; the profiler costs CPU, so
                      measure and profile in separate runs)
  --database-url URL  admin connection to PostgreSQL (default postgres://postgres@127.0.0.1:5432/test);
                      the bench creates and uses databases coregate_bench_<accounts> beside it
  --help              this text`;

export class UsageError extends Error {}

function positiveInteger(raw: string | undefined, name: string, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^[0-9]+$/.test(raw) || !Number.isSafeInteger(value) || value < 1) {
    throw new UsageError(`--${name} must be a positive integer, got "${raw}"`);
  }
  return value;
}

/** Parses argv; returns undefined when --help was asked for. Throws UsageError on a bad option. */
export function parseOptions(argv: readonly string[]): BenchOptions | undefined {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      options: {
        accounts: { type: 'string' },
        seed: { type: 'string' },
        duration: { type: 'string' },
        connections: { type: 'string' },
        rate: { type: 'string' },
        workers: { type: 'string' },
        only: { type: 'string' },
        'skip-pglite': { type: 'boolean' },
        'skip-prism': { type: 'boolean' },
        reuse: { type: 'boolean' },
        profile: { type: 'boolean' },
        'database-url': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (values.help) return undefined;
  return {
    accounts: positiveInteger(values.accounts, 'accounts', 100_000),
    seed: positiveInteger(values.seed, 'seed', DEFAULT_SEED),
    duration: positiveInteger(values.duration, 'duration', 10),
    connections: positiveInteger(values.connections, 'connections', 64),
    ...(values.rate === undefined ? {} : { rate: positiveInteger(values.rate, 'rate', 1) }),
    workers: positiveInteger(values.workers, 'workers', availableParallelism()),
    only: (values.only ?? '')
      .split(',')
      .map((word) => word.trim().toLowerCase())
      .filter(Boolean),
    skipPglite: values['skip-pglite'] ?? false,
    skipPrism: values['skip-prism'] ?? false,
    reuse: values.reuse ?? false,
    profile: values.profile ?? false,
    databaseUrl: values['database-url'] ?? 'postgres://postgres@127.0.0.1:5432/test',
  };
}
