/**
 * Gateway mode against a core that misbehaves (a real HTTP server answering as each test sets it): every
 * failure is a problem+json with a stable code, never a 500 and never a hang. Faults and error elements are
 * mapped by their structure (a Client fault's words by the fault rules: core-fault-rules.test.ts), and what
 * the core wrote reaches the log, never the caller; timeouts, refusals,
 * a core that never accepts, resets mid-body (a read is sent once more, a write never), slow drips, HTML
 * pages, gateway statuses with Retry-After, oversized headers, huge, truncated and contract-breaking XML,
 * elements a newer core adds and lists longer than the maximum; the circuit breaker and /ready; X-Request-Id
 * as the SOAP MessageId; the gateway's settings checked at start.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../src/config.js';
import { problemBody, Problem } from '../src/contract/problems.js';
import { CORE_OPERATIONS, OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { readAudit } from '../src/store/audit.js';
import { createSymxCodec } from '../src/symxchange/codec.js';
import { faultEnvelope } from '../src/symxchange/faults.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { CLI } from './support/serve-process.js';
import { closedPort, startUpstream, type Behaviour, type Upstream } from './support/upstream.js';

const codec = createSymxCodec({ operations: CORE_OPERATIONS, schemas: SHARED_SCHEMAS });
const operation = (name: string, family: 'P1' | 'P2') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;
/** An operation of the core's WSDL the JSON API reaches only through another (a derived list's paged sibling). */
const wireOperation = (name: string) => CORE_OPERATIONS.find((op) => op.name === name && op.family === 'P2')!;
const lookup = operation('findByHomeUser', 'P1');
const bySsn = operation('findBySSN', 'P1');
const update = operation('updateShareHoldByID', 'P2');
const withChildren = operation('getCollateralSelectFieldsFilterChildren', 'P2');
const trackingList = operation('getCollateralTrackingListSelectFields', 'P2');
const trackingPage = operation('getCollateralTrackingPagedList', 'P2');
const trackingWirePage = wireOperation('getCollateralTrackingPagedListSelectFields');
const LOOKUP_BODY = { HomeBankingUserName: 'member42' };
const UPDATE_BODY = {
  AccountNumber: '0000000042',
  ShareId: '0001',
  ShareHoldLocator: 1,
  ShareHoldUpdatableFields: { Reference1: 'ONE' },
};
const TIMEOUT_MS = 1000;
const CONNECT_TIMEOUT_MS = 250;
const LIST_MAXIMUM = 5;
const MAX_ANSWER_BYTES = 1024 * 1024;
const XML = { 'content-type': 'text/xml; charset=utf-8' };

const messageIdOf = (body: string) => /MessageId="([^"]*)"/.exec(body)?.[1] ?? '';

/** The core's answer to the lookup, as a core writes it, echoing the request's MessageId. */
function lookupAnswer(body: string, accountNumber = '0000000042'): string {
  return codec.encodeResponse(lookup, { AccountNumber: accountNumber, MessageId: lookup.name }, messageIdOf(body));
}

/** A lookup answer whose SingleResponse is `inner` (an error element, or content a newer core writes). */
const lookupAnswerHolding = (body: string, attributes: string, inner: string) =>
  lookupAnswer(body).replace(
    /<SingleResponse ([^>]*)>.*<\/SingleResponse>/,
    `<SingleResponse $1${attributes}>${inner}</SingleResponse>`,
  );

/** A SOAP 1.1 Fault as a core writes it: no coregate problem in its detail. */
const coreFault = (faultstring: string, detail = '', faultcode = 'S:Server') =>
  `<?xml version="1.0"?><S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><S:Fault>` +
  `<faultcode>${faultcode}</faultcode><faultstring>${faultstring}</faultstring>${detail ? `<detail>${detail}</detail>` : ''}` +
  `</S:Fault></S:Body></S:Envelope>`;

/** The Fault coregate's own SOAP face answers with a problem: what a coregate acting as the core sends. */
const coregateFault = (status: number, code: ConstructorParameters<typeof Problem>[1], detail: string) =>
  faultEnvelope(problemBody(new Problem(status, code, detail)));

const answerWith = (status: number, headers: Record<string, string>, text: string) => (response: ServerResponse) =>
  response.writeHead(status, headers).end(text);

