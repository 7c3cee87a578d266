/**
 * Administrative endpoints of a sandbox: `POST /admin/reset` puts a demo store's records back to the
 * seeded demo dataset while the server runs, so that a test suite can start each run from a clean
 * sandbox. It needs a bearer token with the `store:reset` scope; the token and every other credential stay.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { forbidden, Problem } from '../contract/problems.js';
import type { Core } from '../core/index.js';
import type { Secrets } from '../crypto/secrets.js';
import { resetToDemo } from '../seed/reset.js';
import type { Authenticator } from '../security/authenticator.js';
import { demoDataset } from '../store/access.js';
import type { AuditLog } from '../store/audit.js';
import type { Db } from '../database/database.js';
import { StoreBusyError } from '../store/record-transfer.js';

export interface AdminRoutesOptions {
  readonly db: Db;
  readonly secrets: Secrets;
  readonly authenticator: Authenticator;
  /** What answers: a reset applies to coregate's own store only. */
  readonly core: Core;
  readonly audit: AuditLog;
}

const ResetAnswer = Type.Object({
  status: Type.Literal('reset'),
  dataset: Type.Object({ seed: Type.Integer(), accounts: Type.Integer() }),
  /** Records written, by record type. */
  records: Type.Record(Type.String(), Type.Integer()),
  elapsedMs: Type.Integer(),
});

/** Seconds a caller is told to wait when requests held the tables too long. */
const BUSY_RETRY_AFTER_SECONDS = 5;

export function registerAdminRoutes(app: FastifyInstance, options: AdminRoutesOptions): void {
  const { db, secrets, authenticator, core, audit } = options;

  app.post(
    '/admin/reset',
    {
      schema: { hide: true, response: { 200: ResetAnswer } },
      // Who reset the sandbox, and who tried, is in the audit trail like any operation.
      onResponse: async (request, reply) => {
        audit.record({
          requestId: request.id,
          tokenName: request.bearer?.tokenName ?? null,
          userNumber: null,
          memberAccount: null,
          operation: 'admin:reset',
          accountNumbers: [],
          collateralNumber: null,
          status: reply.statusCode,
          code: request.problemCode ?? null,
          coreLatencyMs: null,
          coreOutcome: null,
        });
      },
    },
    async (request) => {
      request.bearer = await authenticator.authenticateBearer(request.headers.authorization);
      if (!request.bearer.scopes.includes('store:reset')) throw forbidden('The token lacks the store:reset scope');
      if (core.kind !== 'store') {
        throw new Problem(
          501,
          'STORE_ONLY',
          "POST /admin/reset resets coregate's own store; in gateway mode the records are the core's",
        );
      }
      const dataset = await demoDataset.get(db);
      if (!dataset) {
        throw new Problem(
          409,
          'NOT_A_DEMO_DATASET',
          'The store does not hold a seeded demo dataset, so there is nothing to reset it to; `coregate reset --accounts N` makes it one',
        );
      }
      try {
        const { counts, elapsedMs } = await resetToDemo(db, secrets, dataset);
        request.log.info({ dataset, elapsedMs }, 'the store was reset to its demo dataset');
        return { status: 'reset' as const, dataset, records: counts, elapsedMs };
      } catch (error) {
        if (!(error instanceof StoreBusyError)) throw error;
        throw new Problem(503, 'UNAVAILABLE', error.message, undefined, {
          'retry-after': String(BUSY_RETRY_AFTER_SECONDS),
        });
      }
    },
  );
}
