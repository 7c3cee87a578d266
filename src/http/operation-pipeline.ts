/**
 * The gateway's policy, the same for every call whichever edge it came through (the JSON API or the
 * SymXchange SOAP face): bearer identity (401) and rate limits (429) before the body is read, then the
 * scope (403), the body schema (400), the body credentials (403) and member confinement (403), then the
 * answer (a write in one transaction with its `Idempotency-Key`). Every call to an operation is written to
 * the audit trail with its outcome, denied ones included (the `onResponse` hook of `app.ts`). In a sandbox,
 * the call's `X-Coregate-Fault` header, or a fault rule set on the server, replaces the answer
 * (sandbox-faults.ts, fault-rules.ts).
 */
import type { CompiledQuery } from 'kysely';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { DEFAULT_SYM, type Config } from '../config.js';
import { auditedCoreOutcome, type Core, type CoreCall, type CoreOutcome } from '../core/index.js';
import { envelopeProperties, MEMBER_CREDENTIAL_KINDS, type CredentialKind } from '../contract/envelope.js';
import { forbidden, rateLimited, validationFailed, type RecordedAs } from '../contract/problems.js';
import type { Secrets } from '../crypto/secrets.js';
import { responseChecker } from '../operations/response-check.js';
import { operationPath, type AnyOperation, type OperationContext, type RequestBody } from '../operations/types.js';
import type { Authenticator, BearerIdentity, CredentialIdentity } from '../security/authenticator.js';
import type { RateLimiter } from '../security/rate-limit.js';
import { callerTraceContext } from '../telemetry/trace-context.js';
import type { AuditEvent, AuditLog } from '../store/audit.js';
import type { Db } from '../database/database.js';
import type { KeyWrites } from '../store/key-writes.js';
import { propertyErrors, type AjvError } from './error-handler.js';
import type { RateLimit } from './metrics.js';
import type { Face } from '../contract/fault-rules.js';
import type { FaultRules } from './fault-rules.js';
import { applySandboxFault, asksForSandboxFault, type SandboxFaultOptions } from './sandbox-faults.js';
import { requestTraceId } from './tracing.js';
import { runKeyedCoreWrite, runWrite } from './writes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The operation a call reached: the route's (JSON), or the one its envelope names (SOAP). */
    operation?: AnyOperation;
    bearer?: BearerIdentity;
    caller?: CredentialIdentity;
    /** Stable code of the problem answered, for the audit trail. */
    problemCode?: string;
    /** Who a refused credential names, when the operator may know it (a lockout), for the audit trail. */
    refusedCredential?: Pick<RecordedAs, 'userNumber' | 'memberAccount'>;
    /** Accounts the request names or the operation found, and the collateral it reads, for the audit trail. */
    auditAccounts?: readonly string[];
    auditCollateral?: string;
    /** The call's audit event was committed in its write transaction; the response hook adds none. */
    auditedInTransaction?: boolean;
    /** The Sym the path named (`/gw/<sym>/…`); the default Sym for the SOAP face. */
    sym?: number;
    /** How the call went at a core it was forwarded to (gateway mode), for the audit trail. */
    coreOutcome?: CoreOutcome;
  }
}

