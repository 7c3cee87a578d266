/**
 * Periodic housekeeping of the database while the app runs, once at start and then every hour: idempotency
 * keys older than `COREGATE_IDEMPOTENCY_RETENTION_HOURS` are swept, and the audit trail's partitions are
 * created ahead and retired after `COREGATE_AUDIT_RETENTION_DAYS` (store/audit-retention.ts). The timer does
 * not keep the process alive and stops when the app closes. A failed task (the database down) never throws:
 * its first failure in a row is logged, and it is tried again at the next interval.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { DatabaseKind, Db } from '../database/database.js';
import { maintainAuditTrail } from '../store/audit-retention.js';
import { idempotencyKeys } from '../store/idempotency.js';

export interface MaintenanceOptions {
  readonly db: Db;
  readonly databaseKind: DatabaseKind;
  readonly config: Pick<Config, 'idempotencyRetentionHours' | 'auditRetentionDays' | 'auditExportDir'>;
  /** Time between rounds; default one hour. */
  readonly intervalMs?: number;
}

const SWEEP_INTERVAL_MS = 60 * 60 * 1_000;

/** A task of the round, which logs its first failure in a row and its recovery. */
function task(log: FastifyBaseLogger, what: string, run: () => Promise<void>): () => Promise<void> {
  let failing = false;
  return async () => {
    try {
      await run();
      if (failing) log.info(`${what}: working again`);
      failing = false;
    } catch (error) {
      if (!failing) log.warn({ err: error }, `${what} failed; trying again at the next interval`);
      failing = true;
    }
  };
}

/**
 * Starts the rounds on `app` (one now, then one per interval) and stops them in its `onClose`.
 *
 * @example
 * registerMaintenance(app, { db, databaseKind: 'postgres', config });
 */
export function registerMaintenance(app: FastifyInstance, options: MaintenanceOptions): void {
  const { db, databaseKind, config } = options;
  const tasks = [
    task(app.log, 'sweeping expired idempotency keys', async () => {
      const swept = await idempotencyKeys.sweep(db, config.idempotencyRetentionHours);
      if (swept > 0) app.log.info({ swept }, 'expired idempotency keys swept');
    }),
    task(app.log, "the audit trail's upkeep", async () => {
      const { created, retired } = await maintainAuditTrail(
        { db, kind: databaseKind },
        { retentionDays: config.auditRetentionDays, exportDir: config.auditExportDir },
      );
      if (created.length > 0) app.log.info({ partitions: created }, 'audit trail partitions created');
      for (const { name, events, file } of retired) {
        app.log.info(
          { partition: name, events, ...(file ? { file } : {}) },
          `audit events older than ${config.auditRetentionDays} days retired${file ? ' after their export' : ''}`,
        );
      }
    }),
  ];
  let running: Promise<void> | undefined;
  const start = () => {
    // One round at a time: a slow one is not overlapped by the next.
    running ??= (async () => {
      for (const run of tasks) await run();
    })().finally(() => (running = undefined));
  };
  start();
  const timer = setInterval(start, options.intervalMs ?? SWEEP_INTERVAL_MS);
  timer.unref();
  app.addHook('onClose', async () => {
    clearInterval(timer);
    await running;
  });
}