/** A behaviour answering every call with the same status, headers and text. */
const replyWith =
  (status: number, headers: Record<string, string>, text: string): Behaviour =>
  (_received, response) =>
    answerWith(status, headers, text)(response);

const gatewaySettings = (env: Record<string, string>) => {
  const config = loadConfig({ COREGATE_CORE: 'symxchange', ...env });
  return { core: config.core, symxchange: config.symxchange };
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A port whose listener never accepts: its thread is blocked, so nothing calls accept(), and its backlog is
 * filled, so the kernel drops every further SYN and a connection to it never completes.
 */
async function neverAccepting(): Promise<{ readonly port: number; close(): Promise<void> }> {
  const listener = new Worker(
    `const { createServer } = require('node:net');
     const { parentPort } = require('node:worker_threads');
     const server = createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
       parentPort.postMessage(server.address().port);
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
     });`,
    { eval: true },
  );
  const [port] = (await once(listener, 'message')) as [number];
  const fillers: Socket[] = [];
  for (;;) {
    const filler = connect(port, '127.0.0.1').on('error', () => undefined);
    fillers.push(filler);
    const connected = await Promise.race([once(filler, 'connect').then(() => true), sleep(300).then(() => false)]);
    if (!connected) break;
    if (fillers.length > 64) throw new Error('the backlog of the listener does not fill');
  }
  return {
    port,
    async close() {
      for (const filler of fillers) filler.destroy();
      await listener.terminate();
    },
  };
}

/** The log lines of one request id, parsed. */
const logsOf = (gateway: Harness, requestId: string) =>
  gateway
    .logs()
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.reqId === requestId);

