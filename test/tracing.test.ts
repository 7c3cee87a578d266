/**
 * Tracing with OpenTelemetry (docs/tracing.md), end to end: a coregate store serving its SymXchange SOAP face
 * is the core, a coregate in gateway mode stands in front of it, both real processes exporting over OTLP/HTTP
 * to a receiver this test runs. One JSON call carrying a caller's `traceparent` makes one trace across both
 * processes: the gateway's request span, its core call, the core's request span, each one's database queries,
 * chained by their parent ids; the trace id is in their log lines and audit events, and no member data is in
 * any span. Without the `OTEL_*` variables no SDK module is loaded at all.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/database/database.js';
import { SpanKind } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { operationPath } from '../src/operations/types.js';
import { OPERATIONS } from '../src/operations/index.js';
import { demoExamples } from '../src/seed/examples.js';
import { seedDatabase } from '../src/seed/load.js';
import { enableTracing, statementOf } from '../src/telemetry/tracing.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { serve, SOURCE_CLI, spawnServe, stop, type Served } from './support/serve-process.js';

/** The command line from source, recording the OpenTelemetry modules it loads (support/loaded-modules.mjs). */
const TRACED_CLI = ['--import', 'tsx', '--import', './test/support/loaded-modules.mjs', SOURCE_CLI.at(-1)!];

const CALLER_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';
const SSN = '384856358';
const ACCOUNTS = ['0000000005', '0000000013'];
const REQUEST_ID = 'tracing-test-1';

const SERVER = 2;
const CLIENT = 3;

/** OTLP/JSON as the exporter sends it (`http/json`). */
interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
  status?: { code?: number };
}
interface ExportRequest {
  resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
}

/** A span received, with the service that sent it and its attributes as plain values. */
interface Received extends OtlpSpan {
  service: string;
  attrs: Record<string, unknown>;
}

function plain(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(plain);
  return value;
}

const attributesOf = (attributes: OtlpAttribute[] = []) =>
  Object.fromEntries(attributes.map(({ key, value }) => [key, plain(value)]));

/** An OTLP/HTTP receiver: POST /v1/traces, JSON bodies only. */
async function otlpReceiver(): Promise<{ url: string; spans: Received[]; server: Server }> {
  const spans: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') return void response.writeHead(404).end();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExportRequest;
      for (const { resource, scopeSpans } of body.resourceSpans) {
        const service = String(attributesOf(resource.attributes)['service.name']);
        for (const { spans: sent } of scopeSpans)
          for (const span of sent) spans.push({ ...span, service, attrs: attributesOf(span.attributes) });
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server };
}

/** The variables that make a process export to `url` as `service`, in JSON, without waiting long to send. */
const otelEnv = (url: string, service: string) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_SERVICE_NAME: service,
  OTEL_BSP_SCHEDULE_DELAY: '100',
});

/** None of the OTEL_* variables: whatever this test's own environment holds is cleared. */
const NO_OTEL = Object.fromEntries(
  Object.keys(process.env)
    .filter((k) => k.startsWith('OTEL_'))
    .map((k) => [k, '']),
);

/** The JSON log lines of a process's output. */
const logLines = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** The OpenTelemetry SDK and exporter modules a process loaded (the API, a no-op without them, aside). */
const sdkModules = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((url) => /@opentelemetry\/(sdk-|exporter-|resources|core\/|context-async-hooks)/.test(url))
    : [];

/** The one span of a list, failing with the names of all when there is not exactly one. */
function only<T extends { name: string }>(spans: T[], what: string): T {
  assert.equal(spans.length, 1, `one ${what}: ${JSON.stringify(spans.map((s) => s.name))}`);
  return spans[0]!;
}

async function auditEvents(dataDir: string) {
  const database = await openDatabase({ dataDir: join(dataDir, 'pglite') });
  try {
    const { rows } = await sql<{ request_id: string; operation: string; trace_id: string | null }>`
      select request_id, operation, trace_id from audit_event order by id`.execute(database.db);
    return rows;
  } finally {
    await database.close();
  }
}

