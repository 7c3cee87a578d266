/**
 * Spans at coregate's own seams, through OpenTelemetry's API (docs/tracing.md): each database query (named by
 * its statement, never its parameters) and each call to a SymXchange core, whose HTTP headers carry the W3C
 * `traceparent` on to the core (the caller's own, unchanged, when tracing is off). The request's own span is
 * the HTTP layer's (http/tracing.ts).
 *
 * Nothing here costs a process that exports no spans: every seam asks `tracingEnabled()` first, which is
 * true only once sdk.ts started the SDK (the `OTEL_*` variables configure an exporter). A query or a core
 * call is traced only inside a request's span still in flight, so migrations, seeding and the audit trail's
 * batches written after their request ended make no spans of their own.
 */
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { TraceContext } from './trace-context.js';

let tracer: Tracer | undefined;

/**
 * Whether this process exports spans (sdk.ts started the SDK).
 * @example if (!tracingEnabled()) return run();
 */
export function tracingEnabled(): boolean {
  return tracer !== undefined;
}

/** Turns the seams on, once the SDK's tracer provider is registered (sdk.ts). */
export function enableTracing(): void {
  tracer = trace.getTracer('coregate');
}

/**
 * coregate's tracer; only for callers that checked `tracingEnabled()`.
 * @example if (tracingEnabled()) coregateTracer().startSpan('POST')
 */
export function coregateTracer(): Tracer {
  if (!tracer) throw new Error('tracing is not enabled in this process');
  return tracer;
}

/** The span of the request in flight here, when there is one and it is recorded (sampled). */
function recordingParent(): Span | undefined {
  const parent = trace.getSpan(context.active());
  return parent?.isRecording() ? parent : undefined;
}

/**
 * The trace and span ids of the active span, for a log line; none outside a span.
 * @example pino({ mixin: activeTraceIds }) // {"trace_id":"4bf9…","span_id":"00f0…",…}
 */
export function activeTraceIds(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

// ---- Database queries ----

/** A query's statement as a span names it: its first keyword and the table it reads or writes. */
interface Statement {
  /** `SELECT share_name`, `INSERT audit_event`, `COMMIT`. */
  readonly summary: string;
  readonly operation: string;
  readonly table: string | undefined;
}

const IDENTIFIER = String.raw`(?:"?[A-Za-z_][A-Za-z0-9_]*"?\.)?"?([A-Za-z_][A-Za-z0-9_]*)"?`;
const FIRST_KEYWORD = /^\s*(?:\/\*[\s\S]*?\*\/\s*|--[^\n]*\n\s*)*([A-Za-z]+)/;
const TABLE_AFTER: Readonly<Record<string, RegExp>> = {
  INSERT: new RegExp(String.raw`\binto\s+${IDENTIFIER}`, 'i'),
  UPDATE: new RegExp(String.raw`^\s*update\s+(?:only\s+)?${IDENTIFIER}`, 'i'),
  COPY: new RegExp(String.raw`^\s*copy\s+${IDENTIFIER}`, 'i'),
};
const TABLE_FROM = new RegExp(String.raw`\bfrom\s+(?:only\s+)?${IDENTIFIER}`, 'i');

/** Statements named so far, by query text; beyond the bound a text is named each time (a few µs). */
const statements = new Map<string, Statement>();
const MAX_STATEMENTS = 2000;

/**
 * The name of a query text: keywords and identifiers only, so no value can reach a span (values are bound
 * parameters; the search language compiles to parameters too).
 * @example statementOf('select "account_number" from "share_name" where "ssn_hmac" = $1').summary // 'SELECT share_name'
 */
export function statementOf(text: string): Statement {
  const known = statements.get(text);
  if (known) return known;
  const operation = (FIRST_KEYWORD.exec(text)?.[1] ?? 'QUERY').toUpperCase();
  const table = (TABLE_AFTER[operation] ?? TABLE_FROM).exec(text)?.[1];
  const statement = { summary: table ? `${operation} ${table}` : operation, operation, table };
  if (statements.size < MAX_STATEMENTS) statements.set(text, statement);
  return statement;
}

/** The kind of a failure, for `error.type`: a SQLSTATE or the error's class, never its message (which may quote a value). */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  const name = (error as { name?: unknown } | undefined)?.name;
  return typeof name === 'string' && name !== '' ? name : 'Error';
}

/**
 * Runs a query, as a child span of the request in flight when tracing is on. `driver` tells the embedded
 * database (`pglite`) from PostgreSQL's pool (`pg`); both are `db.system` `postgresql`.
 * @example return traceQuery('pg', text, () => client.query({ name, text, values }));
 */