export interface OperationPipelineOptions {
  /** What answers: the store, or a SymXchange core (gateway mode). */
  readonly core: Core;
  readonly db: Db;
  /** Gateway mode: changes to a key that the database could not take after the call, written when it is back. */
  readonly keyWrites: KeyWrites;
  readonly secrets: Secrets;
  readonly config: Config;
  /** The schemas operations' requests and responses refer to. */
  readonly sharedSchemas: readonly TSchema[];
  readonly authenticator: Authenticator;
  readonly limiter: RateLimiter;
  /** The audit trail: a write's event is inserted in the write's transaction. */
  readonly audit: AuditLog;
  /** Told of each call a rate limit refuses, for the metrics. */
  readonly onRateLimited?: (limit: RateLimit) => void;
  /** The sandbox's fault injection: on or off, and who records a call whose connection it dropped. */
  readonly sandboxFaults: SandboxFaultOptions;
  /** The sandbox's fault rules, while fault injection is on. */
  readonly faultRules?: FaultRules;
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

/**
 * The audit event of a call answered with `status` (and a problem `code` when it failed): named by its
 * operation, or, for a call refused before it reached one, by what it was sent to (`soap:/SymXchange/findby`).
 */
export function auditEvent(
  request: FastifyRequest,
  operation: AnyOperation | string,
  status: number,
  code: string | null,
): AuditEvent {
  return {
    requestId: request.id,
    tokenName: request.bearer?.tokenName ?? null,
    userNumber: request.caller?.userNumber ?? request.refusedCredential?.userNumber ?? null,
    memberAccount: request.caller?.memberAccount ?? request.refusedCredential?.memberAccount ?? null,
    operation: typeof operation === 'string' ? operation : `${operation.family}:${operation.name}`,
    accountNumbers: [...(request.auditAccounts ?? [])],
    collateralNumber: request.auditCollateral ?? null,
    status,
    code,
    coreLatencyMs: request.coreOutcome?.latencyMs ?? null,
    coreOutcome: request.coreOutcome ? auditedCoreOutcome(request.coreOutcome) : null,
    traceId: requestTraceId(request),
  };
}

/**
 * The steps of a call, for the edges to run in order.
 * @example
 * await pipeline.admit(request, reply, operation);  // bearer identity set on the request first
 * pipeline.validate(request, operation, body);       // SOAP bodies; JSON routes validate by their schema
 * return pipeline.answer(request, reply, operation, body);
 */
export class OperationPipeline {
  private readonly general: { limit: number; windowSeconds: number };
  private readonly findBy: { limit: number; windowSeconds: number };
  private readonly checkResponse?: (operation: AnyOperation, result: unknown) => void;
  private readonly bodySchemas = new Map<AnyOperation, TSchema>();
  private readonly accepted = new Map<AnyOperation, readonly CredentialKind[]>();
  /**
   * Gateway mode: how old a key's pending reservation must be before a retry takes it over, its holder
   * having died mid-call. Twice the deadline of a whole call to the core, which no live attempt outlasts.
   */
  private readonly keyAbandonedAfterMs: number;

  constructor(private readonly options: OperationPipelineOptions) {
    const { config } = options;
    this.keyAbandonedAfterMs = 2 * (config.symxchange?.timeoutMs ?? 0);
    this.general = { limit: config.rateLimitPerMinute, windowSeconds: MINUTE };
    this.findBy = { limit: config.findByRateLimitPerMinute, windowSeconds: MINUTE };
    this.checkResponse = config.checkResponses ? responseChecker(options.sharedSchemas) : undefined;
  }

  /** The body an operation takes: the envelope, then its own request properties; nothing else. */
  bodySchema(operation: AnyOperation): TSchema {
    let schema = this.bodySchemas.get(operation);
    if (!schema) {
      schema = Type.Object({ ...envelopeProperties, ...operation.request }, { additionalProperties: false });
      this.bodySchemas.set(operation, schema);
    }
    return schema;
  }

  acceptedCredentials(operation: AnyOperation): readonly CredentialKind[] {
    let kinds = this.accepted.get(operation);
    if (!kinds) this.accepted.set(operation, (kinds = acceptedCredentials(operation, this.options.config)));
    return kinds;
  }

  /**
   * Rate limits and scope of the caller the request's `bearer` names (set by the edge): a stricter budget
   * for lookups, so a token cannot walk card or SSN space; both counted at once.
   */
  async admit(request: FastifyRequest, reply: FastifyReply, operation: AnyOperation): Promise<void> {
    request.operation = operation;
    const { tokenName, scopes } = request.bearer!;
    const { limiter } = this.options;
    // Both at once (each may be a round trip to Redis).
    const pending = limiter.hit(`token:${tokenName}`, this.general);
    const [general, findBy] =
      operation.service === 'findby'
        ? await Promise.all([pending, limiter.hit(`findby:${tokenName}`, this.findBy)])
        : [await pending, undefined];
    if (!general.allowed) {
      this.options.onRateLimited?.('token');
      throw rateLimited(general.retryAfterSeconds);
    }
    if (findBy && !findBy.allowed) {
      this.options.onRateLimited?.('findby');
      throw rateLimited(findBy.retryAfterSeconds);
    }
    reply.header(
      'ratelimit-remaining',
      String(findBy ? Math.min(general.remaining, findBy.remaining) : general.remaining),
    );
    if (operation.scope && !scopes.includes(operation.scope)) {
      throw forbidden(`The token lacks the ${operation.scope} scope`);
    }
  }

  /** Checks a body the edge decoded itself against the operation's body schema (400 naming each property). */
  validate(request: FastifyRequest, operation: AnyOperation, body: unknown): void {
    const validate = request.compileValidationSchema(this.bodySchema(operation), 'body');
    if (!validate(body)) throw validationFailed(propertyErrors((validate.errors ?? []) as AjvError[]));
  }

