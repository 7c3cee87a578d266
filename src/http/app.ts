/**
 * Builds the HTTP service: every operation of the registry as a POST route with its schemas, the
 * envelope checks (bearer token, then body credentials), the ops endpoints and the API reference.
 */
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { Type } from 'typebox';
import type { Config } from '../config.js';
import { envelopeProperties, type CredentialsBody } from '../operations/envelope.js';
import { OPERATIONS, SHARED_SCHEMAS } from '../operations/index.js';
import { operationPath, type AnyOperation } from '../operations/types.js';
import { Authenticator, type BearerIdentity, type CredentialIdentity } from '../security/authenticator.js';
import type { Secrets } from '../security/secrets.js';
import type { Db } from '../store/database.js';
import { errorHandler, sendProblem } from './error-handler.js';
import { registerJsonBodyParser } from './json-body.js';
import { openApiOptions } from './openapi.js';
import { registerOpsRoutes } from './ops-routes.js';
import { forbidden, Problem } from './problems.js';
import { runWrite } from './writes.js';

declare module 'fastify' {
  interface FastifyRequest {
    bearer?: BearerIdentity;
  }
  interface FastifyContextConfig {
    operation?: AnyOperation;
  }
}

export interface AppOptions {
  readonly db: Db;
  readonly secrets: Secrets;
  readonly config: Config;
  /** Fastify logger options; false in tests. */
  readonly logger?: FastifyServerOptions['logger'];
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Paths of the redacted log fields: credentials and the bearer token never reach the log. */
export const LOG_REDACT = ['req.headers.authorization', 'req.body.Credentials', '*.Password', '*.CardNumber', '*.SSN'];

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { db, secrets, config } = options;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: config.bodyLimit,
    requestTimeout: 30_000,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    ajv: {
      // Strict types (a number is never coerced into a string identifier), every error reported, and
      // nothing silently removed: unknown properties are rejected by the schemas.
      customOptions: {
        allErrors: true,
        allowUnionTypes: true,
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
      },
    },
  });

  const authenticator = new Authenticator(db, secrets, config);
  const allowedMethods = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = allowedMethods.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    allowedMethods.set(route.url, methods);
  });

  registerJsonBodyParser(app);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const methods = allowedMethods.get(path);
    if (methods) {
      const allow = [...methods].sort().join(', ');
      return sendProblem(
        reply,
        new Problem(405, 'METHOD_NOT_ALLOWED', `${request.method} is not allowed here; use ${allow}`, undefined, {
          allow,
        }),
        request,
      );
    }
    return sendProblem(reply, new Problem(404, 'NOT_FOUND', `No resource at ${path}`), request);
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    if (request.routeOptions.config.operation) reply.header('cache-control', 'no-store');
  });

  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  await app.register(swagger, openApiOptions());
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true, tryItOutEnabled: true } });

  // Envelope, step 1: a live bearer token, before the body is even parsed (401).
  app.addHook('onRequest', async (request) => {
    const operation = request.routeOptions.config.operation;
    if (!operation) return;
    request.bearer = await authenticator.authenticateBearer(request.headers.authorization);
    if (!request.bearer.scopes.includes(operation.scope)) {
      throw forbidden(`The token lacks the ${operation.scope} scope`);
    }
  });

  for (const operation of OPERATIONS) {
    app.post(
      operationPath(operation),
      {
        config: { operation },
        schema: {
          operationId: `${operation.family === 'P1' ? '' : 'v2022_01_'}${operation.name}`,
          summary: operation.summary,
          tags: [operation.service],
          security: [{ bearerAuth: [] }],
          body: Type.Object({ ...envelopeProperties, ...operation.request }, { additionalProperties: false }),
          response: {
            200: operation.response,
            '4xx': Type.Ref('Problem'),
            '5xx': Type.Ref('Problem'),
          },
        },
      },
      async (request, reply) => {
        // Envelope, step 2: every credential object in the body verifies (403).
        const body = request.body as { Credentials: CredentialsBody } & Record<string, unknown>;
        const caller: CredentialIdentity = await authenticator.verifyCredentials(body.Credentials, operation.credentials);
        if (!operation.writes) return operation.handle({ db, secrets, config, caller }, body);
        return runWrite(
          {
            db,
            path: operationPath(operation),
            tokenName: request.bearer!.tokenName,
            idempotencyKeyHeader: request.headers['idempotency-key'],
            body,
            reply,
          },
          (trx) => operation.handle({ db: trx, secrets, config, caller }, body),
        );
      },
    );
  }

  registerOpsRoutes(app, { db, operations: OPERATIONS });
  return app;
}