export function traceQuery<T>(driver: 'pg' | 'pglite', text: string, run: () => Promise<T>): Promise<T> {
  if (tracer === undefined) return run();
  const parent = recordingParent();
  if (!parent) return run();
  const { summary, operation, table } = statementOf(text);
  const attributes: Attributes = {
    'db.system': 'postgresql',
    'db.system.name': 'postgresql',
    'db.operation.name': operation,
    'db.query.summary': summary,
    'coregate.db.driver': driver,
  };
  if (table !== undefined) attributes['db.collection.name'] = table;
  const span = tracer.startSpan(summary, { kind: SpanKind.CLIENT, attributes }, context.active());
  return run().then(
    (result) => {
      span.end();
      return result;
    },
    (error: unknown) => {
      span.setAttribute('error.type', errorType(error));
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      throw error;
    },
  );
}

// ---- Calls to a core ----

/** What a core call's span says of it: which core, which SOAP operation. */
export interface CoreCallFacts {
  readonly sym: number;
  /** The SymXchange service (`findby`) and its SOAP operation (`findBySSN`) with its SOAPAction. */
  readonly service: string;
  readonly operation: string;
  readonly soapAction: string;
  /** The core's URL (no credentials: the settings refuse them). */
  readonly url: URL;
}

/** The stable code of a problem (`{status, code}`), or `INTERNAL` for anything else thrown. */
function outcomeOf(error: unknown): { code: string; serverFault: boolean } {
  const { status, code } = (error ?? {}) as { status?: unknown; code?: unknown };
  if (typeof status === 'number' && typeof code === 'string') return { code, serverFault: status >= 500 };
  return { code: 'INTERNAL', serverFault: true };
}

/**
 * Runs one SOAP call to a core as a CLIENT span, active while it runs so that `injectTraceContext` passes it
 * on to the core. Its outcome is `ok` or the problem code the call ended with (`CORE_TIMEOUT`, a fault's).
 * `factsOf` is asked only when tracing is on.
 * @example return traceCoreCall(() => ({ sym: 627, service: 'findby', operation: 'findBySSN', soapAction, url }), send);
 */
export function traceCoreCall<T>(factsOf: () => CoreCallFacts, run: () => Promise<T>): Promise<T> {
  if (tracer === undefined || !recordingParent()) return run();
  const facts = factsOf();
  const { url } = facts;
  const attributes: Attributes = {
    'rpc.system': 'soap',
    'rpc.service': facts.service,
    'rpc.method': facts.operation,
    'coregate.core.soap_action': facts.soapAction,
    'coregate.core.attempt': 1,
    'coregate.sym': facts.sym,
    'server.address': url.hostname,
    'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
  };
  const name = `${facts.service}/${facts.operation}`;
  return tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, (span) =>
    run().then(
      (result) => {
        span.setAttribute('coregate.core.outcome', 'ok');
        span.end();
        return result;
      },
      (error: unknown) => {
        const { code, serverFault } = outcomeOf(error);
        span.setAttribute('coregate.core.outcome', code);
        if (serverFault) {
          span.setAttribute('error.type', code);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
        throw error;
      },
    ),
  );
}

/**
 * Notes on the core call in flight that it is being sent again (attempt 2: a read whose connection was reset).
 * @example traceCoreAttempt(2);
 */
export function traceCoreAttempt(attempt: number): void {
  if (tracer === undefined) return;
  const span = trace.getSpan(context.active());
  span?.setAttribute('coregate.core.attempt', attempt);
  span?.addEvent('sent again: the connection was reset', { 'coregate.core.attempt': attempt });
}

/** Notes the HTTP status the core answered the call in flight with. */
export function traceCoreAnswer(status: number): void {
  if (tracer === undefined) return;
  trace.getSpan(context.active())?.setAttribute('http.response.status_code', status);
}

/**
 * The headers of a request to a core, with a trace context: when tracing is on, the active span's
 * `traceparent` (and `tracestate`), so that the core's spans join the caller's trace; when it is off, the
 * caller's own (`caller`, checked by trace-context.ts) as it came, as a hop that takes no part in the trace.
 * @example pool.dispatch({ method: 'POST', path, headers: injectTraceContext({ soapaction }, call.traceContext), body })
 */
export function injectTraceContext(headers: Record<string, string>, caller?: TraceContext): Record<string, string> {
  if (tracer !== undefined) propagation.inject(context.active(), headers);
  else if (caller !== undefined) {
    headers.traceparent = caller.traceparent;
    if (caller.tracestate !== undefined) headers.tracestate = caller.tracestate;
  }
  return headers;
}