describe('tracing across a gateway and its core, two processes exporting to one OTLP receiver', () => {
  const coreDir = mkdtempSync(join(tmpdir(), 'coregate-traced-core-'));
  const gatewayDir = mkdtempSync(join(tmpdir(), 'coregate-traced-gateway-'));
  let receiver: Awaited<ReturnType<typeof otlpReceiver>>;
  let core: Served;
  let gateway: Served;
  let coreOutput = '';
  let gatewayOutput = '';
  let adminPassword: string;
  let apiToken: string;
  let trace: Received[];

  const start = (dataDir: string, env: NodeJS.ProcessEnv, ready: RegExp) =>
    serve({
      cli: TRACED_CLI,
      env: {
        ...NO_OTEL,
        COREGATE_DATA_DIR: dataDir,
        PORT: '0',
        DATABASE_URL: '',
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
        LOADED_MODULES_FILE: join(dataDir, 'loaded-modules.txt'),
        ...env,
      },
      ready,
    });

  before(async () => {
    receiver = await otlpReceiver();
    core = await start(
      coreDir,
      { COREGATE_SOAP_AUTH: 'credentials', ...otelEnv(receiver.url, 'coregate-core') },
      /Try it:\n.*\n/,
    );
    gateway = await start(
      gatewayDir,
      {
        COREGATE_CORE: 'symxchange',
        COREGATE_SYMXCHANGE_URL: core.baseUrl,
        ...otelEnv(receiver.url, 'coregate-gateway'),
      },
      /Demo token:/,
    );
    ({ adminPassword } = JSON.parse(readFileSync(join(coreDir, 'demo-credentials.json'), 'utf8')));
    ({ apiToken } = JSON.parse(readFileSync(join(gatewayDir, 'demo-credentials.json'), 'utf8')));

    const response = await fetch(`${gateway.baseUrl}/gw/627/persistent/findby/findBySSN`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${apiToken}`,
        'content-type': 'application/json',
        'x-request-id': REQUEST_ID,
        traceparent: `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-01`,
        tracestate: 'caller=tested',
      },
      body: JSON.stringify({ Credentials: { AdministrativeCredentials: { Password: adminPassword } }, SSN }),
    });
    assert.equal(response.status, 200, await response.clone().text());
    assert.deepEqual(await response.json(), { AccountNumber: ACCOUNTS, MessageId: 'findBySSN' });

    // Both request spans arrive within a few batch delays.
    const deadline = Date.now() + 15_000;
    const serverSpans = () => receiver.spans.filter((s) => s.traceId === CALLER_TRACE_ID && s.kind === SERVER);
    while (serverSpans().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    // SIGTERM: each process writes its audit events and sends its last spans before it exits.
    coreOutput = core.output();
    gatewayOutput = gateway.output();
    await stop(gateway.child);
    await stop(core.child);
    coreOutput = core.output();
    gatewayOutput = gateway.output();
    trace = receiver.spans.filter((span) => span.traceId === CALLER_TRACE_ID);
  });

  after(async () => {
    for (const served of [gateway, core]) if (served && served.child.exitCode === null) await stop(served.child);
    receiver?.server.close();
    rmSync(coreDir, { recursive: true, force: true });
    rmSync(gatewayDir, { recursive: true, force: true });
  });

  const serverSpan = (service: string) =>
    only(
      trace.filter((s) => s.service === service && s.kind === SERVER),
      `server span of ${service}`,
    );

  test("spans from both processes share the caller's trace id", () => {
    assert.deepEqual(new Set(trace.map((s) => s.service)), new Set(['coregate-gateway', 'coregate-core']));
  });

  test("the gateway's request span is the caller's child and says what the call was", () => {
    const span = serverSpan('coregate-gateway');
    assert.equal(span.parentSpanId, CALLER_SPAN_ID);
    assert.equal(span.name, 'POST findBySSN');
    assert.equal(span.attrs['coregate.operation'], 'findBySSN');
    assert.equal(span.attrs['coregate.family'], 'P1');
    assert.equal(span.attrs['coregate.face'], 'json');
    assert.equal(span.attrs['http.route'], '/gw/627/persistent/findby/findBySSN');
    assert.equal(span.attrs['http.response.status_code'], 200);
    assert.equal(span.attrs['coregate.core.outcome'], 'ok');
  });

  test("the gateway's core call is a client span of its request, and the core's request span its child", () => {
    const gatewayRequest = serverSpan('coregate-gateway');
    const call = only(
      trace.filter((s) => s.service === 'coregate-gateway' && s.kind === CLIENT && s.attrs['rpc.system'] === 'soap'),
      'core call',
    );
    assert.equal(call.parentSpanId, gatewayRequest.spanId);
    assert.equal(call.name, 'findby/findBySSN');
    assert.equal(call.attrs['rpc.service'], 'findby');
    assert.match(String(call.attrs['coregate.core.soap_action']), /\/findBySSN$/);
    assert.equal(call.attrs['coregate.core.attempt'], 1);
    assert.equal(call.attrs['coregate.core.outcome'], 'ok');
    assert.equal(call.attrs['server.address'], '127.0.0.1');
    assert.equal(call.attrs['http.response.status_code'], 200);

    const coreRequest = serverSpan('coregate-core');
    assert.equal(coreRequest.parentSpanId, call.spanId);
    assert.equal(coreRequest.name, 'POST findBySSN');
    assert.equal(coreRequest.attrs['coregate.face'], 'soap');
    assert.equal(coreRequest.attrs['coregate.family'], 'P1');
    assert.equal(coreRequest.attrs['http.response.status_code'], 200);
  });

  test("each process's database queries are children of its request span, named by their statement", () => {
    for (const service of ['coregate-gateway', 'coregate-core']) {
      const request = serverSpan(service);
      const queries = trace.filter((s) => s.service === service && s.attrs['db.system'] === 'postgresql');
      assert.ok(queries.length > 0, `${service} traced its queries`);
      for (const query of queries) {
        assert.equal(query.parentSpanId, request.spanId, `${service}: ${query.name}`);
        assert.equal(query.kind, CLIENT);
        assert.match(query.name, /^[A-Z]+( [a-z_][a-z0-9_]*)?$/);
        assert.equal(query.name, query.attrs['db.query.summary']);
      }
    }
    assert.ok(trace.some((s) => s.service === 'coregate-core' && /^SELECT share_name$/.test(s.name)));
  });

  test('no span names or carries member data: SSN, password, token, account numbers', () => {
    const text = JSON.stringify(trace.map(({ name, attributes }) => ({ name, attributes })));
    for (const secret of [SSN, '384-85-6358', adminPassword, apiToken, ...ACCOUNTS])
      assert.ok(!text.includes(secret), `a span holds ${secret === adminPassword ? 'the password' : secret}`);
  });

  test("every log line of the request carries the trace id, in the gateway's log and the core's", () => {
    const gatewayLines = logLines(gatewayOutput).filter((line) => line.reqId === REQUEST_ID);
    assert.ok(gatewayLines.some((line) => line.msg === 'request'));
    for (const line of gatewayLines) assert.equal(line.trace_id, CALLER_TRACE_ID, JSON.stringify(line));
    const coreRequest = logLines(coreOutput).find(
      (line) => line.msg === 'request' && line.operation === 'P1:findBySSN',
    );
    assert.ok(coreRequest, 'the core logged the request');
    const coreLines = logLines(coreOutput).filter((line) => line.reqId === coreRequest.reqId);
    for (const line of coreLines) assert.equal(line.trace_id, CALLER_TRACE_ID, JSON.stringify(line));
    assert.equal(coreRequest.span_id, serverSpan('coregate-core').spanId);
  });

  test('the audit events of the call, at the gateway and at the core, keep the trace id', async () => {
    const atGateway = (await auditEvents(gatewayDir)).filter((event) => event.request_id === REQUEST_ID);
    assert.deepEqual(
      atGateway.map((event) => [event.operation, event.trace_id]),
      [['P1:findBySSN', CALLER_TRACE_ID]],
    );
    const atCore = (await auditEvents(coreDir)).filter((event) => event.operation === 'P1:findBySSN');
    assert.deepEqual(
      atCore.map((event) => event.trace_id),
      [CALLER_TRACE_ID],
    );
  });

  test('both processes loaded the SDK (the check below would see it)', () => {
    assert.notDeepEqual(sdkModules(join(gatewayDir, 'loaded-modules.txt')), []);
    assert.notDeepEqual(sdkModules(join(coreDir, 'loaded-modules.txt')), []);
  });
});

describe('without the OTEL_* variables', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-untraced-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test('no SDK module is loaded, and a call without traceparent is answered as ever', async () => {
    const modules = join(dataDir, 'loaded-modules.txt');
    const served = await serve({
      cli: TRACED_CLI,
      args: ['--no-demo'],
      env: {
        ...NO_OTEL,
        COREGATE_DATA_DIR: dataDir,
        PORT: '0',
        DATABASE_URL: '',
        LOG_LEVEL: 'info',
        LOADED_MODULES_FILE: modules,
      },
    });
    try {
      const health = await fetch(`${served.baseUrl}/health`);
      assert.equal(health.status, 200);
      const call = await fetch(`${served.baseUrl}/gw/627/persistent/findby/findBySSN`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ SSN }),
      });
      assert.equal(call.status, 401);
    } finally {
      await stop(served.child);
    }
    assert.ok(existsSync(modules), 'the module recorder ran (it records the API, always loaded)');
    assert.deepEqual(sdkModules(modules), []);
    for (const line of logLines(served.output())) assert.equal(line.trace_id, undefined);
  });
});

describe('OTEL_TRACES_EXPORTER=console', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-console-traced-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  test("prints each span to stderr as one JSON line, the request's span in the caller's trace", async () => {
    const starting = spawnServe({
      args: ['--no-demo'],
      env: { ...NO_OTEL, OTEL_TRACES_EXPORTER: 'console', COREGATE_DATA_DIR: dataDir, PORT: '0', DATABASE_URL: '' },
    });
    let stderr = '';
    let stdout = '';
    starting.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    starting.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const served = await starting.listening;
    const spanOfCall = () =>
      stderr
        .split('\n')
        .filter((line) => line.startsWith('{"traceId"'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((span) => span.traceId === CALLER_TRACE_ID && span.kind === 'SERVER');
    try {
      const health = await fetch(`${served.baseUrl}/health`, {
        headers: { traceparent: `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-01` },
      });
      assert.equal(health.status, 200);
      // The span ends once the answer is sent: its line follows the response.
      while (!spanOfCall() && served.child.exitCode === null) await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      await stop(served.child);
    }
    const span = spanOfCall();
    assert.ok(span, `no span line of the call on stderr:\n${stderr}`);
    assert.equal(span.parentSpanId, CALLER_SPAN_ID);
    assert.equal(span.name, 'GET /health');
    assert.equal(span.service, 'coregate');
    assert.equal((span.attributes as Record<string, unknown>)['http.response.status_code'], 200);
    assert.match(String(span.startTime), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/);
    assert.equal(typeof span.durationMs, 'number');
    assert.doesNotMatch(stdout, /"traceId"/, 'no span goes to stdout');
  });
});

describe('tracing settings', () => {
  test('spans are exported only when an exporter is configured, and not when the SDK is disabled', () => {
    const exported = (env: NodeJS.ProcessEnv) => loadConfig(env).tracing.export;
    assert.equal(exported({}), false);
    assert.equal(exported({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(exported({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
    assert.equal(exported({ OTEL_TRACES_EXPORTER: 'otlp' }), true);
    assert.equal(exported({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }), false);
    assert.equal(exported({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' }), false);
    assert.equal(exported({ OTEL_TRACES_EXPORTER: 'console' }), true);
    assert.deepEqual(loadConfig({ OTEL_TRACES_EXPORTER: 'console' }).tracing.exporters, ['console']);
    assert.deepEqual(loadConfig({ OTEL_TRACES_EXPORTER: 'console,otlp' }).tracing.exporters, ['otlp', 'console']);
    assert.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).tracing.exporters, ['otlp']);
    assert.equal(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp' }).tracing.protocol, 'http/protobuf');
    assert.equal(
      loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }).tracing.protocol,
      'http/json',
    );
    assert.equal(loadConfig({}).tracing.accountNumbers, false);
  });

  test('an exporter or protocol coregate lacks stops the start naming the variable', () => {
    assert.throws(
      () => loadConfig({ OTEL_TRACES_EXPORTER: 'zipkin' }),
      /^Error: OTEL_TRACES_EXPORTER must be otlp, console or none/,
    );
    assert.throws(
      () => loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      /^Error: OTEL_EXPORTER_OTLP_PROTOCOL must be one of http\/protobuf, http\/json, got "grpc"/,
    );
  });
});

describe('statement names', () => {
  test('a query is named by its first keyword and its table, never by a value', () => {
    const cases: [string, string][] = [
      ['select "account_number" from "share_name" where "ssn_hmac" = $1', 'SELECT share_name'],
      [
        'insert into "audit_event" ("request_id") select "request_id" from json_populate_recordset($1)',
        'INSERT audit_event',
      ],
      ['update "share" set "description" = $1 where "account_number" = $2', 'UPDATE share'],
      ['delete from idempotency_key where created_at < $1', 'DELETE idempotency_key'],
      ['with moved as (select 1) select * from "collateral" where x = 1', 'WITH collateral'],
      ['commit', 'COMMIT'],
      ["select 'a literal 123456789' as x", 'SELECT'],
    ];
    for (const [text, name] of cases) assert.equal(statementOf(text).summary, name, text);
  });
});

describe('in one process, with the SDK registered (the last suite here: it turns tracing on for the process)', () => {
  const exporter = new InMemorySpanExporter();
  const findBySSN = operationPath(OPERATIONS.find((op) => op.name === 'findBySSN')!);
  const examples = demoExamples(627, 50);
  const traceparent = (flags: string) => `00-${CALLER_TRACE_ID}-${CALLER_SPAN_ID}-${flags}`;

  before(() => {
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register({ propagator: new W3CTraceContextPropagator() });
    enableTracing();
  });

  for (const backend of BACKENDS) {
    describe(`on ${backend.name}`, () => {
      let harness: Harness;
      before(async () => {
        harness = await createHarness(backend, {
          tracing: { ...loadConfig({}).tracing, accountNumbers: true },
        });
        await seedDatabase(harness.database, harness.secrets, { accounts: 50, seed: 627 });
      });
      after(() => harness?.close());

      const spansOf = (spans: ReadableSpan[]) => spans.filter((s) => s.spanContext().traceId === CALLER_TRACE_ID);
      const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

      test("a call's queries are its span's children, named on this driver", async () => {
        exporter.reset();
        const { ssn, accountNumbers } = examples.sharedSsn;
        const response = await harness.call(findBySSN, { SSN: ssn }, { traceparent: traceparent('01') });
        assert.equal(response.statusCode, 200, response.body);
        const spans = spansOf(exporter.getFinishedSpans());
        const request = only(
          spans.filter((s) => s.kind === SpanKind.SERVER),
          'request span',
        );
        assert.equal(parentOf(request), CALLER_SPAN_ID);
        assert.equal(request.name, 'POST findBySSN');
        assert.equal(request.attributes['coregate.family'], 'P1');
        // COREGATE_TRACE_ACCOUNT_NUMBERS=true: the accounts the lookup found are named, and only then.
        assert.deepEqual(request.attributes['coregate.account_numbers'], accountNumbers);
        const queries = spans.filter((s) => s.attributes['db.system'] === 'postgresql');
        assert.ok(queries.length > 0);
        for (const query of queries) {
          assert.equal(parentOf(query), request.spanContext().spanId, query.name);
          assert.equal(query.attributes['coregate.db.driver'], backend.name === 'postgres' ? 'pg' : 'pglite');
        }
      });

      test('a trace the caller did not sample exports nothing, yet its log line and audit event name it', async () => {
        exporter.reset();
        const response = await harness.call(
          findBySSN,
          { SSN: examples.sharedSsn.ssn },
          { traceparent: traceparent('00'), 'x-request-id': 'unsampled-1' },
        );
        assert.equal(response.statusCode, 200, response.body);
        assert.deepEqual(spansOf(exporter.getFinishedSpans()), []);
        const line = harness
          .logs()
          .map((text) => JSON.parse(text) as Record<string, unknown>)
          .find((entry) => entry.reqId === 'unsampled-1' && entry.msg === 'request');
        assert.equal(line?.trace_id, CALLER_TRACE_ID);
        await harness.app.audit.flush();
        const { rows } = await sql<{ trace_id: string }>`
          select trace_id from audit_event where request_id = 'unsampled-1'`.execute(harness.database.db);
        assert.deepEqual(rows, [{ trace_id: CALLER_TRACE_ID }]);
      });
    });
  }
});
