/**
 * Sandbox fault injection, as WireMock and Mockoon offer it: while it is on (src/store/fault-injection.ts), a call's
 * `X-Coregate-Fault` header forces, on that one call, a problem (`status=503; code=CORE_UNAVAILABLE`), a
 * delay before the answer (`delay=1500`) or a connection closed without an answer (`drop`), so that a
 * client can test its handling of every documented failure. This module holds the header's name, the
 * problems it may force and its grammar; the edges apply it (http/sandbox-faults.ts).
 */
import { Problem, unauthenticated, type ProblemCode } from './problems.js';

/** The request header that asks for a fault. */
export const SANDBOX_FAULT_HEADER = 'X-Coregate-Fault';

/**
 * The problems the header may force, each with the statuses coregate answers it with (the first is the one
 * forced when `status=` is not given): every problem an operation can answer, the gateway's CORE_* included.
 */
export const SANDBOX_FAULT_PROBLEMS = {
  VALIDATION_FAILED: [400],
  MALFORMED_JSON: [400],
  INVALID_QUERY: [400],
  INVALID_PAGING_TOKEN: [400],
  UNAUTHENTICATED: [401],
  FORBIDDEN: [403],
  CORE_CREDENTIALS_REJECTED: [403],
  RECORD_NOT_FOUND: [404],
  PAYLOAD_TOO_LARGE: [413],
  UNSUPPORTED_MEDIA_TYPE: [415],
  IDEMPOTENCY_KEY_REUSED: [422],
  RATE_LIMITED: [429],
  INTERNAL: [500],
  STORE_ONLY: [501],
  CORE_ERROR: [502],
  CORE_BAD_RESPONSE: [502],
  UNAVAILABLE: [503, 408],
  CORE_UNAVAILABLE: [503],
  CORE_TIMEOUT: [504],
} as const satisfies Partial<Record<ProblemCode, readonly number[]>>;

export type SandboxFaultCode = keyof typeof SANDBOX_FAULT_PROBLEMS;

/** What the header itself may be answered with: 403 while fault injection is off, 400 when it cannot be read. */
export const SANDBOX_FAULT_REFUSALS = [
  { status: 403, code: 'SANDBOX_FAULTS_DISABLED' },
  { status: 400, code: 'VALIDATION_FAILED' },
] as const satisfies readonly { readonly status: number; readonly code: ProblemCode }[];

/** The longest `delay=`: below the idle timeout of a connection (`COREGATE_REQUEST_TIMEOUT_MS`, 30 s by default). */
export const SANDBOX_FAULT_MAX_DELAY_MS = 30_000;

/** The status a dropped call is recorded with in the audit trail, the metrics and the log (nginx's "no response"). */
export const DROPPED_STATUS = 444;

/** What a header asks for: a delay first (0 for none), then a problem, a dropped connection, or the real answer. */
export interface SandboxFault {
  readonly delayMs: number;
  readonly drop: boolean;
  readonly problem?: Problem;
}

/** Seconds a forced problem's `Retry-After` says, where the real problem carries one. */
const RETRY_AFTER: Partial<Record<ProblemCode, string>> = {
  RATE_LIMITED: '1',
  UNAVAILABLE: '5',
  CORE_UNAVAILABLE: '5',
};
/** Problems that name the properties at fault in `errors`: a forced one names the body as a whole. */
const WITH_ERRORS: ReadonlySet<ProblemCode> = new Set(['VALIDATION_FAILED', 'INVALID_QUERY', 'INVALID_PAGING_TOKEN']);
/** Problems that carry the core's SOAP fault. */
const WITH_CORE_FAULT: ReadonlySet<ProblemCode> = new Set(['CORE_ERROR', 'CORE_CREDENTIALS_REJECTED']);

const DIRECTIVES = 'status=, code=, delay= and drop';

/** A part of the header quoted back in a problem, cut short: the header may be kilobytes long. */
const echo = (text: string) => (text.length > 40 ? `${text.slice(0, 40)}…` : text);

function unreadable(detail: string): Problem {
  return new Problem(400, 'VALIDATION_FAILED', `${SANDBOX_FAULT_HEADER}: ${detail}`);
}

/** How fault injection is turned on while serving (the environment variable is only its start value). */
export const TURN_ON = 'coregate faults enable, or PUT /admin/faults/injection, turns it on in a sandbox';

