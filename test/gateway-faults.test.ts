/**
 * Gateway mode against a core that misbehaves (a real HTTP server answering as each test sets it): every
 * failure is a problem+json with a stable code, never a 500 and never a hang. Faults and error elements by
 * class, timeouts, refusals, resets mid-body (a read is sent once more, a write never), slow drips, HTML
 * pages, gateway statuses with Retry-After, huge, truncated and contract-breaking XML; the circuit breaker
 * and /ready; X-Request-Id as the SOAP MessageId; the gateway's settings checked at start.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { CORE_OPERATIONS, OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { readAudit } from '../src/store/audit.js';
import { createSymxCodec } from '../src/symxchange/codec.js';
import { BACKENDS, createHarness, type Harness } from './support/harness.js';
import { CLI } from './support/serve-process.js';
import { closedPort, startUpstream, type Behaviour, type Upstream } from './support/upstream.js';

const codec = createSymxCodec({ operations: CORE_OPERATIONS, schemas: SHARED_SCHEMAS });
const operation = (name: string, family: 'P1' | 'P2') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;
const lookup = operation('findByHomeUser', 'P1');
const update = operation('updateShareHoldByID', 'P2');
const LOOKUP_BODY = { HomeBankingUserName: 'member42' };
const UPDATE_BODY = {
  AccountNumber: '0000000042',
  ShareId: '0001',
  ShareHoldLocator: 1,
  ShareHoldUpdatableFields: { Reference1: 'ONE' },
};
const TIMEOUT_MS = 600;
const XML = { 'content-type': 'text/xml; charset=utf-8' };

/** The core's answer to the lookup, as a core writes it, echoing the request's MessageId. */
function lookupAnswer(body: string, accountNumber = '0000000042'): string {
  const messageId = /MessageId="([^"]*)"/.exec(body)?.[1] ?? '';
  return codec.encodeResponse(lookup, { AccountNumber: accountNumber, MessageId: lookup.name }, messageId);
}

/** A SOAP 1.1 Fault as a core writes it: no coregate problem in its detail. */
const coreFault = (faultstring: string, detail = '') =>
  `<?xml version="1.0"?><S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body><S:Fault>` +
  `<faultcode>S:Server</faultcode><faultstring>${faultstring}</faultstring>${detail ? `<detail>${detail}</detail>` : ''}` +
  `</S:Fault></S:Body></S:Envelope>`;

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

