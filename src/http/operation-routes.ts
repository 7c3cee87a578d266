/**
 * Every operation of the registry as a POST route, behind the envelope checks in this order:
 * bearer token (401) and rate limit (429) before the body is parsed, then the scope (403), the body
 * schema (400), the body credentials (403) and member confinement (403). Every call to an operation is
 * written to the audit trail with its outcome, denied ones included.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type TProperties, type TSchema } from 'typebox';
import type { Config } from '../config.js';
import { envelopeProperties, MEMBER_CREDENTIAL_KINDS, type CredentialKind } from '../contract/envelope.js';
import { responseChecker } from '../operations/response-check.js';
import { operationPath, type AnyOperation, type RequestBody } from '../operations/types.js';
import type { Authenticator, BearerIdentity, CredentialIdentity } from '../security/authenticator.js';
import type { RateLimiter } from '../security/rate-limit.js';
import type { Secrets } from '../crypto/secrets.js';
import { AuditLog, type AuditEvent } from '../store/audit.js';
import type { Db } from '../store/database.js';
import { forbidden, Problem } from '../contract/problems.js';
import { runWrite } from './writes.js';

declare module 'fastify' {
  interface FastifyRequest {
    bearer?: BearerIdentity;
    caller?: CredentialIdentity;
    /** Stable code of the problem answered, for the audit trail. */
    problemCode?: string;
    /** Accounts the request names or the operation found, and the collateral it reads, for the audit trail. */
    auditAccounts?: readonly string[];
    auditCollateral?: string;
    /** The call's audit event was committed in its write transaction; the response hook adds none. */
    auditedInTransaction?: boolean;
  }
  interface FastifyContextConfig {
    operation?: AnyOperation;
  }
}

export interface OperationRoutesOptions {
  readonly db: Db;
  readonly secrets: Secrets;
  readonly config: Config;
  readonly operations: readonly AnyOperation[];
  /** The schemas operations' requests and responses refer to. */
  readonly sharedSchemas: readonly TSchema[];
  readonly authenticator: Authenticator;
  readonly limiter: RateLimiter;
  readonly audit: AuditLog;
}

const MINUTE = 60;

/**
 * The credential kinds an operation accepts: the configured policy of its service, or its defaults.
 * Member-level kinds are dropped where the operation cannot confine a member to an account.
 */
export function acceptedCredentials(operation: AnyOperation, config: Config): readonly CredentialKind[] {
  const configured = operation.fixedCredentials ? undefined : config.credentialPolicy[operation.service];
  const kinds = (configured ?? operation.credentials) as readonly CredentialKind[];
  return operation.accountOf ? kinds : kinds.filter((kind) => !MEMBER_CREDENTIAL_KINDS.includes(kind));
}

function rateLimited(retryAfterSeconds: number): Problem {
  return new Problem(429, 'RATE_LIMITED', `Too many requests; retry in ${retryAfterSeconds} s`, undefined, {
    'retry-after': String(retryAfterSeconds),
  });
}

/** The audit event of a call to an operation, answered with `status` (and a problem `code` when it failed). */
function auditEvent(request: FastifyRequest, operation: AnyOperation, status: number, code: string | null): AuditEvent {
  return {
    requestId: request.id,
    tokenName: request.bearer?.tokenName ?? null,
    userNumber: request.caller?.userNumber ?? null,
    memberAccount: request.caller?.memberAccount ?? null,
    operation: `${operation.family}:${operation.name}`,
    accountNumbers: [...(request.auditAccounts ?? [])],
    collateralNumber: request.auditCollateral ?? null,
    status,
    code,
  };
}

export function registerOperationRoutes(app: FastifyInstance, options: OperationRoutesOptions): void {
  const { db, secrets, config, authenticator, limiter, audit } = options;
  const general = { limit: config.rateLimitPerMinute, windowSeconds: MINUTE };
  const findBy = { limit: config.findByRateLimitPerMinute, windowSeconds: MINUTE };
  const checkResponse = config.checkResponses ? responseChecker(options.sharedSchemas) : undefined;

  app.addHook('onRequest', async (request, reply) => {
    const operation = request.routeOptions.config.operation;
    if (!operation) return;
    request.bearer = await authenticator.authenticateBearer(request.headers.authorization);
    const { tokenName } = request.bearer;
    // A stricter budget for lookups, so a token cannot walk card or SSN space; both counted at once.
    const decisions = await Promise.all([
      limiter.hit(`token:${tokenName}`, general),
      ...(operation.service === 'findby' ? [limiter.hit(`findby:${tokenName}`, findBy)] : []),
    ]);
    const refused = decisions.find((d) => !d.allowed);
    if (refused) throw rateLimited(Math.max(1, refused.retryAfterSeconds));
    reply.header('ratelimit-remaining', String(Math.min(...decisions.map((d) => d.remaining))));
    if (operation.scope && !request.bearer.scopes.includes(operation.scope)) {
      throw forbidden(`The token lacks the ${operation.scope} scope`);
    }
  });

  app.addHook('onResponse', async (request, reply) => {
    const operation = request.routeOptions.config.operation;
    // A write's event was committed with the write itself (see runWrite).
    if (!operation || request.auditedInTransaction) return;
    audit.record(auditEvent(request, operation, reply.statusCode, request.problemCode ?? null));
  });

  for (const operation of options.operations) {
    const accepted = acceptedCredentials(operation, config);
    // The body is declared as every operation's request: the envelope, then what its own schema validated.
    app.post<{ Body: RequestBody<TProperties> }>(
      operationPath(operation),
      {
        config: { operation },
        schema: {
          operationId: `${operation.family === 'P1' ? '' : 'v2022_01_'}${operation.name}`,
          summary: operation.summary,
          description: `Scope: ${operation.scope ?? 'any live token'}. Credentials: ${accepted.join(', ')}.`,
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
        const { body } = request;
        // What the audit trail names: read off the validated body, so a refused call names it too.
        const account = operation.accountOf?.(body);
        if (account !== undefined) request.auditAccounts = [account];
        request.auditCollateral = operation.collateralOf?.(body);
        const caller = await authenticator.verifyCredentials(body.Credentials, accepted, request.bearer!.tokenName);
        request.caller = caller;
        // Member confinement: a member's credentials reach only the member's own account.
        if (caller.memberAccount !== undefined && account !== caller.memberAccount) {
          throw forbidden('These credentials do not reach that account');
        }
        const context = { db, secrets, config, caller };
        const result = operation.writes
          ? await runWrite(
              {
                db,
                path: operationPath(operation),
                tokenName: request.bearer!.tokenName,
                retentionHours: config.idempotencyRetentionHours,
                idempotencyKeyHeader: request.headers['idempotency-key'],
                body,
                reply,
                audit: (trx) => AuditLog.insertInTransaction(trx, auditEvent(request, operation, 200, null)),
              },
              (trx) => operation.handle({ ...context, db: trx }, body),
            )
          : await operation.handle(context, body);
        checkResponse?.(operation, result);
        if (operation.writes) request.auditedInTransaction = true;
        if (operation.auditAccounts) request.auditAccounts = operation.auditAccounts(result);
        return result;
      },
    );
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The audit trail writer, flushed on close; tests flush it to read what was recorded. */
    audit: AuditLog;
  }
}