/** 403: a call carried the header while fault injection is off. */
export function sandboxFaultsDisabled(): Problem {
  return new Problem(
    403,
    'SANDBOX_FAULTS_DISABLED',
    `${SANDBOX_FAULT_HEADER} is refused: fault injection is off (${TURN_ON})`,
  );
}

/**
 * The problem a fault forces, shaped (headers, `errors`, `core`) as the real one is; its detail says what
 * forced it (the header, unless told).
 * @example forcedProblem('RATE_LIMITED', 429).headers // { 'retry-after': '1' }
 */
export function forcedProblem(
  code: SandboxFaultCode,
  status: number,
  detail = `Forced by ${SANDBOX_FAULT_HEADER} (sandbox fault injection)`,
): Problem {
  if (code === 'UNAUTHENTICATED') return unauthenticated(detail);
  if (WITH_ERRORS.has(code)) return new Problem(status, code, detail, [{ pointer: '', detail }]);
  const retryAfter = status === 408 ? undefined : RETRY_AFTER[code];
  return new Problem(
    status,
    code,
    detail,
    undefined,
    retryAfter ? { 'retry-after': retryAfter } : {},
    WITH_CORE_FAULT.has(code) ? { faultcode: 'Server' } : undefined,
  );
}

function integer(name: string, raw: string, min: number, max: number): number {
  const value = Number(raw);
  if (!/^[0-9]+$/.test(raw) || value < min || value > max)
    throw unreadable(`${name}= must be an integer from ${min} to ${max}, got "${echo(raw)}"`);
  return value;
}

/**
 * Reads the header: `;`-separated directives, names in any case, each at most once.
 * @example parseSandboxFault('status=503; code=CORE_UNAVAILABLE').problem?.code // 'CORE_UNAVAILABLE'
 * @example parseSandboxFault('delay=1500').delayMs // 1500
 * @example parseSandboxFault('drop').drop // true
 */
export function parseSandboxFault(value: string): SandboxFault {
  const given = new Map<string, string | undefined>();
  for (const part of value.split(';')) {
    const directive = part.trim();
    if (directive === '') continue;
    const equals = directive.indexOf('=');
    const name = (equals < 0 ? directive : directive.slice(0, equals)).trim().toLowerCase();
    const argument = equals < 0 ? undefined : directive.slice(equals + 1).trim();
    if (!['status', 'code', 'delay', 'drop'].includes(name))
      throw unreadable(`unknown directive "${echo(name)}"; the directives are ${DIRECTIVES}`);
    if (given.has(name)) throw unreadable(`${name} is given twice`);
    if ((name === 'drop') !== (argument === undefined))
      throw unreadable(name === 'drop' ? 'drop takes no value' : `${name}= needs a value`);
    given.set(name, argument);
  }
  if (given.size === 0) throw unreadable(`names no fault; the directives are ${DIRECTIVES}`);
  const delayMs = given.has('delay') ? integer('delay', given.get('delay')!, 0, SANDBOX_FAULT_MAX_DELAY_MS) : 0;
  const drop = given.has('drop');
  const code = given.get('code');
  const status = given.get('status');
  if (drop && (code !== undefined || status !== undefined))
    throw unreadable('drop closes the connection without an answer: it takes no status= or code=');
  if (code === undefined) {
    if (status !== undefined)
      throw unreadable('status= needs the code= of the problem to force, e.g. "status=503; code=CORE_UNAVAILABLE"');
    return { delayMs, drop };
  }
  if (!Object.hasOwn(SANDBOX_FAULT_PROBLEMS, code))
    throw unreadable(
      `code=${echo(code)} is not a problem it can force; codes: ${Object.keys(SANDBOX_FAULT_PROBLEMS).join(', ')}`,
    );
  const statuses: readonly number[] = SANDBOX_FAULT_PROBLEMS[code as SandboxFaultCode];
  const forced = status === undefined ? statuses[0]! : integer('status', status, 400, 599);
  if (!statuses.includes(forced))
    throw unreadable(`${code} is answered with status ${statuses.join(' or ')}, not ${forced}`);
  return { delayMs, drop, problem: forcedProblem(code as SandboxFaultCode, forced) };
}