for (const backend of BACKENDS) {
  describe(`gateway mode against a misbehaving core, on ${backend.name}`, () => {
    let upstream: Upstream;
    let gateway: Harness;
    let refusingSym: number;

    before(async () => {
      upstream = await startUpstream();
      refusingSym = 700;
      gateway = await createHarness(
        backend,
        gatewaySettings({
          COREGATE_SYMXCHANGE_URL: upstream.url,
          [`COREGATE_SYMXCHANGE_URL_${refusingSym}`]: `http://127.0.0.1:${await closedPort()}`,
          COREGATE_SYMXCHANGE_TIMEOUT_MS: String(TIMEOUT_MS),
          COREGATE_SYMXCHANGE_DEVICE_TYPE: 'HOMEBANKING',
          COREGATE_SYMXCHANGE_DEVICE_NUMBER: '42',
          // This suite's failures follow each other; the breaker has a test of its own below.
          COREGATE_SYMXCHANGE_BREAKER_FAILURES: '10000',
        }),
      );
    });
    after(async () => {
      await gateway?.close();
      await upstream?.close();
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

    describe('faults and error elements, by class', () => {
      test('credentials the core rejects: 403 CORE_CREDENTIALS_REJECTED with the fault', async () => {
        upstream.behave(replyWith(500, XML, coreFault('Invalid credentials: password does not match')));
        const body = problem(await callLookup(), 403, 'CORE_CREDENTIALS_REJECTED');
        assert.deepEqual(body.core, {
          faultcode: 'Server',
          faultstring: 'Invalid credentials: password does not match',
        });
      });

      test('a record the core does not have: 404 RECORD_NOT_FOUND', async () => {
        upstream.behave(replyWith(500, XML, coreFault('Account 0000000042 not found')));
        problem(await callLookup(), 404, 'RECORD_NOT_FOUND');
      });

      test("any other fault: 502 CORE_ERROR carrying the core's code and message", async () => {
        upstream.behave(
          replyWith(
            500,
            XML,
            coreFault(
              'File locked by another process',
              '<err:Info xmlns:err="urn:x"><err:ErrorCode>E-1042</err:ErrorCode></err:Info>',
            ),
          ),
        );
        const body = problem(await callLookup(), 502, 'CORE_ERROR');
        assert.deepEqual(body.core, {
          faultcode: 'Server',
          faultstring: 'File locked by another process',
          code: 'E-1042',
        });
      });

      test('an error element in a 200 answer (StatusCode and StatusMessage) is a fault too', async () => {
        upstream.behave(({ body }, response) => {
          const messageId = /MessageId="([^"]*)"/.exec(body)?.[1];
          const answer = lookupAnswer(body).replace(
            /<SingleResponse ([^>]*)>.*<\/SingleResponse>/,
            `<SingleResponse $1 StatusCode="17"><StatusMessage>Sym ${messageId ? 'is' : 'was'} in day-end processing</StatusMessage></SingleResponse>`,
          );
          answerWith(200, XML, answer)(response);
        });
        const body = problem(await callLookup(), 502, 'CORE_ERROR');
        assert.equal(body.core.code, '17');
        assert.match(body.core.faultstring, /day-end processing/);
      });

      test('an error element saying not found is a 404', async () => {
        upstream.behave(({ body }, response) =>
          answerWith(
            200,
            XML,
            lookupAnswer(body).replace(
              /<SingleResponse ([^>]*)>.*<\/SingleResponse>/,
              '<SingleResponse $1 StatusCode="2"><StatusMessage>No record found</StatusMessage></SingleResponse>',
            ),
          )(response),
        );
        problem(await callLookup(), 404, 'RECORD_NOT_FOUND');
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

      test('a refused connection: 503 CORE_UNAVAILABLE with Retry-After', async () => {
        const response = await gateway.call(operationPath(lookup, refusingSym), LOOKUP_BODY);
        const body = problem(response, 503, 'CORE_UNAVAILABLE');
        assert.match(body.detail, /ECONNREFUSED/);
        assert.match(String(response.headers['retry-after']), /^[0-9]+$/);
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

      test('the answer of another operation: 502 CORE_BAD_RESPONSE', async () => {
        upstream.behave(({ body }, response) =>
          answerWith(200, XML, lookupAnswer(body).replaceAll('findByHomeUserResponse', 'findBySSNResponse'))(response),
        );
        problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
      });

      test('an element holding the wrong XSD type: 502 CORE_BAD_RESPONSE', async () => {
        upstream.behave(({ body }, response) =>
          answerWith(
            200,
            XML,
            lookupAnswer(body).replace(/<AccountNumber>[^<]*</, '<AccountNumber><b>1</b><'),
          )(response),
        );
        problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
      });

      test('a value the contract does not allow (an account number of letters): 502 CORE_BAD_RESPONSE', async () => {
        upstream.behave(({ body }, response) => answerWith(200, XML, lookupAnswer(body, 'NOT-A-NUMBER'))(response));
        const body = problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
        assert.match(body.detail, /AccountNumber/);
      });

      test('an answer larger than 32 MiB: 502 CORE_BAD_RESPONSE, read no further', async () => {
        upstream.behave((_received, response) => {
          response.writeHead(200, XML);
          const chunk = Buffer.alloc(1024 * 1024, ' ');
          let sent = 0;
          const more = () => {
            while (sent < 40 && !response.destroyed) {
              sent += 1;
              if (!response.write(chunk)) return void response.once('drain', more);
            }
            response.end();
          };
          response.on('error', () => {});
          more();
        });
        const body = problem(await callLookup(), 502, 'CORE_BAD_RESPONSE');
        assert.match(body.detail, /exceeds/);
      });
    });

    test("the audit trail records each call's core outcome and latency", async () => {
      upstream.behave(replyWith(500, XML, coreFault('Account not found')));
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
      assert.deepEqual(await ready(), { status: 'ready', core: '627: closed' });

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
      assert.deepEqual(await ready(), { status: 'ready', core: '627: closed' });
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