for (const backend of BACKENDS) {
  describe(`gateway mode against a misbehaving core, on ${backend.name}`, () => {
    let upstream: Upstream;
    let gateway: Harness;
    let refusing: number;
    let stalled: number;
    let stalledCore: Awaited<ReturnType<typeof neverAccepting>>;

    before(async () => {
      upstream = await startUpstream();
      stalledCore = await neverAccepting();
      [refusing, stalled] = [700, 701];
      gateway = await createHarness(backend, {
        ...gatewaySettings({
          COREGATE_SYMXCHANGE_URL: upstream.url,
          [`COREGATE_SYMXCHANGE_URL_${refusing}`]: `http://127.0.0.1:${await closedPort()}`,
          [`COREGATE_SYMXCHANGE_URL_${stalled}`]: `http://127.0.0.1:${stalledCore.port}`,
          COREGATE_SYMXCHANGE_TIMEOUT_MS: String(TIMEOUT_MS),
          COREGATE_SYMXCHANGE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
          COREGATE_SYMXCHANGE_MAX_ANSWER_BYTES: String(MAX_ANSWER_BYTES),
          COREGATE_SYMXCHANGE_DEVICE_TYPE: 'HOMEBANKING',
          COREGATE_SYMXCHANGE_DEVICE_NUMBER: '42',
          // This suite's failures follow each other; the breaker has a test of its own below.
          COREGATE_SYMXCHANGE_BREAKER_FAILURES: '10000',
        }),
        listMaximum: LIST_MAXIMUM,
        pageMaximum: LIST_MAXIMUM,
      });
    });
    after(async () => {
      await gateway?.close();
      await upstream?.close();
      await stalledCore?.close();
    });

    const callLookup = (headers: Record<string, string> = {}) =>
      gateway.call(operationPath(lookup), LOOKUP_BODY, headers);

    /** Asserts a problem+json answer of `status` and `code`; returns its body. */
    const problem = (response: Awaited<ReturnType<typeof callLookup>>, status: number, code: string) => {
      assert.equal(response.statusCode, status, response.body);
      assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
      const body = response.json();
      assert.equal(body.code, code);
      return body;
    };

    describe('a healthy answer', () => {
      test('the call carries the soapAction, X-Request-Id as MessageId and the deployment DeviceInformation', async () => {
        upstream.behave(({ body }, response) => answerWith(200, XML, lookupAnswer(body))(response));
        const response = await callLookup({ 'x-request-id': 'trace-0042' });
        assert.equal(response.statusCode, 200, response.body);
        assert.deepEqual(response.json(), { AccountNumber: '0000000042', MessageId: 'findByHomeUser' });
        const [sent] = upstream.received;
        assert.equal(
          sent!.headers.soapaction,
          '"http://www.symxchange.generated.symitar.com/noncrud/findby/findByHomeUser"',
        );
        assert.match(sent!.body, /<Request [a-z]+:MessageId="trace-0042">/);
        assert.match(sent!.body, /<DeviceInformation DeviceType="HOMEBANKING" DeviceNumber="42"\/>/);
        assert.match(sent!.body, /<AdministrativeCredentials><Password>[^<]+<\/Password>/, 'body credentials pass on');
      });

      test('a request that is not valid costs the core nothing', async () => {
        upstream.behave(({ body }, response) => answerWith(200, XML, lookupAnswer(body))(response));
        problem(await gateway.call(operationPath(lookup), { HomeBankingUserName: '' }), 400, 'VALIDATION_FAILED');
        assert.equal(upstream.received.length, 0);
      });
    });

    describe('faults and error elements, by their structure', () => {
      test("a core's fault is 502 CORE_ERROR with its class, and none of its text reaches the caller", async () => {
        upstream.behave(
          replyWith(
            500,
            XML,
            coreFault(
              'Internal error: NullPointerException at com.symitar.Lookup.find(Lookup.java:42)',
              '<ora>ORA-00942: table or view "SYM"."ACCOUNT" does not exist</ora>',
            ),
          ),
        );
        const response = await callLookup();
        const body = problem(response, 502, 'CORE_ERROR');
        assert.deepEqual(body.core, { faultcode: 'Server' });
        assert.equal(body.detail, 'The core refused the call');
        assert.doesNotMatch(response.body, /NullPointer|ORA-|ACCOUNT|Lookup\.java/);
      });

      test("a Server fault's words of a missing record or of credentials make neither a 404 nor a 403", async () => {
        const texts = [
          'Account 0000000042 not found',
          'relation share does not exist',
          'Invalid paging token',
          'Invalid credentials: password does not match',
        ];
        for (const text of texts) {
          upstream.behave(replyWith(500, XML, coreFault(text, `<reason>${text}</reason>`)));
          const body = problem(await callLookup(), 502, 'CORE_ERROR');
          assert.deepEqual(body.core, { faultcode: 'Server' }, text);
        }
      });

      test("a SymXchange status code in the fault's detail is passed on as the core's code, with the fault's class", async () => {
        upstream.behave(
          replyWith(
            500,
            XML,
            coreFault(
              'There are not sufficient funds to complete this transaction',
              '<Status><StatusCode>13033</StatusCode><Message>There are not sufficient funds</Message></Status>',
              'SOAP-ENV:Client',
            ),
          ),
        );
        const body = problem(await callLookup(), 502, 'CORE_ERROR');
        assert.deepEqual(body.core, { faultcode: 'Client', code: '13033' });
      });

      test('a code SymXchange does not define (not an xsd:int StatusCode) is not passed on', async () => {
        upstream.behave(
          replyWith(
            500,
            XML,
            coreFault('File locked', '<e:Info xmlns:e="urn:x"><e:ErrorCode>E-1042</e:ErrorCode></e:Info>'),
          ),
        );
        const body = problem(await callLookup(), 502, 'CORE_ERROR');
        assert.deepEqual(body.core, { faultcode: 'Server' });
      });

      test('an error element in a 200 answer (StatusCode and StatusMessage) is 502 CORE_ERROR with its code, not its message', async () => {
        upstream.behave(({ body }, response) =>
          answerWith(
            200,
            XML,
            lookupAnswerHolding(
              body,
              ' StatusCode="17"',
              '<StatusMessage>No record found for member42</StatusMessage>',
            ),
          )(response),
        );
        const response = await callLookup();
        const body = problem(response, 502, 'CORE_ERROR');
        assert.deepEqual(body.core, { faultcode: 'Server', code: '17' });
        assert.doesNotMatch(response.body, /member42|No record/);
      });

      test("a coregate as the core: its problem's code, status and fault class make 404 RECORD_NOT_FOUND and 403 CORE_CREDENTIALS_REJECTED", async () => {
        upstream.behave(replyWith(500, XML, coregateFault(404, 'RECORD_NOT_FOUND', 'No account 0000000042 (secret)')));
        const notFound = await callLookup();
        assert.equal(problem(notFound, 404, 'RECORD_NOT_FOUND').detail, 'The core has no such record');
        assert.doesNotMatch(notFound.body, /secret/);
        upstream.behave(replyWith(500, XML, coregateFault(403, 'FORBIDDEN', 'Wrong password for user 7')));
        const rejected = problem(await callLookup(), 403, 'CORE_CREDENTIALS_REJECTED');
        assert.deepEqual(rejected.core, { faultcode: 'Client', code: 'FORBIDDEN' });
      });

      test("a coregate problem whose status disagrees with its code is the core's refusal, not a 404", async () => {
        upstream.behave(replyWith(500, XML, coregateFault(500, 'RECORD_NOT_FOUND', 'odd')));
        const body = problem(await callLookup(), 502, 'CORE_ERROR');
        assert.deepEqual(body.core, { faultcode: 'Server', code: 'RECORD_NOT_FOUND' });
      });

      test("a problem element outside the RFC 7807 namespace is not coregate's: 502 CORE_ERROR", async () => {
        upstream.behave(
          replyWith(
            500,
            XML,
            coreFault('No', '<problem><status>404</status><code>RECORD_NOT_FOUND</code></problem>', 'S:Client'),
          ),
        );
        const body = problem(await callLookup(), 502, 'CORE_ERROR');
        assert.deepEqual(body.core, { faultcode: 'Client' });
      });

      test('a Server fault saying the core is unavailable for now: 503 CORE_UNAVAILABLE with Retry-After', async () => {
        upstream.behave(replyWith(500, XML, coreFault('Service temporarily unavailable, try again later')));
        const response = await callLookup();
        problem(response, 503, 'CORE_UNAVAILABLE');
        assert.match(String(response.headers['retry-after']), /^[0-9]+$/);
      });

      test("the core's fault text and detail are in the log under the request id, clipped, digit runs masked", async () => {
        const detail = `SSN 384856358 has no account; ${'x'.repeat(2000)}`;
        upstream.behave(replyWith(500, XML, coreFault('Lookup failed for member 384856358', `<why>${detail}</why>`)));
        await callLookup({ 'x-request-id': `fault-log-${backend.name}` });
        const [entry] = logsOf(gateway, `fault-log-${backend.name}`).filter(
          (e) => e.msg === 'the core refused the call',
        );
        const core = entry?.core as { faultstring: string; detail: string; status: number } | undefined;
        assert.ok(core, gateway.logs().slice(-3).join('\n'));
        assert.equal(core.status, 500);
        assert.equal(core.faultstring, 'Lookup failed for member [digits]');
        assert.match(core.detail, /^SSN \[digits\] has no account; x+…$/);
        assert.ok(core.detail.length <= 501);
      });
    });

    describe('a core that cannot be reached or does not answer', () => {
      test('a core that never answers: 504 CORE_TIMEOUT once the timeout passes', async () => {
        upstream.behave(() => {});
        const started = Date.now();
        problem(await callLookup(), 504, 'CORE_TIMEOUT');
        assert.ok(Date.now() - started < TIMEOUT_MS * 4, 'no hang');
      });

      test('a core that drips its answer a byte at a time: 504 CORE_TIMEOUT, the whole answer has one deadline', async () => {
        upstream.behave((_received, response) => {
          response.writeHead(200, XML);
          const drip = setInterval(() => response.write(' '), 50);
          response.on('close', () => clearInterval(drip));
        });
        const started = Date.now();
        problem(await callLookup(), 504, 'CORE_TIMEOUT');
        assert.ok(Date.now() - started < TIMEOUT_MS * 4, 'no hang');
      });

      test('every call an operation takes shares one deadline: a list read page by page ends at it', async () => {
        upstream.behave(({ body }, response) => {
          const page = codec.encodeResponse(
            trackingWirePage,
            { CollateralTracking: [{ Locator: 1 }], Token: 'more' },
            messageIdOf(body),
          );
          setTimeout(() => answerWith(200, XML, page)(response), TIMEOUT_MS * 0.4);
        });
        const started = Date.now();
        problem(
          await gateway.call(operationPath(trackingList), {
            CollateralNumber: '7000000011',
            SelectableFields: { IncludeAllCollateralTrackingFields: true },
          }),
          504,
          'CORE_TIMEOUT',
        );
        // Each page takes 0.4 of the deadline: a deadline per call would ask for pages without end.
        assert.ok(upstream.received.length <= 3, `${upstream.received.length} pages asked for`);
        assert.ok(Date.now() - started < TIMEOUT_MS * 4, `no hang: ${Date.now() - started} ms`);
      });

      test('a refused connection: 503 CORE_UNAVAILABLE with Retry-After', async () => {
        const response = await gateway.call(operationPath(lookup, refusing), LOOKUP_BODY);
        const body = problem(response, 503, 'CORE_UNAVAILABLE');
        assert.match(body.detail, /ECONNREFUSED/);
        assert.match(String(response.headers['retry-after']), /^[0-9]+$/);
      });

      test('a core that never accepts the connection: 503 CORE_UNAVAILABLE once the connect timeout passes', async () => {
        const started = Date.now();
        const body = problem(await gateway.call(operationPath(lookup, stalled), LOOKUP_BODY), 503, 'CORE_UNAVAILABLE');
        const took = Date.now() - started;
        assert.match(body.detail, /did not accept a connection/);
        assert.ok(took >= CONNECT_TIMEOUT_MS - 10 && took < TIMEOUT_MS, `${took} ms`);
      });

      test('a write to a core that never accepts the connection is told it was not applied', async () => {
        const body = problem(await gateway.call(operationPath(update, stalled), UPDATE_BODY), 503, 'CORE_UNAVAILABLE');
        assert.match(body.detail, /never sent, so it was not applied/);
        assert.doesNotMatch(body.detail, /may have been applied/);
      });

      test('a connection reset mid-answer on a read: sent once more, and answered', async () => {
        upstream.behave(({ body }, response, n) => {
          if (n > 1) return answerWith(200, XML, lookupAnswer(body))(response);
          response.writeHead(200, { ...XML, 'content-length': '4096' });
          response.write('<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Bo');
          setImmediate(() => response.socket?.destroy());
        });
        const response = await callLookup();
        assert.equal(response.statusCode, 200, response.body);
        assert.equal(upstream.received.length, 2);
      });

      test('a read reset twice: 503 CORE_UNAVAILABLE after the one retry', async () => {
        upstream.behave((_received, response) => {
          response.writeHead(200, { ...XML, 'content-length': '4096' });
          response.write('<soapenv:Envelope');
          setImmediate(() => response.socket?.destroy());
        });
        problem(await callLookup(), 503, 'CORE_UNAVAILABLE');
        assert.equal(upstream.received.length, 2);
      });

      test('a connection reset under a write: never sent again, and the caller is told it may have landed', async () => {
        upstream.behave((_received, response) => {
          response.writeHead(200, { ...XML, 'content-length': '4096' });
          response.write('<soapenv:Envelope');
          setImmediate(() => response.socket?.destroy());
        });
        const response = await gateway.call(operationPath(update), UPDATE_BODY);
        const body = problem(response, 503, 'CORE_UNAVAILABLE');
        assert.match(body.detail, /may have been applied/);
        assert.equal(upstream.received.length, 1, 'a write is sent once');
      });

      test("a gateway status (503) in front of the core: 503 CORE_UNAVAILABLE with the core's Retry-After", async () => {
        upstream.behave(replyWith(503, { 'content-type': 'text/html', 'retry-after': '17' }, '<h1>Maintenance</h1>'));
        const response = await callLookup();
        problem(response, 503, 'CORE_UNAVAILABLE');
        assert.equal(response.headers['retry-after'], '17');
      });
    });

    describe('answers that are not SymXchange', () => {
      const badResponses: [string, (response: ServerResponse) => void][] = [
        [
          'an HTML error page with 500',
          answerWith(500, { 'content-type': 'text/html' }, '<html><body>Internal error</body></html>'),
        ],
        ['an HTML page with 200', answerWith(200, { 'content-type': 'text/html' }, '<html><body>Log in</body></html>')],
        ['a 500 with no body', answerWith(500, {}, '')],
        ['a 404', answerWith(404, { 'content-type': 'text/plain' }, 'no such endpoint')],
        [
          'truncated XML',
          answerWith(
            200,
            XML,
            '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>',
          ),
        ],
        ['XML that is not an envelope', answerWith(200, XML, '<html/>')],
        [
          'a DTD (entity expansion)',
          answerWith(200, XML, '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>'),
        ],
      ];
      for (const [name, behaviour] of badResponses) {
        test(`${name}: 502 CORE_BAD_RESPONSE`, async () => {
          upstream.behave((_received, response) => behaviour(response));
          problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
        });
      }

      test('a content type the core made up is not quoted back: the problem names a plain media type only', async () => {
        upstream.behave(replyWith(404, { 'content-type': 'text/html; note="Oracle says ORA-1"' }, '<html/>'));
        const body = problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
        assert.equal(body.detail, 'The core answered HTTP 404 with text/html, not a SOAP envelope');
      });

      test('a 64 KB response header: 502 CORE_BAD_RESPONSE, not 503', async () => {
        upstream.behave(({ body }, response) =>
          answerWith(200, { ...XML, 'x-padding': 'a'.repeat(64 * 1024) }, lookupAnswer(body))(response),
        );
        const body = problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
        assert.match(body.detail, /its headers are too large/);
        assert.doesNotMatch(body.detail, /UND_ERR/, "a library's internal code is not the caller's");
      });

      test('the answer of another operation: 502 CORE_BAD_RESPONSE', async () => {
        upstream.behave(({ body }, response) =>
          answerWith(200, XML, lookupAnswer(body).replaceAll('findByHomeUserResponse', 'findBySSNResponse'))(response),
        );
        problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
      });

      test('an element holding the wrong XSD type: 502 CORE_BAD_RESPONSE naming the element, not its content', async () => {
        upstream.behave(({ body }, response) =>
          answerWith(
            200,
            XML,
            lookupAnswer(body).replace(/<AccountNumber>[^<]*</, '<AccountNumber><secret>ORA-00942</secret><'),
          )(response),
        );
        const response = await callLookup();
        const body = problem(response, 502, 'CORE_BAD_RESPONSE');
        assert.match(body.detail, /SOAP_SCHEMA_VIOLATION at .*AccountNumber/);
        assert.doesNotMatch(response.body, /ORA-/);
      });

      test('a value the contract does not allow (an account number of letters): 502 CORE_BAD_RESPONSE', async () => {
        upstream.behave(({ body }, response) => answerWith(200, XML, lookupAnswer(body, 'NOT-A-NUMBER'))(response));
        const body = problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
        assert.match(body.detail, /AccountNumber/);
        assert.doesNotMatch(body.detail, /NOT-A-NUMBER/);
      });

      test('an answer larger than COREGATE_SYMXCHANGE_MAX_ANSWER_BYTES: 502 CORE_BAD_RESPONSE, read no further', async () => {
        let sent = 0;
        upstream.behave((_received, response) => {
          response.writeHead(200, XML);
          const chunk = Buffer.alloc(64 * 1024, ' ');
          const more = () => {
            while (sent < 1024 && !response.destroyed) {
              sent += 1;
              if (!response.write(chunk)) return void response.once('drain', more);
            }
            response.end();
          };
          response.on('error', () => {});
          more();
        });
        const body = problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
        assert.match(body.detail, new RegExp(`exceeds ${MAX_ANSWER_BYTES} bytes`));
        assert.ok(sent < 1024, 'the core was not read to its end');
      });
    });

    describe("what a newer core adds, and lists longer than the JSON API's", () => {
      test('an element the XSD does not declare is skipped, and logged once', async () => {
        upstream.behave(({ body }, response) =>
          answerWith(
            200,
            XML,
            lookupAnswerHolding(
              body,
              ' Extra="1"',
              '<RiskScore>7</RiskScore><AccountNumber>0000000042</AccountNumber>',
            ),
          )(response),
        );
        for (const n of [1, 2]) {
          const response = await callLookup({ 'x-request-id': `newer-core-${n}-${backend.name}` });
          assert.equal(response.statusCode, 200, response.body);
          assert.deepEqual(response.json(), { AccountNumber: '0000000042', MessageId: 'findByHomeUser' });
        }
        const noted = gateway.logs().filter((line) => line.includes('RiskScore'));
        assert.equal(noted.length, 1, noted.join('\n'));
        assert.match(noted[0]!, /findByHomeUser.*LookupByHomeUserResponse\/RiskScore/);
      });

      test('a findBy list longer than the list maximum is cut to it (findBy lists have no flag), and logged', async () => {
        const accounts = Array.from({ length: 12 }, (_, i) => String(i + 1).padStart(10, '0'));
        upstream.behave(({ body }, response) =>
          answerWith(
            200,
            XML,
            codec.encodeResponse(bySsn, { AccountNumber: accounts, MessageId: bySsn.name }, messageIdOf(body)),
          )(response),
        );
        const response = await gateway.call(
          operationPath(bySsn),
          { SSN: '384856358' },
          { 'x-request-id': `cut-${backend.name}` },
        );
        assert.equal(response.statusCode, 200, response.body);
        assert.deepEqual(response.json().AccountNumber, accounts.slice(0, LIST_MAXIMUM));
        assert.ok(logsOf(gateway, `cut-${backend.name}`).some((entry) => /cut to it/.test(String(entry.msg))));
      });

      test('a child list longer than the list maximum is cut to it and says so in hasReachedMaximumListSize', async () => {
        const tracking = Array.from({ length: 12 }, (_, i) => ({ Locator: i + 1 }));
        upstream.behave(({ body }, response) =>
          answerWith(
            200,
            XML,
            codec.encodeResponse(
              withChildren,
              {
                Collateral: {
                  Description: 'CAR',
                  CollateralTrackingList: { hasReachedMaximumListSize: false, CollateralTracking: tracking },
                },
              },
              messageIdOf(body),
            ),
          )(response),
        );
        const response = await gateway.call(operationPath(withChildren), {
          CollateralNumber: '7000000011',
          SelectableFields: { IncludeAllCollateralFields: true },
        });
        assert.equal(response.statusCode, 200, response.body);
        const list = response.json().Collateral.CollateralTrackingList;
        assert.equal(list.hasReachedMaximumListSize, true);
        assert.deepEqual(
          list.CollateralTracking.map((t: { Locator: number }) => t.Locator),
          [1, 2, 3, 4, 5],
        );
      });

      test('a page longer than the gateway asked for is 502 CORE_BAD_RESPONSE: cutting it would skip records', async () => {
        upstream.behave(({ body }, response) =>
          answerWith(
            200,
            XML,
            codec.encodeResponse(
              trackingWirePage,
              { CollateralTracking: Array.from({ length: 12 }, (_, i) => ({ Locator: i + 1 })), Token: 'next' },
              messageIdOf(body),
            ),
          )(response),
        );
        const response = await gateway.call(operationPath(trackingPage), {
          CollateralNumber: '7000000011',
          PagingRequestContext: { NumberOfRecordsToReturn: 500 },
        });
        assert.match(
          problem(response, 502, 'CORE_BAD_RESPONSE').detail,
          /SOAP_SCHEMA_VIOLATION at .*CollateralTracking/,
        );
        assert.match(
          upstream.received[0]!.body,
          /<NumberOfRecordsToReturn>5<\/NumberOfRecordsToReturn>/,
          'capped to the page maximum',
        );
      });
    });

    test("the audit trail records each call's core outcome and latency", async () => {
      upstream.behave(replyWith(500, XML, coregateFault(404, 'RECORD_NOT_FOUND', 'No account')));
      await callLookup({ 'x-request-id': `audit-fault-${backend.name}` });
      await gateway.app.audit.flush();
      const rows = await readAudit(gateway.database.db, new Date(Date.now() - 60_000), { limit: 10_000 });
      const row = rows.find((r) => r.requestId === `audit-fault-${backend.name}`)!;
      assert.equal(row.status, 404);
      assert.equal(row.coreOutcome, 'RECORD_NOT_FOUND');
      assert.equal(typeof row.coreLatencyMs, 'number');
    });
  });

  describe(`the circuit breaker and /ready, on ${backend.name}`, () => {
    let upstream: Upstream;
    let gateway: Harness;
    const OPEN_MS = 500;

    before(async () => {
      upstream = await startUpstream();
      gateway = await createHarness(
        backend,
        gatewaySettings({
          COREGATE_SYMXCHANGE_URL: upstream.url,
          COREGATE_SYMXCHANGE_BREAKER_FAILURES: '3',
          COREGATE_SYMXCHANGE_BREAKER_OPEN_MS: String(OPEN_MS),
        }),
      );
    });
    after(async () => {
      await gateway?.close();
      await upstream?.close();
    });

    test('consecutive failures open the circuit: calls are held back without reaching the core, /ready says so, and it closes once the core answers', async () => {
      const ready = async () => (await gateway.app.inject({ method: 'GET', url: '/ready' })).json();
      assert.deepEqual(await ready(), { status: 'ready', core: '627: closed, SymXchange 3.0' });

      upstream.behave(replyWith(503, { 'content-type': 'text/plain' }, 'down'));
      for (let i = 0; i < 3; i += 1) {
        const response = await gateway.call(operationPath(lookup), LOOKUP_BODY);
        assert.equal(response.statusCode, 503);
      }
      assert.equal(upstream.received.length, 3);

      const held = await gateway.call(operationPath(lookup), LOOKUP_BODY);
      assert.equal(held.statusCode, 503);
      assert.match(held.json().detail, /held back/);
      assert.equal(held.headers['retry-after'], '1');
      assert.equal(upstream.received.length, 3, 'an open circuit spares the core');
      const notReady = await gateway.app.inject({ method: 'GET', url: '/ready' });
      assert.equal(notReady.statusCode, 503);
      assert.equal(notReady.json().code, 'CORE_UNAVAILABLE');

      upstream.behave(({ body }, response) => answerWith(200, XML, lookupAnswer(body))(response));
      await new Promise((resolve) => setTimeout(resolve, OPEN_MS + 50));
      const recovered = await gateway.call(operationPath(lookup), LOOKUP_BODY);
      assert.equal(recovered.statusCode, 200, recovered.body);
      assert.deepEqual(await ready(), { status: 'ready', core: '627: closed, SymXchange 3.0' });
    });

    test('faults and bad answers are answers: they do not open the circuit', async () => {
      upstream.behave(replyWith(500, XML, coreFault('File locked')));
      for (let i = 0; i < 5; i += 1) {
        assert.equal((await gateway.call(operationPath(lookup), LOOKUP_BODY)).statusCode, 502);
      }
      assert.equal(upstream.received.length, 5);
    });
  });
}

