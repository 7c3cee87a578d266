/**
 * The caller's W3C trace context with tracing off (no `OTEL_*` variables, so no span and no SDK): a gateway
 * takes no part in the trace, so it passes the caller's valid `traceparent` and `tracestate` to the core as
 * they came (a real HTTP server records what it receives), and names the caller's trace id in the
 * request's log line and its audit event. An invalid `traceparent` goes nowhere, nor its `tracestate`; a
 * `tracestate` beyond W3C's bounds is dropped alone. docs/tracing.md has tracing on.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { CORE_OPERATIONS, OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { createSymxCodec } from '../src/symxchange/codec.js';
import { callerTraceContext, traceIdOf, validTracestate } from '../src/telemetry/trace-context.js';
import { tracingEnabled } from '../src/telemetry/tracing.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { startUpstream, type Upstream } from './support/upstream.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
const TRACESTATE = 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE';

const lookup = OPERATIONS.find((op) => op.name === 'findByHomeUser' && op.family === 'P1')!;
const codec = createSymxCodec({ operations: CORE_OPERATIONS, schemas: SHARED_SCHEMAS });

/** A `tracestate` of `members` members of `valueLength`-character values. */
const tracestateOf = (members: number, valueLength = 1) =>
  Array.from({ length: members }, (_, i) => `k${i}=${'v'.repeat(valueLength)}`).join(',');

describe('which trace contexts are passed on (W3C Trace Context)', () => {
  test('a traceparent of version 00 names its trace; a later version is read by its first four fields', () => {
    assert.equal(traceIdOf(TRACEPARENT), TRACE_ID);
    assert.equal(traceIdOf(`01-${TRACE_ID}-00f067aa0ba902b7-01`), TRACE_ID);
    assert.equal(traceIdOf(`cc-${TRACE_ID}-00f067aa0ba902b7-01-what-comes-later`), TRACE_ID);
  });

  test('a traceparent out of the grammar, of version ff, or with an id of zeros names none', () => {
    for (const invalid of [
      '',
      'garbage',
      TRACEPARENT.toUpperCase(),
      `${TRACEPARENT}-extra`,
      `ff-${TRACE_ID}-00f067aa0ba902b7-01`,
      `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID}-${'0'.repeat(16)}-01`,
      `00-${TRACE_ID.slice(1)}-00f067aa0ba902b7-01`,
      `00-${TRACE_ID}-00f067aa0ba902b7-1`,
      `${TRACEPARENT}, ${TRACEPARENT}`,
      `cc-${TRACE_ID}-00f067aa0ba902b7-01-${'x'.repeat(300)}`,
    ])
      assert.equal(traceIdOf(invalid), undefined, invalid);
  });

  test('a tracestate is kept within 512 characters and 32 members of the grammar, each key once', () => {
    assert.ok(validTracestate(TRACESTATE));
    assert.ok(validTracestate('a=1, ,b=2 '), 'empty members and spaces around them');
    assert.ok(validTracestate('tenant@system=value with spaces'));
    assert.ok(validTracestate(tracestateOf(32)));
    assert.ok(validTracestate(tracestateOf(4, 124)), `${tracestateOf(4, 124).length} characters`);
    assert.ok(!validTracestate(tracestateOf(33)), '33 members');
    assert.ok(!validTracestate(tracestateOf(4, 125)), `${tracestateOf(4, 125).length} characters`);
    for (const invalid of ['Upper=1', 'a=1,a=2', 'a=', 'a=x=y', '=1', 'a=1;b=2'])
      assert.ok(!validTracestate(invalid), invalid);
  });

  test('a tracestate goes only with a valid traceparent, and is dropped alone when it is invalid', () => {
    assert.deepEqual(callerTraceContext({ traceparent: TRACEPARENT, tracestate: TRACESTATE }), {
      traceparent: TRACEPARENT,
      tracestate: TRACESTATE,
      traceId: TRACE_ID,
    });
    assert.equal(callerTraceContext({ traceparent: 'garbage', tracestate: TRACESTATE }), undefined);
    assert.deepEqual(callerTraceContext({ traceparent: TRACEPARENT, tracestate: tracestateOf(33) }), {
      traceparent: TRACEPARENT,
      traceId: TRACE_ID,
    });
  });
});

