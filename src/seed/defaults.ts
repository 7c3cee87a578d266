/**
 * The demo dataset's defaults and when seeding starts encoder threads: apart from the loader (load.ts), so
 * the command line can show them in its usage without loading the seeder.
 */
import { availableParallelism } from 'node:os';

/** The seed of the demo dataset (the gateway's path segment, 627). */
export const DEFAULT_SEED = 627;
/** How many accounts the first run of `npm start` seeds. */
export const DEFAULT_DEMO_ACCOUNTS = 1000;
/** Below this many accounts the seeding thread encodes alone: starting workers would cost more than it saves. */
export const PARALLEL_FROM_ACCOUNTS = 20_000;

/**
 * Encoders for the chunks: one per CPU, at most 8. Generating and encoding an account costs about as much
 * CPU as PostgreSQL's COPY of it, and the encoders wait whenever the database falls behind, so they
 * share the cores with it.
 */
export function defaultEncoderWorkers(accounts: number): number {
  if (accounts < PARALLEL_FROM_ACCOUNTS) return 0;
  return Math.min(8, availableParallelism());
}
