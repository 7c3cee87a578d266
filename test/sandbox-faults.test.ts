/**
 * Sandbox controls: with COREGATE_SANDBOX_FAULTS on, a call's X-Coregate-Fault header forces a problem
 * (shaped as the real one, problem+json on the JSON API and a SOAP Fault on the SymXchange face), a delay
 * or a dropped connection on that one call; the token is still checked first and the call audited. Off (the
 * default), the header is a 403; a header that cannot be read is a 400 naming it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  DROPPED_STATUS,
  SANDBOX_FAULT_HEADER,
  SANDBOX_FAULT_PROBLEMS,
  type SandboxFaultCode,
} from '../src/contract/sandbox-faults.js';
import { OPERATIONS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { demoRequest } from '../src/seed/demo-requests.js';
import { demoExamples } from '../src/seed/examples.js';
import { seedDatabase } from '../src/seed/load.js';
import { readAudit } from '../src/store/audit.js';
import { ADMIN_PASSWORD, BACKENDS, createHarness, type Harness } from './support/harness.js';

const ACCOUNTS = 50;
const SEED = 627;
const examples = demoExamples(SEED, ACCOUNTS);
const operation = (name: string, family: 'P1' | 'P2' = 'P1') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;
const findBySSN = operation('findBySSN');
const updateHold = operation('updateShareHoldByID', 'P2');
const FIND_PATH = operationPath(findBySSN);
const FIND_BODY = demoRequest(examples, findBySSN);
const UPDATE_PATH = operationPath(updateHold);
const UPDATE_BODY = demoRequest(examples, updateHold);
const FINDBY_NS = 'http://www.symxchange.generated.symitar.com/noncrud/findby';

const fault = (value: string) => ({ [SANDBOX_FAULT_HEADER]: value });

/** A findBySSN SOAP envelope of the demo's shared SSN. */
const findBySsnEnvelope = `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:fin="${FINDBY_NS}">
  <soapenv:Body><fin:findBySSN><Request MessageId="m-1"><SSN>${examples.sharedSsn.ssn}</SSN>
  <Credentials><AdministrativeCredentials><Password>${ADMIN_PASSWORD}</Password></AdministrativeCredentials></Credentials>
  </Request></fin:findBySSN></soapenv:Body></soapenv:Envelope>`;

async function auditOf(h: Harness, requestId: string) {
  await h.app.audit.flush();
  const rows = await readAudit(h.database.db, new Date(Date.now() - 10 * 60_000));
  return rows.find((row) => row.requestId === requestId);
}

