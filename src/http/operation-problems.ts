/**
 * The problems a call to an operation can be answered with, by status, read off the steps a call goes
 * through (operation-pipeline.ts and the edge around it): the reference documents exactly these, and
 * test/contract.test.ts holds the server to them.
 */
import type { ProblemCode } from '../contract/problems.js';
import { SANDBOX_FAULT_PROBLEMS, SANDBOX_FAULT_REFUSALS } from '../contract/sandbox-faults.js';
import type { AnyOperation } from '../operations/types.js';

export interface ProblemsOptions {
  /** Gateway mode: a SymXchange core answers, and its failures are CORE_* problems. */
  readonly gateway: boolean;
  /** Whether the core carries the operation (gateway mode); coregate's own session calls it does not. */
  readonly carriedByCore: (operation: AnyOperation) => boolean;
  /** Fault injection on (switched while serving): a call's `X-Coregate-Fault` header may force any problem it names. */
  readonly sandboxFaults: boolean;
}

/** Request properties whose values the operation checks as a query or a paging token (400 with its own code). */
const QUERY_PROPERTIES = ['Query', 'SearchFilter', 'ChildrenSearchFilter'];

/**
 * Status → the problem codes it carries, for a call of `operation`, in status order.
 * @example operationProblems(findBySSN, { gateway: false, carriedByCore: () => true }).get(401) // ['UNAUTHENTICATED']
 */
export function operationProblems(
  operation: AnyOperation,
  options: ProblemsOptions,
): ReadonlyMap<number, readonly ProblemCode[]> {
  const problems = new Map<number, ProblemCode[]>();
  const add = (status: number, ...codes: ProblemCode[]) =>
    problems.set(status, [...new Set([...(problems.get(status) ?? []), ...codes])]);
  const request = Object.keys(operation.request);
  const core = options.gateway && options.carriedByCore(operation);

  // The body: JSON only (415), within the size limit (413), valid JSON of the operation's schema (400).
  add(400, 'VALIDATION_FAILED', 'MALFORMED_JSON');
  if (request.some((name) => QUERY_PROPERTIES.includes(name))) add(400, 'INVALID_QUERY');
  if (request.includes('PagingRequestContext')) add(400, 'INVALID_PAGING_TOKEN');
  // The bearer token (401), then the token's scope and the body credentials (403).
  add(401, 'UNAUTHENTICATED');
  add(403, 'FORBIDDEN');
  if (core) add(403, 'CORE_CREDENTIALS_REJECTED');
  // A read or write names its record by key; a lookup answers "nothing found" with null or an empty list.
  if (operation.readPlan || operation.writes || core) add(404, 'RECORD_NOT_FOUND');
  add(413, 'PAYLOAD_TOO_LARGE');
  add(415, 'UNSUPPORTED_MEDIA_TYPE');
  // An Idempotency-Key sent again with another body; in gateway mode, sent again while the core still applies the first.
  if (operation.writes) add(422, 'IDEMPOTENCY_KEY_REUSED');
  if (operation.writes && core) add(409, 'IDEMPOTENCY_KEY_IN_PROGRESS');
  add(429, 'RATE_LIMITED');
  add(500, 'INTERNAL');
  if (options.gateway && !core) add(501, 'STORE_ONLY');
  // A core whose SymXchange release lacks the operation (2020.00 has no collateral service).
  if (core) add(501, 'CORE_OPERATION_UNSUPPORTED');
  if (core) add(502, 'CORE_ERROR', 'CORE_BAD_RESPONSE');
  // coregate's own database (tokens, idempotency keys, the store) is unreachable; in gateway mode, the core.
  add(503, 'UNAVAILABLE');
  if (core) add(503, 'CORE_UNAVAILABLE');
  if (core) add(504, 'CORE_TIMEOUT');
  // The sandbox's fault header (sandbox-faults.ts): refused while fault injection is off; on, it forces any of
  // its problems on the call, the gateway's included.
  if (options.sandboxFaults) {
    for (const [code, statuses] of Object.entries(SANDBOX_FAULT_PROBLEMS))
      for (const status of statuses) add(status, code as ProblemCode);
  } else {
    for (const { status, code } of SANDBOX_FAULT_REFUSALS) add(status, code);
  }
  return new Map([...problems].sort(([a], [b]) => a - b));
}

/** What a problem of a code says, as the reference's examples show it (a code not here says its title). */
export const PROBLEM_EXAMPLE_DETAILS: Readonly<Partial<Record<ProblemCode, string>>> = {
  VALIDATION_FAILED: '/SSN: must match pattern "^[0-9]{9}$"',
  MALFORMED_JSON: 'The body is not valid JSON: Unexpected end of JSON input',
  UNSUPPORTED_MEDIA_TYPE: 'Send the body as application/json',
  PAYLOAD_TOO_LARGE: 'The body exceeds the size limit of 262144 bytes',
  UNAUTHENTICATED: 'A valid bearer token is required',
  FORBIDDEN: 'The credentials do not allow this operation',
  NOT_FOUND: 'No resource at this path',
  METHOD_NOT_ALLOWED: 'GET is not allowed here; use POST',
  RECORD_NOT_FOUND: 'No record with that key',
  INVALID_QUERY: 'Unknown field "Amout" at position 1',
  INVALID_PAGING_TOKEN: 'The paging token is not valid for this request',
  RATE_LIMITED: 'Too many requests; retry in 12 s',
  IDEMPOTENCY_KEY_REUSED: 'This Idempotency-Key was used with a different request',
  IDEMPOTENCY_KEY_IN_PROGRESS: 'A request with this Idempotency-Key is still being applied; retry it to get its answer',
  UNAVAILABLE: 'The database is not reachable; retry shortly',
  CORE_UNAVAILABLE: 'The core is unavailable: the core is unreachable (ECONNREFUSED)',
  CORE_TIMEOUT: 'The core did not answer within 10000 ms',
  CORE_BAD_RESPONSE: 'The core answered HTTP 404 with text/html, not a SOAP envelope',
  CORE_ERROR: 'The core refused the call',
  CORE_CREDENTIALS_REJECTED: 'The core rejected the credentials',
  STORE_ONLY: "This is coregate's own session management: in gateway mode log on at the core",
  CORE_OPERATION_UNSUPPORTED: 'The core of Sym 627 speaks SymXchange 2020.00, which has no getCollateralSelectFields',
  SANDBOX_FAULTS_DISABLED:
    'X-Coregate-Fault is refused: fault injection is off (coregate faults enable, or PUT /admin/faults/injection, turns it on in a sandbox)',
  NOT_A_DEMO_DATASET: 'The store does not hold a seeded demo dataset, so there is nothing to reset it to',
  ALREADY_EXISTS: 'A token named ci-bot exists already',
  STORE_NOT_EMPTY: 'The store already holds records; replace them explicitly (replace=true, coregate import --replace)',
  INVALID_RECORD_FILE: 'line 17: ShareHold.amount must be a number, got string; nothing was imported',
  INTERNAL: 'Something went wrong; quote request id 6f1c0b7e-2f7e-4a51-9a57-3c1d3f0e8b21 when reporting it',
};
