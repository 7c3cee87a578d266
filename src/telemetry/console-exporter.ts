/**
 * `OTEL_TRACES_EXPORTER=console`: each span as one JSON line on stderr, the moment it ends, so that a trace
 * can be read (or piped to `jq`) with nothing else running. The SDK's own ConsoleSpanExporter prints
 * multi-line objects to stdout, where they would mix with the start banner and split on every line.
 * The line holds what an OTLP export holds of a span, in OTLP/JSON's names where it has them.
 */
import type { HrTime } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

const KINDS = ['INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'] as const;
const STATUSES = ['UNSET', 'OK', 'ERROR'] as const;

const iso = ([seconds, nanos]: HrTime) =>
  new Date(seconds * 1000 + Math.floor(nanos / 1e6))
    .toISOString()
    .replace('Z', `${String(nanos % 1e6).padStart(6, '0')}Z`);
const milliseconds = ([seconds, nanos]: HrTime) => seconds * 1000 + nanos / 1e6;

/**
 * One span as its line's object.
 * @example spanLine(span) // { traceId: '4bf9…', spanId: '00f0…', name: 'POST findBySSN', kind: 'SERVER', … }
 */
export function spanLine(span: ReadableSpan): Record<string, unknown> {
  const context = span.spanContext();
  return {
    traceId: context.traceId,
    spanId: context.spanId,
    ...(span.parentSpanContext ? { parentSpanId: span.parentSpanContext.spanId } : {}),
    name: span.name,
    kind: KINDS[span.kind] ?? span.kind,
    startTime: iso(span.startTime),
    durationMs: Math.round(milliseconds(span.duration) * 1000) / 1000,
    status: {
      code: STATUSES[span.status.code] ?? span.status.code,
      ...(span.status.message ? { message: span.status.message } : {}),
    },
    attributes: span.attributes,
    ...(span.events.length > 0
      ? {
          events: span.events.map((event) => ({
            name: event.name,
            time: iso(event.time),
            attributes: event.attributes,
          })),
        }
      : {}),
    service: span.resource.attributes['service.name'],
    scope: span.instrumentationScope.name,
  };
}

/** Writes each span it is given to stderr as one JSON line. */
export class StderrSpanExporter implements SpanExporter {
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    process.stderr.write(spans.map((span) => `${JSON.stringify(spanLine(span))}\n`).join(''));
    done({ code: ExportResultCode.SUCCESS });
  }

  async shutdown(): Promise<void> {}

  async forceFlush(): Promise<void> {}
}