describe('the gateway settings are checked before anything starts', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'coregate-gateway-settings-'));
  after(() => rmSync(dataDir, { recursive: true, force: true }));
  const start = (env: Record<string, string>) =>
    spawnSync(process.execPath, [...CLI, 'serve'], {
      env: { ...process.env, DATABASE_URL: '', COREGATE_DATA_DIR: dataDir, COREGATE_CORE: 'symxchange', ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });
  const cases: [string, Record<string, string>, RegExp][] = [
    ['no URL', {}, /COREGATE_CORE=symxchange needs COREGATE_SYMXCHANGE_URL/],
    [
      'a URL that is not http(s)',
      { COREGATE_SYMXCHANGE_URL: 'ftp://core:21' },
      /COREGATE_SYMXCHANGE_URL must be an http:\/\/ or https:\/\/ URL/,
    ],
    [
      'a Sym that is not a number',
      { COREGATE_SYMXCHANGE_URL_ABC: 'https://core:24604' },
      /COREGATE_SYMXCHANGE_URL_ABC: a Sym is a number/,
    ],
    [
      'a bad number',
      { COREGATE_SYMXCHANGE_URL: 'https://core:24604', COREGATE_SYMXCHANGE_TIMEOUT_MS: 'soon' },
      /COREGATE_SYMXCHANGE_TIMEOUT_MS must be an integer/,
    ],
    [
      'an answer size limit out of range',
      { COREGATE_SYMXCHANGE_URL: 'https://core:24604', COREGATE_SYMXCHANGE_MAX_ANSWER_BYTES: '10' },
      /COREGATE_SYMXCHANGE_MAX_ANSWER_BYTES must be an integer between 4096 and/,
    ],
    [
      'an unreadable certificate',
      { COREGATE_SYMXCHANGE_URL: 'https://core:24604', COREGATE_SYMXCHANGE_CA_FILE: '/nonexistent/ca.pem' },
      /COREGATE_SYMXCHANGE_CA_FILE: cannot read \/nonexistent\/ca.pem \(ENOENT\)/,
    ],
    [
      'a certificate without its key',
      { COREGATE_SYMXCHANGE_URL: 'https://core:24604', COREGATE_SYMXCHANGE_CERT_FILE: '/etc/hostname' },
      /CERT_FILE and COREGATE_SYMXCHANGE_KEY_FILE go together/,
    ],
  ];
  for (const [name, env, message] of cases) {
    test(`${name}: one line naming the setting, exit 1`, () => {
      const run = start(env);
      assert.equal(run.status, 1, run.stderr);
      const lines = run.stderr.trim().split('\n');
      assert.equal(lines.length, 1, run.stderr);
      assert.match(lines[0]!, message);
    });
  }
});
