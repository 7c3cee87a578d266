/**
 * Periodic housekeeping of the database while the app runs: idempotency keys older than
 * `COREGATE_IDEMPOTENCY_RETENTION_HOURS` are swept once at start and then every hour. The timer does not
 * keep the process alive and stops when the app closes. A failed sweep (the database down) never throws:
 * the first failure in a row is logged, and the sweep is tried again at the next interval.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { Db } from '../database/database.js';
import { idempotencyKeys } from '../store/idempotency.js';

export interface MaintenanceOptions {
  readonly db: Db;
  readonly config: Pick<Config, 'idempotencyRetentionHours'>;
  /** Time between sweeps; default one hour. */
  readonly intervalMs?: number;
}

const SWEEP_INTERVAL_MS = 60 * 60 * 1_000;

/**
 * Starts the sweeps on `app` (one now, then one per interval) and stops them in its `onClose`.
 *
 * @example
 * registerMaintenance(app, { db, config });
 */
export function registerMaintenance(app: FastifyInstance, options: MaintenanceOptions): void {
  const { db, config } = options;
  let failing = false;
  let running: Promise<void> | undefined;
  const sweep = async () => {
    try {
      const swept = await idempotencyKeys.sweep(db, config.idempotencyRetentionHours);
      if (failing) app.log.info('idempotency keys can be swept again');
      failing = false;
      if (swept > 0) app.log.info({ swept }, 'expired idempotency keys swept');
    } catch (error) {
      if (!failing)
        app.log.warn({ err: error }, 'expired idempotency keys could not be swept; trying again at the next interval');
      failing = true;
    }
  };
  const start = () => {
    // One sweep at a time: a slow one is not overlapped by the next.
    running ??= sweep().finally(() => (running = undefined));
  };
  start();
  const timer = setInterval(start, options.intervalMs ?? SWEEP_INTERVAL_MS);
  timer.unref();
  app.addHook('onClose', async () => {
    clearInterval(timer);
    await running;
  });
}
