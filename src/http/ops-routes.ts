/**
 * Operational endpoints beside the API: liveness, readiness, the operation list and the OpenAPI document.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AnyOperation } from '../operations/types.js';
import { operationPath } from '../operations/types.js';
import { ping, type Db } from '../store/database.js';
import { databaseUnavailable } from '../contract/problems.js';

export interface OpsRoutesOptions {
  readonly db: Db;
  readonly operations: readonly AnyOperation[];
  /** Where each operation is on the SymXchange SOAP face, when it is there. */
  readonly soapOf: (operation: AnyOperation) => { readonly endpoint: string; readonly action: string } | undefined;
}

export function registerOpsRoutes(app: FastifyInstance, options: OpsRoutesOptions): void {
  const hide = { hide: true };
  const Status = Type.Object({ status: Type.String() });

  app.get('/health', { schema: { ...hide, response: { 200: Status } } }, async () => ({ status: 'ok' }));

  app.get('/ready', { schema: { ...hide, response: { 200: Status } } }, async () => {
    try {
      await ping(options.db);
    } catch {
      throw databaseUnavailable();
    }
    return { status: 'ready' };
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

  app.get('/openapi.json', { schema: hide }, async () => app.swagger());
}