  /**
   * Credentials, confinement and the core's answer of a validated body. In gateway mode the core verifies
   * the credentials; coregate checks what it can before the call (their shape, the kinds accepted, one
   * kind, and the account an AccountNumberCredentials names). Resolves to nothing when the sandbox dropped
   * the connection (the reply is then hijacked: nothing may be sent). `face` is the edge the call came through.
   */
  async answer(
    request: FastifyRequest,
    reply: FastifyReply,
    operation: AnyOperation,
    body: RequestBody<never>,
    face: Face = 'json',
  ): Promise<unknown> {
    const { core, db, secrets, config, authenticator } = this.options;
    // What the audit trail names: read off the validated body, so a refused call names it too.
    const account = operation.accountOf?.(body);
    if (account !== undefined) request.auditAccounts = [account];
    request.auditCollateral = operation.collateralOf?.(body);
    const tokenName = request.bearer!.tokenName;
    const accepted = this.acceptedCredentials(operation);
    const caller = core.verifiesCredentials
      ? authenticator.claimCredentials(body.Credentials, accepted, tokenName)
      : await authenticator.verifyCredentials(body.Credentials, accepted, tokenName, request.ip);
    request.caller = caller;
    // Member confinement: a member's credentials reach only the member's own account.
    if (caller.memberAccount !== undefined && account !== caller.memberAccount) {
      throw forbidden('These credentials do not reach that account');
    }
    // A forced fault replaces the answer of an admitted, valid call, before anything is written or asked of a core.
    if (asksForSandboxFault(request) && (await applySandboxFault(request, reply, this.options.sandboxFaults)))
      return undefined;
    const { faultRules } = this.options;
    if (
      faultRules &&
      !faultRules.idle() &&
      (await faultRules.apply(request, reply, operation, face, this.options.sandboxFaults))
    )
      return undefined;
    const context: OperationContext = { db, secrets, config, caller };
    const call: CoreCall = {
      requestId: request.id,
      sym: request.sym ?? DEFAULT_SYM,
      traceContext: callerTraceContext(request.headers),
    };
    // A write on coregate's own store runs in one transaction with its Idempotency-Key and audit event. A
    // core that answers over the network keeps no transaction of coregate's open across the call: a key is
    // reserved before it and completed after it (writes.ts, docs/decisions.md "Gateway mode").
    const transactional =
      operation.writes && (core.kind === 'store' || request.headers['idempotency-key'] !== undefined);
    const result = transactional
      ? await this.write(request, reply, operation, body, context, call)
      : await this.fromCore(request, operation, body, context, call);
    this.checkResponse?.(operation, result);
    if (transactional) request.auditedInTransaction = true;
    if (operation.auditAccounts) request.auditAccounts = operation.auditAccounts(result);
    return result;
  }

  /**
   * The core's answer to the call, and how it went there (`request.coreOutcome`, for the audit trail): the
   * core's own promise, not an async function around it, so a call holds no suspended frame of it meanwhile.
   */
  private fromCore(
    request: FastifyRequest,
    operation: AnyOperation,
    body: RequestBody<never>,
    context: OperationContext,
    call: CoreCall,
  ): Promise<unknown> {
    return this.options.core.answer(operation, context, body, call).finally(() => {
      request.coreOutcome = call.outcome;
    });
  }

  /** A write in a transaction (the store) or under its reserved Idempotency-Key (a core), with its audit event. */
  private write(
    request: FastifyRequest,
    reply: FastifyReply,
    operation: AnyOperation,
    body: RequestBody<never>,
    context: OperationContext,
    call: CoreCall,
  ): Promise<unknown> {
    const { core, db, config } = this.options;
    const write = {
      db,
      path: operationPath(operation, call.sym),
      tokenName: request.bearer!.tokenName,
      retentionHours: config.idempotencyRetentionHours,
      idempotencyKeyHeader: request.headers['idempotency-key'],
      body,
      reply,
      audit: (trx: Db, prior?: CompiledQuery) =>
        this.options.audit.insertInTransaction(trx, auditEvent(request, operation, 200, null), prior),
    };
    return core.kind === 'store'
      ? runWrite(write, (trx) => this.fromCore(request, operation, body, { ...context, db: trx }, call))
      : runKeyedCoreWrite(
          { ...write, abandonedAfterMs: this.keyAbandonedAfterMs, keyWrites: this.options.keyWrites },
          () => this.fromCore(request, operation, body, context, call),
        );
  }
}
