/**
 * Errors as values with stable codes (RFC 9457 problem details). Thrown anywhere, mapped to a response
 * in one place (`error-handler.ts`).
 */
import { Type, type Static } from 'typebox';

export type ProblemCode =
  | 'VALIDATION_FAILED'
  | 'MALFORMED_JSON'
  | 'MALFORMED_REQUEST'
  | 'HEADERS_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'RECORD_NOT_FOUND'
  | 'INVALID_QUERY'
  | 'INVALID_PAGING_TOKEN'
  | 'RATE_LIMITED'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'IDEMPOTENCY_KEY_IN_PROGRESS'
  | 'UNAVAILABLE'
  | 'CORE_UNAVAILABLE'
  | 'CORE_TIMEOUT'
  | 'CORE_BAD_RESPONSE'
  | 'CORE_ERROR'
  | 'CORE_CREDENTIALS_REJECTED'
  | 'CORE_OPERATION_UNSUPPORTED'
  | 'STORE_ONLY'
  | 'SANDBOX_FAULTS_DISABLED'
  | 'TOO_MANY_FAULT_RULES'
  | 'NOT_A_DEMO_DATASET'
  | 'ALREADY_EXISTS'
  | 'STORE_NOT_EMPTY'
  | 'INVALID_RECORD_FILE'
  | 'INTERNAL';

export interface PropertyError {
  /** JSON pointer to the property at fault, e.g. `/CardNumber`. */
  readonly pointer: string;
  readonly detail: string;
}

const TITLES: Record<ProblemCode, string> = {
  VALIDATION_FAILED: 'The request is not valid',
  MALFORMED_JSON: 'The body is not valid JSON',
  MALFORMED_REQUEST: 'The request is not valid HTTP',
  HEADERS_TOO_LARGE: 'The request headers are too large',
  UNSUPPORTED_MEDIA_TYPE: 'The body must be application/json',
  PAYLOAD_TOO_LARGE: 'The body is too large',
  UNAUTHENTICATED: 'Authentication required',
  FORBIDDEN: 'Not allowed',
  NOT_FOUND: 'No such resource',
  METHOD_NOT_ALLOWED: 'Method not allowed',
  RECORD_NOT_FOUND: 'No such record',
  INVALID_QUERY: 'The query is not valid',
  INVALID_PAGING_TOKEN: 'The paging token is not valid',
  RATE_LIMITED: 'Too many requests',
  IDEMPOTENCY_KEY_REUSED: 'The idempotency key was used for another request',
  IDEMPOTENCY_KEY_IN_PROGRESS: 'A request with this idempotency key is still being applied',
  UNAVAILABLE: 'The service is unavailable',
  CORE_UNAVAILABLE: 'The core is unavailable',
  CORE_TIMEOUT: 'The core did not answer in time',
  CORE_BAD_RESPONSE: 'The core answered something that is not SymXchange',
  CORE_ERROR: 'The core refused the call',
  CORE_CREDENTIALS_REJECTED: 'The core rejected the credentials',
  CORE_OPERATION_UNSUPPORTED: "The core's SymXchange release has no such operation",
  STORE_ONLY: 'Not available in gateway mode',
  SANDBOX_FAULTS_DISABLED: 'Sandbox fault injection is off',
  TOO_MANY_FAULT_RULES: 'Too many fault rules',
  NOT_A_DEMO_DATASET: 'The store does not hold a demo dataset',
  ALREADY_EXISTS: 'It exists already',
  STORE_NOT_EMPTY: 'The store already holds records',
  INVALID_RECORD_FILE: 'The records file is not valid',
  INTERNAL: 'Internal error',
};

/**
 * How a core refused a call (gateway mode), as the problem carries it: the class of its SOAP fault and its
 * own code where SymXchange defines one. The core's text stays in the log.
 */
export interface CoreFaultDetail {
  /** `Client` or `Server` (SOAP 1.1's `VersionMismatch` and `MustUnderstand` too). */
  readonly faultcode: string;
  /** The SymXchange status code (an `xsd:int`), or the problem code of a coregate acting as the core. */
  readonly code?: string;
}

/**
 * What the operator's records (the audit trail, the log, the request's span) say of a problem beyond what
 * its caller is told: the caller's answer is the problem's own, the same as for any refusal of its kind.
 */
export interface RecordedAs {
  /** The code recorded in place of the problem's (`LOCKED_OUT` for a `FORBIDDEN`). */
  readonly code: string;
  /** Who the refused credential names: a user, or a member's account. */
  readonly userNumber?: number;
  readonly memberAccount?: string;
}

export class Problem extends Error {
  /** What the operator's records say beyond the answer (see `RecordedAs`); none for most problems. */
  recordedAs?: RecordedAs;

  constructor(
    readonly status: number,
    readonly code: ProblemCode,
    readonly detail: string,
    readonly errors?: readonly PropertyError[],
    readonly headers: Readonly<Record<string, string>> = {},
    /** The core's fault, for a problem made of one (CORE_ERROR, CORE_CREDENTIALS_REJECTED, a fault rule's). */
    readonly core?: CoreFaultDetail,
  ) {
    super(detail);
    this.name = 'Problem';
  }

