/**
 * The OpenTelemetry SDK of a serving process, started only when the `OTEL_*` variables configure an
 * exporter (config.ts, docs/tracing.md): a Node tracer provider with the AsyncLocalStorage context manager,
 * the W3C trace-context propagator alone (no baggage: a caller's baggage is not passed on to the core), a
 * batch span processor and the OTLP/HTTP exporter of the protocol asked for, and, with
 * `OTEL_TRACES_EXPORTER=console`, a simple processor writing each span to stderr as it ends
 * (console-exporter.ts). Its packages are imported here,
 * when it starts: a process that exports nothing never loads them. The exporter reads its endpoint,
 * headers, timeout and compression from the standard variables itself; the provider its sampler
 * (`OTEL_TRACES_SAMPLER`) and span limits; the batch processor `OTEL_BSP_*`.
 */
import { enableTracing } from './tracing.js';

/** What starting the SDK needs of the settings (config.ts `TracingSettings`). */
export interface SdkSettings {
  /** Spans are exported: an exporter is configured and the SDK not disabled. */
  readonly export: boolean;
  /** Where spans go: over OTLP/HTTP, to stderr, or both. */
  readonly exporters: readonly ('otlp' | 'console')[];
  /** The OTLP/HTTP encoding: protobuf (the specification's default) or JSON. */
  readonly protocol: 'http/protobuf' | 'http/json';
}

let shutdown: (() => Promise<void>) | undefined;

/**
 * Starts the SDK when the settings export spans; otherwise does nothing and loads nothing. Each process that
 * serves (each `serve --workers` worker) starts its own.
 * @example await startTracing(config.tracing);
 */
export async function startTracing(settings: SdkSettings): Promise<void> {
  if (!settings.export || shutdown) return;
  const [
    { NodeTracerProvider },
    { BatchSpanProcessor, SimpleSpanProcessor },
    { W3CTraceContextPropagator },
    resources,
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
  ]);
  const spanProcessors = [];
  if (settings.exporters.includes('otlp')) {
    const exporters = await (settings.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'));
    spanProcessors.push(new BatchSpanProcessor(new exporters.OTLPTraceExporter()));
  }
  if (settings.exporters.includes('console')) {
    // Each span is written as it ends: a line on a terminal is of use at once, not five seconds later.
    const { StderrSpanExporter } = await import('./console-exporter.js');
    spanProcessors.push(new SimpleSpanProcessor(new StderrSpanExporter()));
  }
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over coregate's own name.
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'coregate', 'process.pid': process.pid }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors,
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  enableTracing();
  shutdown = () => provider.shutdown();
}

/**
 * Exports the spans still buffered and stops the SDK (on SIGTERM, before the process exits); nothing when it
 * was not started.
 * @example await stopTracing();
 */
export async function stopTracing(): Promise<void> {
  const stop = shutdown;
  if (!stop) return;
  await stop().catch(() => undefined);
}
