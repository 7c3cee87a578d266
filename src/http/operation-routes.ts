/**
 * Every operation of the registry as a JSON POST route: the bearer token and rate limit before the body
 * is parsed, the body validated by the route's schema, then the gateway's policy and the answer
 * (operation-pipeline.ts).
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { operationPath, type AnyOperation, type RequestBody } from '../operations/types.js';
import type { Authenticator } from '../security/authenticator.js';
import type { OperationPipeline } from './operation-pipeline.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    operation?: AnyOperation;
  }
}

export interface OperationRoutesOptions {
  readonly operations: readonly AnyOperation[];
  readonly authenticator: Authenticator;
  readonly pipeline: OperationPipeline;
}

export function registerOperationRoutes(app: FastifyInstance, options: OperationRoutesOptions): void {
  const { authenticator, pipeline } = options;

  app.addHook('onRequest', async (request, reply) => {
    const operation = request.routeOptions.config.operation;
    if (!operation) return;
    request.operation = operation;
    request.bearer = await authenticator.authenticateBearer(request.headers.authorization);
    await pipeline.admit(request, reply, operation);
  });

  for (const operation of options.operations) {
    const accepted = pipeline.acceptedCredentials(operation);
    app.post<{ Body: RequestBody<never> }>(
      operationPath(operation),
      {
        config: { operation },
        schema: {
          operationId: `${operation.family === 'P1' ? '' : 'v2022_01_'}${operation.name}`,
          summary: operation.summary,
          description: `Scope: ${operation.scope ?? 'any live token'}. Credentials: ${accepted.join(', ')}.`,
          tags: [operation.service],
          security: [{ bearerAuth: [] }],
          body: pipeline.bodySchema(operation),
          response: {
            200: operation.response,
            '4xx': Type.Ref('Problem'),
            '5xx': Type.Ref('Problem'),
          },
        },
      },
      (request, reply) => pipeline.answer(request, reply, operation, request.body),
    );
  }
}