for (const backend of BACKENDS) {
  describe(`a gateway with tracing off passes the caller's trace context on, on ${backend.name}`, () => {
    let upstream: Upstream;
    let gateway: Harness;
    let calls = 0;
    before(async () => {
      upstream = await startUpstream();
      // The core answers every lookup, echoing its MessageId.
      upstream.behave((received, response) => {
        const messageId = /MessageId="([^"]*)"/.exec(received.body)?.[1] ?? '';
        const answer = codec.encodeResponse(lookup, { AccountNumber: '0000000042', MessageId: lookup.name }, messageId);
        response.writeHead(200, { 'content-type': 'text/xml; charset=utf-8' }).end(answer);
      });
      const { core, symxchange } = loadConfig({ COREGATE_CORE: 'symxchange', COREGATE_SYMXCHANGE_URL: upstream.url });
      gateway = await createHarness(backend, { core, symxchange });
    });
    after(async () => {
      await gateway?.close();
      await upstream?.close();
    });

    /** A lookup through the gateway with `headers`: what the core received, the request's log line and its audit event's trace id. */
    async function lookUp(headers: Record<string, string>) {
      const requestId = `trace-context-${backend.name}-${(calls += 1)}`;
      const response = await gateway.call(
        operationPath(lookup),
        { HomeBankingUserName: 'member42' },
        { ...headers, 'x-request-id': requestId },
      );
      assert.equal(response.statusCode, 200, response.body);
      const received = upstream.received.at(-1)!;
      const line = gateway
        .logs()
        .map((text) => JSON.parse(text) as Record<string, unknown>)
        .find((entry) => entry.reqId === requestId && entry.msg === 'request');
      assert.ok(line, 'the request has its log line');
      // The call's event is recorded once its answer has gone (onResponse), which may be after the answer arrived.
      let rows: { trace_id: string | null }[] = [];
      for (let attempt = 0; attempt < 50 && rows.length === 0; attempt += 1) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
        await gateway.app.audit.flush();
        ({ rows } = await sql<{ trace_id: string | null }>`
          select trace_id from audit_event where request_id = ${requestId}`.execute(gateway.database.db));
      }
      assert.equal(rows.length, 1, 'the call has its audit event');
      return { headers: received.headers, line, auditTraceId: rows[0]!.trace_id };
    }

    test('tracing is off in this process', () => assert.equal(tracingEnabled(), false));

    test("a valid traceparent and tracestate reach the core unchanged, and the caller's trace id is in the request's log line and audit event", async () => {
      const { headers, line, auditTraceId } = await lookUp({ traceparent: TRACEPARENT, tracestate: TRACESTATE });
      assert.equal(headers.traceparent, TRACEPARENT);
      assert.equal(headers.tracestate, TRACESTATE);
      assert.equal(line.trace_id, TRACE_ID);
      assert.equal(auditTraceId, TRACE_ID);
    });

    test('an invalid traceparent is passed on to no one, nor its tracestate, and names no trace', async () => {
      const { headers, line, auditTraceId } = await lookUp({
        traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`,
        tracestate: TRACESTATE,
      });
      assert.equal(headers.traceparent, undefined);
      assert.equal(headers.tracestate, undefined);
      assert.equal(line.trace_id, undefined);
      assert.equal(auditTraceId, null);
    });

    test("a tracestate beyond W3C's bounds is dropped, and the traceparent still goes", async () => {
      const { headers, auditTraceId } = await lookUp({ traceparent: TRACEPARENT, tracestate: tracestateOf(33) });
      assert.equal(headers.traceparent, TRACEPARENT);
      assert.equal(headers.tracestate, undefined);
      assert.equal(auditTraceId, TRACE_ID);
    });

    test('a call without a trace context sends none to the core and names no trace', async () => {
      const { headers, line, auditTraceId } = await lookUp({});
      assert.equal(headers.traceparent, undefined);
      assert.equal(line.trace_id, undefined);
      assert.equal(auditTraceId, null);
    });
  });
}
