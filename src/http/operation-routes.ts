/**
 * Every operation of the registry as a JSON POST route: the bearer token and rate limit before the body
 * is parsed, the body validated by the route's schema, then the gateway's policy and the answer
 * (operation-pipeline.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { DEFAULT_SYM } from '../config.js';
import { operationPath, type AnyOperation, type RequestBody } from '../operations/types.js';
import type { Authenticator } from '../security/authenticator.js';
import { screenRequests } from './connections.js';
import type { OperationPipeline } from './operation-pipeline.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    operation?: AnyOperation;
    /** The Sym of an operation's route. */
    sym?: number;
  }
}

export interface OperationRoutesOptions {
  readonly operations: readonly AnyOperation[];
  /** The Syms the core answers for: each has every operation under `/gw/<sym>/` (the spec's 627 is documented). */
  readonly syms: readonly number[];
  readonly authenticator: Authenticator;
  readonly pipeline: OperationPipeline;
}

export function registerOperationRoutes(app: FastifyInstance, options: OperationRoutesOptions): void {
  const { authenticator, pipeline } = options;

  // Every request's one onRequest hook (connections.ts): screened, then, for an operation, admitted.
  screenRequests(app, (request, reply) => {
    const operation = request.routeOptions.config.operation;
    return operation ? admitOperation(request, reply, operation) : undefined;
  });
  async function admitOperation(request: FastifyRequest, reply: FastifyReply, operation: AnyOperation) {
    request.operation = operation;
    request.sym = request.routeOptions.config.sym;
    request.bearer = await authenticator.authenticateBearer(request.headers.authorization);
    await pipeline.admit(request, reply, operation);
  }

  for (const sym of options.syms)
    for (const operation of options.operations) {
      app.post<{ Body: RequestBody<never> }>(
        operationPath(operation, sym),
        {
          config: { operation, sym },
          schema: {
            // The reference documents the spec's Sym; a gateway's other Syms take the same operations.
            ...(sym === DEFAULT_SYM ? {} : { hide: true }),
            operationId: `${operation.family === 'P1' ? '' : 'v2022_01_'}${operation.name}`,
            summary: operation.summary,
            description: `Scope: ${operation.scope ?? 'any live token'}.`,
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