  get title(): string {
    return TITLES[this.code];
  }
}

/** @example throw validationFailed([{ pointer: '/CardNumber', detail: 'must be string' }]) */
export function validationFailed(errors: readonly PropertyError[]): Problem {
  const detail =
    errors.length === 1
      ? `${errors[0]!.pointer || 'body'}: ${errors[0]!.detail}`
      : `${errors.length} properties are not valid`;
  return new Problem(400, 'VALIDATION_FAILED', detail, errors);
}

export function recordNotFound(detail: string): Problem {
  return new Problem(404, 'RECORD_NOT_FOUND', detail);
}

export function unauthenticated(detail = 'A valid bearer token is required'): Problem {
  return new Problem(401, 'UNAUTHENTICATED', detail, undefined, { 'www-authenticate': 'Bearer realm="coregate"' });
}

export function forbidden(detail = 'The credentials do not allow this operation'): Problem {
  return new Problem(403, 'FORBIDDEN', detail);
}

/**
 * 403 for a credential locked out for this caller: answered exactly as a wrong password is (`forbidden()`),
 * recorded for the operator as `LOCKED_OUT`, naming the credential's user or account.
 * @example throw lockedOut({ userNumber: 25 }); // the caller sees FORBIDDEN; the audit event LOCKED_OUT, user 25
 */
export function lockedOut(who: Omit<RecordedAs, 'code'>): Problem {
  const problem = forbidden();
  problem.recordedAs = { code: 'LOCKED_OUT', ...who };
  return problem;
}

/** 413: a body over its route's limit (`COREGATE_BODY_LIMIT`, or the records file's for an import). */
export function payloadTooLarge(limitBytes: number): Problem {
  return new Problem(413, 'PAYLOAD_TOO_LARGE', `The body exceeds the size limit of ${limitBytes} bytes`);
}

/** 400: what came is not an HTTP request (a bad request line, header or chunked body; no Host). */
export function malformedRequest(detail: string): Problem {
  return new Problem(400, 'MALFORMED_REQUEST', detail);
}

/** 431: the request line and headers are longer than Node reads (`http.maxHeaderSize`). */
export function headersTooLarge(maxBytes: number): Problem {
  return new Problem(431, 'HEADERS_TOO_LARGE', `The request line and headers exceed ${maxBytes} bytes`);
}

/** 408: the request did not arrive whole within its deadline (`COREGATE_REQUEST_TIMEOUT_MS`). */
export function requestTimedOut(): Problem {
  return new Problem(408, 'UNAVAILABLE', 'The request took too long');
}

/**
 * A limit refused the call: retry after this many seconds (at least one). `reason` says which limit, where
 * it is not the token's budget of calls.
 * @example rateLimited(5, '2 exports are running') // detail '2 exports are running; retry in 5 s'
 */
export function rateLimited(retryAfterSeconds: number, reason = 'Too many requests'): Problem {
  const seconds = Math.max(1, retryAfterSeconds);
  return new Problem(429, 'RATE_LIMITED', `${reason}; retry in ${seconds} s`, undefined, {
    'retry-after': String(seconds),
  });
}

/** Seconds a client is told to wait when the database is unreachable: about how long a restart takes. */
const DATABASE_RETRY_AFTER_SECONDS = 5;
/** …and when its connections are all in use: they free as the queries on them end. */
const DATABASE_BUSY_RETRY_AFTER_SECONDS = 2;

/** 503 with Retry-After: the database is unreachable, nothing about the request was wrong. */
export function databaseUnavailable(): Problem {
  return new Problem(503, 'UNAVAILABLE', 'The database is not reachable; retry shortly', undefined, {
    'retry-after': String(DATABASE_RETRY_AFTER_SECONDS),
  });
}

/**
 * 503 with Retry-After: the database answers, but every connection of this process's pool stayed in use
 * for as long as a call waits for one (COREGATE_DB_POOL, COREGATE_DB_CONNECT_TIMEOUT_MS).
 */
export function databaseBusy(): Problem {
  return new Problem(
    503,
    'UNAVAILABLE',
    "The database's connections are all in use (COREGATE_DB_POOL); retry shortly",
    undefined,
    { 'retry-after': String(DATABASE_BUSY_RETRY_AFTER_SECONDS) },
  );
}

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String(),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(Type.Object({ pointer: Type.String(), detail: Type.String() }))),
    core: Type.Optional(
      Type.Object(
        { faultcode: Type.String(), code: Type.Optional(Type.String()) },
        { description: "The class of the core's SOAP fault and its own error code (gateway mode)" },
      ),
    ),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details with a stable `code`' },
);
export type ProblemBody = Static<typeof ProblemSchema>;

/** The response body of a problem; `type` is a stable URN per code. */
export function problemBody(problem: Problem, instance?: string): ProblemBody {
  return {
    type: `urn:coregate:problem:${problem.code.toLowerCase().replaceAll('_', '-')}`,
    title: problem.title,
    status: problem.status,
    detail: problem.detail,
    code: problem.code,
    ...(instance ? { instance } : {}),
    ...(problem.errors ? { errors: [...problem.errors] } : {}),
    ...(problem.core ? { core: problem.core } : {}),
  };
}
