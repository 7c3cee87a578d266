/**
 * Operational endpoints beside the API: liveness, readiness and the operation list (the OpenAPI document is
 * api-reference.ts's).
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AnyOperation } from '../operations/types.js';
import { operationPath } from '../operations/types.js';
import { ping, type Db } from '../database/database.js';
import { Problem } from '../contract/problems.js';
import { databaseProblem } from './error-handler.js';
import type { Core } from '../core/index.js';

export interface OpsRoutesOptions {
  readonly db: Db;
  /** What answers; `/ready` reports it (in gateway mode, each core's circuit). */
  readonly core: Core;
  readonly operations: readonly AnyOperation[];
  /** Where each operation is on the SymXchange SOAP face, when it is there. */
  readonly soapOf: (operation: AnyOperation) => { readonly endpoint: string; readonly action: string } | undefined;
  /** Whether the instance is shutting down: it is then not ready, from the signal on. */
  readonly stopping?: () => boolean;
}

export function registerOpsRoutes(app: FastifyInstance, options: OpsRoutesOptions): void {
  const hide = { hide: true };
  const Status = Type.Object({ status: Type.String(), core: Type.Optional(Type.String()) });

  app.get('/health', { schema: { ...hide, response: { 200: Status } } }, async () => ({ status: 'ok' }));

  // Ready when the database answers and (gateway mode) some core's circuit is not open.
  app.get('/ready', { schema: { ...hide, response: { 200: Status } } }, async () => {
    if (options.stopping?.())
      throw new Problem(503, 'UNAVAILABLE', 'This instance is shutting down', undefined, { 'retry-after': '5' });
    try {
      await ping(options.db);
    } catch (error) {
      throw databaseProblem(error);
    }
    const core = options.core.readiness();
    if (!core.ready) {
      throw new Problem(503, 'CORE_UNAVAILABLE', `No core answers: ${core.detail}`, undefined, { 'retry-after': '5' });
    }
    return { status: 'ready', core: core.detail };
  });

  const operationList = options.operations.map((operation) => ({
    name: operation.name,
    family: operation.family,
    service: operation.service,
    method: 'POST',
    path: operationPath(operation),
    scope: operation.scope,
    summary: operation.summary,
    soap: options.soapOf(operation),
  }));
  app.get('/operations', { schema: hide }, async () => ({ operations: operationList }));
}