describe('with sandbox faults off (the default)', () => {
  let h: Harness;
  before(async () => {
    h = await createHarness(BACKENDS[0]!);
  });
  after(() => h.close());

  test('a call carrying the header is refused 403 SANDBOX_FAULTS_DISABLED, and audited', async () => {
    const response = await h.call(FIND_PATH, FIND_BODY, fault('status=503; code=CORE_UNAVAILABLE'));
    assert.equal(response.statusCode, 403);
    assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
    const problem = response.json();
    assert.equal(problem.code, 'SANDBOX_FAULTS_DISABLED');
    assert.match(problem.detail, /X-Coregate-Fault is refused: fault injection is off \(coregate faults enable/);
    const audited = await auditOf(h, String(response.headers['x-request-id']));
    assert.equal(audited?.status, 403);
    assert.equal(audited?.code, 'SANDBOX_FAULTS_DISABLED');
  });

  test('the token is checked first: without one the call is 401, header or not', async () => {
    const response = await h.app.inject({
      method: 'POST',
      url: FIND_PATH,
      headers: { 'content-type': 'application/json', ...fault('drop') },
      payload: JSON.stringify(FIND_BODY),
    });
    assert.equal(response.statusCode, 401);
    assert.equal(response.json().code, 'UNAUTHENTICATED');
  });

  test('a call without the header is answered as always', async () => {
    const response = await h.call(FIND_PATH, FIND_BODY);
    assert.equal(response.statusCode, 200, response.body);
  });
});

for (const backend of BACKENDS) {
  describe(`with COREGATE_SANDBOX_FAULTS=on, on ${backend.name}`, () => {
    let h: Harness;
    let base: string;
    before(async () => {
      h = await createHarness(backend, { sandboxFaults: true });
      await seedDatabase(h.database, h.secrets, { accounts: ACCOUNTS, seed: SEED });
      base = await h.app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(() => h.close());

    test('status and code force that problem as problem+json, with the Retry-After the real one carries', async () => {
      const response = await h.call(FIND_PATH, FIND_BODY, fault('status=503; code=CORE_UNAVAILABLE'));
      assert.equal(response.statusCode, 503);
      assert.match(String(response.headers['content-type']), /^application\/problem\+json/);
      assert.equal(response.headers['retry-after'], '5');
      const problem = response.json();
      assert.equal(problem.code, 'CORE_UNAVAILABLE');
      assert.equal(problem.status, 503);
      assert.equal(problem.type, 'urn:coregate:problem:core-unavailable');
      assert.equal(problem.instance, FIND_PATH);
      assert.match(problem.detail, /Forced by X-Coregate-Fault/);
    });

    test('every problem it may force comes with its status and code', async () => {
      for (const [code, statuses] of Object.entries(SANDBOX_FAULT_PROBLEMS) as [
        SandboxFaultCode,
        readonly number[],
      ][]) {
        for (const status of statuses) {
          const response = await h.call(FIND_PATH, FIND_BODY, fault(`code=${code}; status=${status}`));
          assert.equal(response.statusCode, status, code);
          assert.equal(response.json().code, code);
        }
        // Without status=, the code's first status.
        assert.equal((await h.call(FIND_PATH, FIND_BODY, fault(`code=${code}`))).statusCode, statuses[0], code);
      }
    });

    test('forced problems are shaped as the real ones: a challenge, Retry-After, errors, the core fault', async () => {
      const unauthenticated = await h.call(FIND_PATH, FIND_BODY, fault('code=UNAUTHENTICATED'));
      assert.equal(unauthenticated.headers['www-authenticate'], 'Bearer realm="coregate"');
      assert.equal((await h.call(FIND_PATH, FIND_BODY, fault('code=RATE_LIMITED'))).headers['retry-after'], '1');
      assert.equal((await h.call(FIND_PATH, FIND_BODY, fault('code=UNAVAILABLE'))).headers['retry-after'], '5');
      const timeout = await h.call(FIND_PATH, FIND_BODY, fault('status=408; code=UNAVAILABLE'));
      assert.equal(timeout.statusCode, 408);
      assert.equal(timeout.headers['retry-after'], undefined);
      assert.deepEqual((await h.call(FIND_PATH, FIND_BODY, fault('code=VALIDATION_FAILED'))).json().errors, [
        { pointer: '', detail: 'Forced by X-Coregate-Fault (sandbox fault injection)' },
      ]);
      const coreError = (await h.call(FIND_PATH, FIND_BODY, fault('code=CORE_ERROR'))).json();
      assert.equal(coreError.core.faultcode, 'Server');
    });

    test('a forced call is audited with the status and code it was answered', async () => {
      const response = await h.call(FIND_PATH, FIND_BODY, fault('code=CORE_TIMEOUT'));
      assert.equal(response.statusCode, 504);
      const audited = await auditOf(h, String(response.headers['x-request-id']));
      assert.equal(audited?.status, 504);
      assert.equal(audited?.code, 'CORE_TIMEOUT');
      assert.equal(audited?.operation, 'P1:findBySSN');
    });

    test('a forced problem on an update writes nothing: its Idempotency-Key stays unused', async () => {
      const key = `forced-${backend.name}`;
      const forced = await h.call(UPDATE_PATH, UPDATE_BODY, {
        'idempotency-key': key,
        ...fault('code=CORE_UNAVAILABLE'),
      });
      assert.equal(forced.statusCode, 503);
      const real = await h.call(UPDATE_PATH, UPDATE_BODY, { 'idempotency-key': key });
      assert.equal(real.statusCode, 200, real.body);
      assert.equal(real.headers['idempotent-replayed'], undefined, 'the real call is not a replay of the forced one');
    });

    test('delay= holds the answer that long, then answers for real (or with the problem given)', async () => {
      let started = performance.now();
      const delayed = await h.call(FIND_PATH, FIND_BODY, fault('delay=300'));
      assert.ok(performance.now() - started >= 290, 'waited');
      assert.equal(delayed.statusCode, 200, delayed.body);
      assert.deepEqual(delayed.json().AccountNumber, examples.sharedSsn.accountNumbers);
      started = performance.now();
      const slowFailure = await h.call(FIND_PATH, FIND_BODY, fault('delay=200; code=CORE_TIMEOUT'));
      assert.ok(performance.now() - started >= 190, 'waited');
      assert.equal(slowFailure.statusCode, 504);
    });

    test('drop closes the connection without an answer; the call is audited as dropped and the server serves on', async () => {
      const requestId = `dropped-${backend.name}`;
      await assert.rejects(
        fetch(`${base}${FIND_PATH}`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${h.token}`,
            'content-type': 'application/json',
            'x-request-id': requestId,
            ...fault('drop'),
          },
          body: JSON.stringify({
            Credentials: { AdministrativeCredentials: { Password: ADMIN_PASSWORD } },
            ...FIND_BODY,
          }),
        }),
        (error: Error) => error instanceof TypeError && /fetch failed/.test(error.message),
      );
      const audited = await auditOf(h, requestId);
      assert.equal(audited?.status, DROPPED_STATUS);
      const next = await fetch(`${base}/health`);
      assert.equal(next.status, 200);
    });

    test('the token and its scope are checked first', async () => {
      const anonymous = await h.app.inject({
        method: 'POST',
        url: FIND_PATH,
        headers: { 'content-type': 'application/json', ...fault('code=CORE_TIMEOUT') },
        payload: JSON.stringify(FIND_BODY),
      });
      assert.equal(anonymous.statusCode, 401);
      const readOnly = await h.tokenWith(['collateral:read']);
      const outOfScope = await h.call(FIND_PATH, FIND_BODY, {
        authorization: `Bearer ${readOnly}`,
        ...fault('code=CORE_TIMEOUT'),
      });
      assert.equal(outOfScope.statusCode, 403);
      assert.equal(outOfScope.json().code, 'FORBIDDEN');
    });

    test('a header that cannot be read is a 400 naming the header and what is wrong', async () => {
      const cases: [string, RegExp][] = [
        ['', /names no fault/],
        ['explode', /unknown directive "explode"/],
        ['code=TEAPOT', /code=TEAPOT is not a problem it can force/],
        ['status=503', /status= needs the code=/],
        ['status=500; code=CORE_UNAVAILABLE', /CORE_UNAVAILABLE is answered with status 503, not 500/],
        ['status=abc; code=INTERNAL', /status= must be an integer from 400 to 599/],
        ['delay=-5', /delay= must be an integer from 0 to 30000/],
        ['delay=30001', /delay= must be an integer from 0 to 30000/],
        ['drop; code=INTERNAL', /drop closes the connection without an answer/],
        ['drop=yes', /drop takes no value/],
        ['code', /code= needs a value/],
        ['delay=5; delay=6', /delay is given twice/],
        ['code=SANDBOX_FAULTS_DISABLED', /is not a problem it can force/],
      ];
      for (const [value, detail] of cases) {
        const response = await h.call(FIND_PATH, FIND_BODY, fault(value));
        assert.equal(response.statusCode, 400, value);
        const problem = response.json();
        assert.equal(problem.code, 'VALIDATION_FAILED', value);
        assert.match(problem.detail, /^X-Coregate-Fault: /, value);
        assert.match(problem.detail, detail, value);
      }
    });

    test('directive names are read in any case, around any spaces', async () => {
      const response = await h.call(FIND_PATH, FIND_BODY, fault('  Status = 502 ;CODE=CORE_BAD_RESPONSE; '));
      assert.equal(response.statusCode, 502);
      assert.equal(response.json().code, 'CORE_BAD_RESPONSE');
    });

    describe('on the SymXchange SOAP face', () => {
      const soap = (headers: Record<string, string>) =>
        fetch(`${base}/SymXchange/findby`, {
          method: 'POST',
          headers: {
            'content-type': 'text/xml; charset=utf-8',
            soapaction: `${FINDBY_NS}/findBySSN`,
            authorization: `Bearer ${h.token}`,
            ...headers,
          },
          body: findBySsnEnvelope,
        });

      test('a forced problem is a SOAP Fault carrying its code, with its Retry-After', async () => {
        const response = await soap(fault('code=CORE_UNAVAILABLE'));
        assert.equal(response.status, 500);
        assert.match(response.headers.get('content-type') ?? '', /^text\/xml/);
        assert.equal(response.headers.get('retry-after'), '5');
        const text = await response.text();
        assert.match(text, /<faultcode>soapenv:Server<\/faultcode>/);
        assert.match(text, /<code>CORE_UNAVAILABLE<\/code>/);
      });

      test('a header that cannot be read is a Client Fault naming it', async () => {
        const response = await soap(fault('code=NOPE'));
        assert.equal(response.status, 500);
        const text = await response.text();
        assert.match(text, /<faultcode>soapenv:Client<\/faultcode>/);
        assert.match(text, /X-Coregate-Fault: code=NOPE/);
      });

      test('delay= answers for real after the delay; drop closes the connection', async () => {
        const started = performance.now();
        const delayed = await soap(fault('delay=200'));
        assert.ok(performance.now() - started >= 190);
        assert.equal(delayed.status, 200);
        assert.match(await delayed.text(), new RegExp(`<AccountNumber>${examples.sharedSsn.accountNumbers[0]}`));
        await assert.rejects(soap(fault('drop')), /fetch failed/);
      });
    });
  });
}
