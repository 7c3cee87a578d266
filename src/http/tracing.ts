/**
 * A SERVER span per request, when this process exports spans (telemetry/sdk.ts): a child of the caller's
 * span when the request carries a W3C `traceparent`, named by its operation (`POST findBySSN`) or route, with
 * the operation, its family, the face it came through, the status and the problem code; an error on 5xx.
 * The request runs in the span's context, so its database queries and core calls are its children and its
 * log lines carry its trace id (`withTraceIds`); the audit event keeps the trace id (`requestTraceId`).
 * No member data goes into a span: no body, header value or query string, and the accounts a call touched
 * only with `COREGATE_TRACE_ACCOUNT_NUMBERS=true`. Off, no span is made; a request with a valid
 * `traceparent` still has the caller's trace id in its log lines and its audit event, and passes the
 * caller's trace context on to a core as it came (telemetry/trace-context.ts).
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { TracingSettings } from '../config.js';
import { callerTraceId } from '../telemetry/trace-context.js';
import { requestLogger } from './logging.js';
import { activeTraceIds, coregateTracer, tracingEnabled } from '../telemetry/tracing.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The context of the request's span (tracing on): what its work runs in. */
    traceContext?: Context;
  }
}

/**
 * Fastify's logger options with the active span's `trace_id` and `span_id` in every line written inside a
 * request, when tracing is on; as they are otherwise.
 * @example Fastify({ logger: withTraceIds(withSafeErrorLogging({ level: 'info' })) })
 */
export function withTraceIds(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!tracingEnabled() || logger === undefined || logger === false) return logger;
  const options = logger === true ? {} : logger;
  return { ...options, mixin: activeTraceIds };
}

/**
 * Starts each request's span and runs the request in its context. Registered first, so that the bearer
 * check and everything after it are inside the span.
 * @example registerRequestTracing(app);
 */
export function registerRequestTracing(app: FastifyInstance): void {
  if (!tracingEnabled()) {
    // No span to name the lines: the caller's trace id does, bound to the request's logger as it is made.
    app.setChildLoggerFactory((logger, bindings, options, raw) => {
      const traceId = callerTraceId(raw.headers);
      return requestLogger(logger, traceId === undefined ? bindings : { ...bindings, trace_id: traceId }, options);
    });
    return;
  }
  // The span's ids are in each line (`withTraceIds`), written as it is.
  app.setChildLoggerFactory(requestLogger);
  const tracer = coregateTracer();
  app.addHook('onRequest', (request, _reply, done) => {
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const span = tracer.startSpan(
      request.method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': request.method, 'coregate.request_id': request.id },
      },
      parent,
    );
    request.traceContext = trace.setSpan(parent, span);
    context.with(request.traceContext, done);
  });
  // The body is read on the socket's events, outside the request's context: the request enters it again.
  app.addHook('preValidation', (request, _reply, done) =>
    request.traceContext ? context.with(request.traceContext, done) : done(),
  );
  app.addHook('onRequestAbort', async (request) => {
    const span = request.traceContext && trace.getSpan(request.traceContext);
    if (!span?.isRecording()) return;
    span.setAttribute('error.type', 'aborted');
    span.end();
  });
}

/** The edge a request came through, as the metrics name it. */
const faceOf = (request: FastifyRequest) =>
  request.url.startsWith('/SymXchange/') ? 'soap' : request.operation ? 'json' : undefined;

/** Names the request's span by what it reached, records how it ended, and ends it. */
function endRequestSpan(request: FastifyRequest, reply: FastifyReply, settings: TracingSettings): void {
  const span = request.traceContext && trace.getSpan(request.traceContext);
  if (!span?.isRecording()) return;
  const { operation } = request;
  const route = request.routeOptions.url;
  span.updateName(`${request.method} ${operation?.name ?? route ?? 'unmatched'}`);
  const face = faceOf(request);
  if (route !== undefined) span.setAttribute('http.route', route);
  if (face !== undefined) span.setAttribute('coregate.face', face);
  if (operation) {
    span.setAttribute('coregate.operation', operation.name);
    span.setAttribute('coregate.family', operation.family);
    span.setAttribute('coregate.service', operation.service);
  }
  if (request.sym !== undefined) span.setAttribute('coregate.sym', request.sym);
  span.setAttribute('http.response.status_code', reply.statusCode);
  if (request.problemCode !== undefined) span.setAttribute('coregate.problem.code', request.problemCode);
  if (request.coreOutcome) span.setAttribute('coregate.core.outcome', request.coreOutcome.outcome);
  if (settings.accountNumbers && request.auditAccounts && request.auditAccounts.length > 0)
    span.setAttribute('coregate.account_numbers', [...request.auditAccounts]);
  if (reply.statusCode >= 500) {
    span.setAttribute('error.type', request.problemCode ?? String(reply.statusCode));
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}

/**
 * What ends a request (metrics, log line, audit event), run inside the request's span, which then ends;
 * `ended` itself when tracing is off.
 * @example const requestEnded = tracedRequestEnd(config.tracing, (request, reply) => logRequest(request, reply));
 */
export function tracedRequestEnd(
  settings: TracingSettings,
  ended: (request: FastifyRequest, reply: FastifyReply) => void,
): (request: FastifyRequest, reply: FastifyReply) => void {
  if (!tracingEnabled()) return ended;
  return (request, reply) => {
    if (!request.traceContext) return ended(request, reply);
    context.with(request.traceContext, () => ended(request, reply));
    endRequestSpan(request, reply, settings);
  };
}

/**
 * The trace id of a request, for its audit event: its span's, or when tracing is off the one of the
 * caller's valid `traceparent`; null without either.
 * @example requestTraceId(request) // '4bf92f3577b34da6a3ce929d0e0e4736'
 */
export function requestTraceId(request: FastifyRequest): string | null {
  const span = request.traceContext && trace.getSpan(request.traceContext);
  if (span) return span.spanContext().traceId;
  return callerTraceId(request.headers) ?? null;
}
