/**
 * The core boundary (DESIGN, "The core boundary and SymXchange"): every operation asks a core for its
 * answer. `store` answers from coregate's own records; `symxchange` forwards to a Symitar core over
 * SymXchange (gateway mode). The gateway's policy (tokens, scopes, rate limits, validation, audit,
 * idempotency) sits in front of the boundary and is the same for both.
 */
import type { AnyOperation, OperationContext, RequestBody } from '../operations/types.js';
import type { TraceContext } from '../telemetry/trace-context.js';

/** One call of an operation, as the core sees it. */
export interface CoreCall {
  /** The request id (`X-Request-Id`): the SOAP MessageId in gateway mode, so one id follows a call into the core's logs. */
  readonly requestId: string;
  /** The Sym the path named (`/gw/<sym>/…`). */
  readonly sym: number;
  /** The caller's W3C trace context, when valid: a core that calls out passes it on when tracing is off. */
  readonly traceContext?: TraceContext;
  /** What the call cost at the core and how it ended, set by a core that calls out; audited. */
  outcome?: CoreOutcome;
}

/** How a call ended at the core: `ok` or a problem code, and the fault rule that made the problem of a core's fault. */
export interface CoreOutcome {
  readonly latencyMs: number;
  readonly outcome: string;
  /** `default:record-not-found`, `rule:3` (core-fault-rules.ts). */
  readonly faultRule?: string;
}

/**
 * How the audit trail records a core's outcome: its code, and the fault rule that made it, if one did.
 * @example auditedCoreOutcome({ latencyMs: 12, outcome: 'RECORD_NOT_FOUND', faultRule: 'rule:3' }) // 'RECORD_NOT_FOUND by rule:3'
 */
export function auditedCoreOutcome(outcome: CoreOutcome): string {
  return outcome.faultRule === undefined ? outcome.outcome : `${outcome.outcome} by ${outcome.faultRule}`;
}

/** The state of a gateway core's circuit breaker (circuit.ts): `half_open` lets one call try the core. */
export type CircuitState = 'closed' | 'half_open' | 'open';

/** Whether a core can answer now, for `/ready`. */
export interface CoreReadiness {
  readonly ready: boolean;
  /** What the core is and its state: `store`, or each Sym's circuit (`627: closed`). */
  readonly detail: string;
}

export interface Core {
  readonly kind: 'store' | 'symxchange';
  /** The Syms this core answers for; a path naming another is a 404. */
  readonly syms: readonly number[];
  /**
   * Body credentials are the core's to verify (gateway mode): coregate checks their shape, the kinds the
   * operation accepts and what it can confine, and passes them on.
   */
  readonly verifiesCredentials: boolean;
  /** The answer of a validated request (a write runs in the transaction `context.db` holds). */
  answer(
    operation: AnyOperation,
    context: OperationContext,
    body: RequestBody<never>,
    call: CoreCall,
  ): Promise<unknown>;
  readiness(): CoreReadiness;
  /** Readies the core before it answers (gateway mode: learns each core's SymXchange release from its WSDLs). */
  start?(): Promise<void>;
  /** Each Sym's circuit breaker (gateway mode), for the metrics; none for the store. */
  circuits(): ReadonlyMap<number, CircuitState>;
  /** Gateway mode's recording (COREGATE_RECORD_DIR), when on: the exchanges written and dropped. */
  readonly recording?: () => { readonly written: number; readonly dropped: number };
  close(): Promise<void>;
}

/** Where the gateway writes what a core said and did (pino's shape: the facts, then the message). */
export interface CoreLog {
  warn(facts: Record<string, unknown>, message: string): void;
  info?(facts: Record<string, unknown>, message: string): void;
}
