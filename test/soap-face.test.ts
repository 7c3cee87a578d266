/**
 * The SymXchange SOAP face (src/http/soap-routes.ts), on both databases: a real SOAP client (node-soap)
 * bound to the WSDL coregate serves gets, for every one of its operations, field for field what the JSON
 * API answers to the same request; each failure class is the SOAP 1.1 Fault a SymXchange client expects;
 * hostile XML is refused; envelopes written as SymXchange's own clients write them are answered; the same
 * policy as the JSON API applies (bearer token and scope, or body credentials alone when so configured,
 * member confinement, Idempotency-Key, the audit trail).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type soap from 'soap';
import { CORE_OPERATIONS as ALL_CORE_OPERATIONS, OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { operationPath } from '../src/operations/types.js';
import { demoRequest } from '../src/seed/demo-requests.js';
import { demoExamples, type DemoExamples } from '../src/seed/examples.js';
import { seedDatabase } from '../src/seed/load.js';
import { readAudit } from '../src/store/audit.js';
import { adminCredentials, ADMIN_PASSWORD, BACKENDS, createHarness, type Harness } from './support/harness.js';
import { callSoap, jsonOfSoapAnswer, soapArguments, soapClients, withoutNulls } from './support/soap-client.js';

const ACCOUNTS = 50;
const SEED = 627;
const CORE_OPERATIONS = OPERATIONS.filter((op) => op.service !== 'usermanagement');
const FINDBY_NS = 'http://www.symxchange.generated.symitar.com/noncrud/findby';
const COLLATERAL_NS = 'http://www.symxchange.generated.symitar.com/crud/collateral';
const ACCOUNT_NS = 'http://www.symxchange.generated.symitar.com/crud/account';
const COMMON_NS = 'http://www.symxchange.generated.symitar.com/symxcommon';
const operation = (name: string, family: 'P1' | 'P2' = 'P1') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;

/** A findBySSN envelope as SymXchange clients write it (their prefixes, the qualified cmn:MessageId). */
const findBySsnEnvelope = (ssn: string, password = ADMIN_PASSWORD) => `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:fin="${FINDBY_NS}" xmlns:cmn="${COMMON_NS}">
  <soapenv:Header/>
  <soapenv:Body>
    <fin:findBySSN>
      <Request cmn:MessageId="sample-1">
        <SSN>${ssn}</SSN>
        <DeviceInformation DeviceType="TELLER" DeviceNumber="12"/>
        <Credentials><AdministrativeCredentials><Password>${password}</Password></AdministrativeCredentials></Credentials>
      </Request>
    </fin:findBySSN>
  </soapenv:Body>
</soapenv:Envelope>`;

const findBySsnAction = `${FINDBY_NS}/findBySSN`;

interface Answer {
  readonly status: number;
  readonly type: string;
  readonly headers: Headers;
  readonly text: string;
}

for (const backend of BACKENDS) {
  describe(`the SymXchange SOAP face on ${backend.name}`, () => {
    let h: Harness;
    let base: string;
    let examples: DemoExamples;
    let clients: Map<string, soap.Client>;

    before(async () => {
      h = await createHarness(backend, { rateLimitPerMinute: 1_000_000 });
      await seedDatabase(h.database, h.secrets, { accounts: ACCOUNTS, seed: SEED });
      examples = demoExamples(SEED, ACCOUNTS);
      base = await h.app.listen({ port: 0, host: '127.0.0.1' });
      clients = await soapClients(base, CORE_OPERATIONS, { Authorization: `Bearer ${h.token}` });
    });
    after(() => h.close());

    const post = async (path: string, body: string, headers: Record<string, string> = {}): Promise<Answer> => {
      const response = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'text/xml; charset=utf-8', authorization: `Bearer ${h.token}`, ...headers },
        body,
      });
      return {
        status: response.status,
        type: response.headers.get('content-type') ?? '',
        headers: response.headers,
        text: await response.text(),
      };
    };

    /** The Fault's faultcode and its problem's code. */
    const faultOf = (answer: Answer) => ({
      faultcode: /<faultcode>([^<]*)<\/faultcode>/.exec(answer.text)?.[1],
      code: /<code>([^<]*)<\/code>/.exec(answer.text)?.[1],
    });

    describe('every operation through a SOAP client bound to the served WSDL answers what the JSON API answers', () => {
      for (const op of CORE_OPERATIONS) {
        test(`${op.family} ${op.name}`, async () => {
          const body = demoRequest(examples, op);
          const json = await h.call(operationPath(op), body);
          assert.equal(json.statusCode, 200, json.body);
          const answer = await callSoap(
            clients,
            op,
            soapArguments(op, { ...body, Credentials: adminCredentials }, `soap-${op.name}`),
          );
          const wrapper = Object.values(answer)[0] as { attributes?: Record<string, string> };
          assert.ok(
            Object.values(wrapper.attributes ?? {}).includes(`soap-${op.name}`) ||
              op.service === 'account' /* update responses carry no MessageId attribute */,
            'the response echoes the request MessageId',
          );
          assert.deepEqual(withoutNulls(jsonOfSoapAnswer(op, answer, SHARED_SCHEMAS)), withoutNulls(json.json()));
        });
      }
    });

    test('a WSDL operation the JSON API lacks (getCollateralTrackingPagedListSelectFields) is served as the core serves it', async () => {
      const wireOnly = ALL_CORE_OPERATIONS.find((op) => op.name === 'getCollateralTrackingPagedListSelectFields')!;
      assert.ok(!OPERATIONS.includes(wireOnly), 'it has no JSON route');
      const paged = operation('getCollateralTrackingPagedList', 'P2');
      const body = demoRequest(examples, paged);
      const json = await h.call(operationPath(paged), body);
      assert.equal(json.statusCode, 200, json.body);
      const selected = {
        ...body,
        SelectableFields: { IncludeAllCollateralTrackingFields: true },
        Credentials: adminCredentials,
      };
      const answer = await callSoap(clients, wireOnly, soapArguments(wireOnly, selected, 'soap-wire-only'));
      assert.deepEqual(withoutNulls(jsonOfSoapAnswer(wireOnly, answer, SHARED_SCHEMAS)), withoutNulls(json.json()));
    });

    describe('the WSDL', () => {
      test('each endpoint serves a WSDL whose address is the endpoint, with every operation and its soapAction', async () => {
        for (const path of ['/SymXchange/findby', '/SymXchange/collateral', '/SymXchange/2022.01/account']) {
          const response = await fetch(`${base}${path}?wsdl`);
          assert.equal(response.status, 200);
          assert.match(response.headers.get('content-type') ?? '', /^text\/xml/);
          const wsdl = await response.text();
          assert.ok(wsdl.includes(`<soap:address location="${base}${path}"/>`), path);
        }
        const collateral = await (await fetch(`${base}/SymXchange/collateral?wsdl`)).text();
        const operations = [...collateral.matchAll(/<soap:operation soapAction="([^"]+)"/g)].map((m) => m[1]);
        assert.equal(operations.length, 34, "the spec's 33 collateral operations and the WSDLs' one more");
        assert.ok(operations.includes(`${COLLATERAL_NS}/getCollateral`));
        const account = await (await fetch(`${base}/SymXchange/2022.01/account?wsdl`)).text();
        assert.deepEqual(
          [...account.matchAll(/<soap:operation soapAction="([^"]+)"/g)].map((m) => m[1]).sort(),
          OPERATIONS.filter((op) => op.service === 'account' && op.family === 'P2')
            .map((op) => `${ACCOUNT_NS}/${op.name}`)
            .sort(),
          'the share updates and their reads',
        );
      });

      test('a GET without ?wsdl says where the WSDL is', async () => {
        const response = await fetch(`${base}/SymXchange/findby`);
        assert.equal(response.status, 404);
        assert.match(await response.text(), /\?wsdl/);
      });
    });

    describe('faults', () => {
      test('a request that is not valid is a Client fault with HTTP 500 naming the property', async () => {
        const answer = await post('/SymXchange/findby', findBySsnEnvelope('12345678'), { soapaction: findBySsnAction });
        assert.equal(answer.status, 500);
        assert.match(answer.type, /^text\/xml/);
        assert.deepEqual(faultOf(answer), { faultcode: 'soapenv:Client', code: 'VALIDATION_FAILED' });
        assert.match(answer.text, /<pointer>\/SSN<\/pointer>/);
      });

      test('wrong credentials are a Client fault FORBIDDEN, without saying which part failed', async () => {
        const answer = await post('/SymXchange/findby', findBySsnEnvelope('123456789', 'wrong'), {
          soapaction: findBySsnAction,
        });
        assert.equal(answer.status, 500);
        assert.deepEqual(faultOf(answer), { faultcode: 'soapenv:Client', code: 'FORBIDDEN' });
      });

      test('an empty AdministrativeCredentials is a Client fault VALIDATION_FAILED naming its Password', async () => {
        const envelope = findBySsnEnvelope('123456789').replace(
          /<AdministrativeCredentials>.*<\/AdministrativeCredentials>/,
          '<AdministrativeCredentials/>',
        );
        const answer = await post('/SymXchange/findby', envelope, { soapaction: findBySsnAction });
        assert.equal(answer.status, 500);
        assert.deepEqual(faultOf(answer), { faultcode: 'soapenv:Client', code: 'VALIDATION_FAILED' });
        assert.match(answer.text, /<pointer>\/Credentials\/AdministrativeCredentials\/Password<\/pointer>/);
      });

      test('a missing record is a Client fault RECORD_NOT_FOUND', async () => {
        const envelope = `<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><c:getCollateral xmlns:c="${COLLATERAL_NS}">
          <Request MessageId="m"><CollateralNumber>${examples.noMatch.collateralNumber}</CollateralNumber>
          <Credentials><AdministrativeCredentials><Password>${ADMIN_PASSWORD}</Password></AdministrativeCredentials></Credentials></Request>
          </c:getCollateral></s:Body></s:Envelope>`;
        const answer = await post('/SymXchange/collateral', envelope, {
          soapaction: `"${COLLATERAL_NS}/getCollateral"`,
        });
        assert.equal(answer.status, 500);
        assert.deepEqual(faultOf(answer), { faultcode: 'soapenv:Client', code: 'RECORD_NOT_FOUND' });
      });

      test('no bearer token is HTTP 401 with WWW-Authenticate and a Client fault; a token without the scope is FORBIDDEN', async () => {
        const anonymous = await post('/SymXchange/findby', findBySsnEnvelope('123456789'), {
          soapaction: findBySsnAction,
          authorization: '',
        });
        assert.equal(anonymous.status, 401);
        assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Bearer/);
        assert.deepEqual(faultOf(anonymous), { faultcode: 'soapenv:Client', code: 'UNAUTHENTICATED' });
        const narrow = await h.tokenWith(['collateral:read']);
        const refused = await post('/SymXchange/findby', findBySsnEnvelope('123456789'), {
          soapaction: findBySsnAction,
          authorization: `Bearer ${narrow}`,
        });
        assert.deepEqual(faultOf(refused), { faultcode: 'soapenv:Client', code: 'FORBIDDEN' });
      });

      test('a SOAPAction naming another operation, and no SOAPAction at all, are Client faults', async () => {
        const other = await post('/SymXchange/findby', findBySsnEnvelope('123456789'), {
          soapaction: `${FINDBY_NS}/findByShortName`,
        });
        assert.deepEqual(faultOf(other), { faultcode: 'soapenv:Client', code: 'VALIDATION_FAILED' });
        assert.match(other.text, /SOAPAction/);
        const none = await post('/SymXchange/findby', findBySsnEnvelope('123456789'));
        assert.deepEqual(faultOf(none), { faultcode: 'soapenv:Client', code: 'VALIDATION_FAILED' });
        const empty = await post('/SymXchange/findby', findBySsnEnvelope(examples.sharedSsn.ssn), { soapaction: '""' });
        assert.equal(empty.status, 200, 'an empty SOAPAction leaves the intent to the body');
      });

      test('an operation another endpoint serves, or none, is a Client fault NOT_FOUND', async () => {
        const answer = await post('/SymXchange/collateral', findBySsnEnvelope('123456789'), {
          soapaction: findBySsnAction,
        });
        assert.equal(answer.status, 500);
        assert.deepEqual(faultOf(answer), { faultcode: 'soapenv:Client', code: 'NOT_FOUND' });
      });

      test('the rate limit is a fault with Retry-After', async () => {
        const limited = await createHarness(backend, { rateLimitPerMinute: 1 });
        try {
          const limitedBase = await limited.app.listen({ port: 0, host: '127.0.0.1' });
          const call = () =>
            fetch(`${limitedBase}/SymXchange/findby`, {
              method: 'POST',
              headers: {
                'content-type': 'text/xml',
                authorization: `Bearer ${limited.token}`,
                soapaction: findBySsnAction,
              },
              body: findBySsnEnvelope('123456789'),
            });
          await call();
          const refused = await call();
          assert.equal(refused.status, 500);
          assert.ok(Number(refused.headers.get('retry-after')) > 0);
          assert.match(await refused.text(), /<code>RATE_LIMITED<\/code>/);
        } finally {
          await limited.close();
        }
      });

      test('a node-soap client sees a fault as an error carrying the Fault', async () => {
        const op = operation('getCollateral', 'P2');
        await assert.rejects(
          callSoap(
            clients,
            op,
            soapArguments(
              op,
              { CollateralNumber: examples.noMatch.collateralNumber, Credentials: adminCredentials },
              'm',
            ),
          ),
          (error: { root?: { Envelope?: { Body?: { Fault?: { faultcode?: string } } } } }) =>
            error.root?.Envelope?.Body?.Fault?.faultcode === 'soapenv:Client',
        );
      });
    });

    describe('hostile and foreign input', () => {
      const refusedWith = async (body: string, code: string) => {
        const answer = await post('/SymXchange/findby', body, { soapaction: findBySsnAction });
        assert.equal(answer.status, 500, body.slice(0, 80));
        assert.deepEqual(faultOf(answer), { faultcode: 'soapenv:Client', code: 'VALIDATION_FAILED' });
        assert.match(answer.text, new RegExp(code));
        assert.doesNotMatch(answer.text, /at \w+ \(|node_modules|\/src\//, 'no stack trace or internal path');
      };

      test('an external entity (XXE) and billion laughs are refused before parsing', async () => {
        await refusedWith(
          `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${findBySsnEnvelope('&x;')}`,
          'XML_DTD_REFUSED',
        );
        const entities = Array.from({ length: 9 }, (_, i) => `<!ENTITY l${i + 1} "${`&l${i};`.repeat(10)}">`).join('');
        await refusedWith(
          `<!DOCTYPE r [<!ENTITY l0 "lol">${entities}]>${findBySsnEnvelope('&l9;')}`,
          'XML_DTD_REFUSED',
        );
      });

      test('nesting too deep, malformed XML and what is no envelope are refused with stable codes', async () => {
        await refusedWith(findBySsnEnvelope(`${'<a>'.repeat(60)}${'</a>'.repeat(60)}`), 'XML_TOO_DEEP');
        await refusedWith('<soapenv:Envelope', 'XML_MALFORMED');
        await refusedWith('<Envelope/>', 'SOAP_NOT_AN_ENVELOPE');
      });

      test('a body over the size limit is a fault, not a dropped connection', async () => {
        const answer = await post('/SymXchange/findby', findBySsnEnvelope('x'.repeat(h.config.bodyLimit + 10)), {
          soapaction: findBySsnAction,
        });
        assert.equal(answer.status, 500);
        assert.deepEqual(faultOf(answer), { faultcode: 'soapenv:Client', code: 'PAYLOAD_TOO_LARGE' });
      });

      test('JSON sent to a SOAP endpoint, and a SOAP envelope sent to a JSON path, are a clear 415', async () => {
        const json = await fetch(`${base}/SymXchange/findby`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${h.token}` },
          body: JSON.stringify({ SSN: '123456789' }),
        });
        assert.equal(json.status, 415);
        assert.match(((await json.json()) as { detail: string }).detail, /SOAP 1\.1 envelope as text\/xml/);
        const envelope = await post(operationPath(operation('findBySSN')), findBySsnEnvelope('123456789'));
        assert.equal(envelope.status, 415);
        assert.match(JSON.parse(envelope.text).detail, /\/SymXchange\//);
      });
    });

    describe('envelopes as SymXchange clients write them', () => {
      test('findBySSN with their prefixes, a qualified MessageId and DeviceInformation is answered, echoing the MessageId', async () => {
        const answer = await post('/SymXchange/findby', findBySsnEnvelope(examples.sharedSsn.ssn), {
          soapaction: `"${findBySsnAction}"`,
        });
        assert.equal(answer.status, 200, answer.text);
        assert.match(answer.type, /^text\/xml; charset=utf-8/);
        assert.match(answer.text, /<PluralResponse cmn:MessageId="sample-1">/);
        for (const account of examples.sharedSsn.accountNumbers)
          assert.ok(answer.text.includes(`<AccountNumber>${account}</AccountNumber>`), account);
      });

      test("a P2 update with its fields object named as on the wire, elements in the caller's order, replayed by Idempotency-Key", async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const envelope = `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:acc="http://www.symxchange.generated.symitar.com/crud/account">
          <soapenv:Body><acc:updateShareHoldByID><Request MessageId="u-1">
            <Credentials><AdministrativeCredentials><Password>${ADMIN_PASSWORD}</Password></AdministrativeCredentials></Credentials>
            <ShareHoldFields><Reference2>SOAP SAYS HI</Reference2><Amount>12.50</Amount></ShareHoldFields>
            <ShareHoldLocator>${hold.locator}</ShareHoldLocator><ShareId>${hold.shareId}</ShareId><AccountNumber>${hold.accountNumber}</AccountNumber>
          </Request></acc:updateShareHoldByID></soapenv:Body></soapenv:Envelope>`;
        const headers = {
          soapaction: 'http://www.symxchange.generated.symitar.com/crud/account/updateShareHoldByID',
          'idempotency-key': `soap-hold-${backend.name}`,
        };
        const first = await post('/SymXchange/2022.01/account', envelope, headers);
        assert.equal(first.status, 200, first.text);
        assert.match(first.text, /<isAllFieldsUpdateSuccess>true<\/isAllFieldsUpdateSuccess>/);
        const again = await post('/SymXchange/2022.01/account', envelope, headers);
        assert.equal(again.headers.get('idempotent-replayed'), 'true');
        const read = await h.call('/gw/627/2022.01/collateral/getCollateral', {
          CollateralNumber: examples.collateral.collateralNumber,
        });
        assert.equal(read.statusCode, 200);
      });

      test('an update is read back through the SOAP face with the WSDL read, field selection on the wire', async () => {
        const hold = examples.shareTargets.find((t) => t.record === 'ShareHold')!;
        const credentials = `<Credentials><AdministrativeCredentials><Password>${ADMIN_PASSWORD}</Password></AdministrativeCredentials></Credentials>`;
        const envelope = (operation: string, request: string) =>
          `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:acc="${ACCOUNT_NS}">
          <soapenv:Body><acc:${operation}><Request MessageId="rb-1">${request}</Request></acc:${operation}></soapenv:Body></soapenv:Envelope>`;
        const address = `<AccountNumber>${hold.accountNumber}</AccountNumber><ShareId>${hold.shareId}</ShareId><ShareHoldLocator>${hold.locator}</ShareHoldLocator>`;
        const updated = await post(
          '/SymXchange/account',
          envelope(
            'updateShareHoldByID',
            `${address}${credentials}<ShareHoldFields><Reference4>READ ME BACK</Reference4></ShareHoldFields>`,
          ),
          { soapaction: `${ACCOUNT_NS}/updateShareHoldByID` },
        );
        assert.equal(updated.status, 200, updated.text);
        const read = await post(
          '/SymXchange/account',
          envelope(
            'getShareHoldSelectFields',
            `${address}${credentials}<SelectableFields><ShareHoldFields><Reference4>true</Reference4></ShareHoldFields></SelectableFields>`,
          ),
          { soapaction: `${ACCOUNT_NS}/getShareHoldSelectFields` },
        );
        assert.equal(read.status, 200, read.text);
        assert.match(
          read.text,
          /<SingleResponse MessageId="rb-1"><ShareHold><Reference4>READ ME BACK<\/Reference4><\/ShareHold><\/SingleResponse>/,
        );
      });

      test("a member's credentials reach only their own account, as on the JSON API", async () => {
        const [own, other] = [examples.shareTargets[0]!, { accountNumber: '0000000002' }];
        const envelope = (
          account: string,
        ) => `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:acc="http://www.symxchange.generated.symitar.com/crud/account">
          <soapenv:Body><acc:updateShareHoldByID><Request MessageId="m"><AccountNumber>${account}</AccountNumber>
          <ShareHoldLocator>1</ShareHoldLocator>
          <Credentials><AccountNumberCredentials><AccountNumber>${own.accountNumber}</AccountNumber><HomeBankingPassword>demo-${own.accountNumber}</HomeBankingPassword></AccountNumberCredentials></Credentials>
          <ShareHoldFields><Reference3>MEMBER</Reference3></ShareHoldFields></Request></acc:updateShareHoldByID></soapenv:Body></soapenv:Envelope>`;
        const answer = await post('/SymXchange/account', envelope(other.accountNumber), {
          soapaction: 'http://www.symxchange.generated.symitar.com/crud/account/updateShareHoldByID',
        });
        assert.deepEqual(faultOf(answer), { faultcode: 'soapenv:Client', code: 'FORBIDDEN' });
      });

      test('every SOAP call is in the audit trail with its outcome', async () => {
        const answer = await post('/SymXchange/findby', findBySsnEnvelope(examples.sharedSsn.ssn), {
          soapaction: findBySsnAction,
          'x-request-id': `soap-audit-${backend.name}`,
        });
        assert.equal(answer.status, 200);
        await h.app.audit.flush();
        const rows = await readAudit(h.database.db, new Date(Date.now() - 60_000), { limit: 10_000 });
        const row = rows.find((r) => r.requestId === `soap-audit-${backend.name}`);
        assert.ok(row, 'audited');
        assert.equal(row.operation, 'P1:findBySSN');
        assert.equal(row.status, 200);
        assert.equal(row.tokenName, 'test');
      });
    });
  });
}

describe('COREGATE_SOAP_AUTH=credentials', () => {
  let h: Harness;
  let base: string;
  before(async () => {
    h = await createHarness(BACKENDS[0]!, { soapAuth: 'credentials' });
    base = await h.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => h.close());

  const call = (password: string) =>
    fetch(`${base}/SymXchange/findby`, {
      method: 'POST',
      headers: { 'content-type': 'text/xml', soapaction: findBySsnAction },
      body: findBySsnEnvelope('123456789', password),
    });

  test('a call without a bearer token is answered on its body Credentials, and audited under the caller address', async () => {
    const answer = await call(ADMIN_PASSWORD);
    assert.equal(answer.status, 200, await answer.text());
    await h.app.audit.flush();
    const rows = await readAudit(h.database.db, new Date(Date.now() - 60_000), {});
    assert.ok(rows.some((row) => row.tokenName === 'soap@127.0.0.1' && row.status === 200));
  });

  test('wrong body Credentials are still refused', async () => {
    const answer = await call('wrong');
    assert.equal(answer.status, 500);
    assert.match(await answer.text(), /<code>FORBIDDEN<\/code>/);
  });

  test('the log says at start which SOAP authentication is in force', () => {
    assert.ok(h.logs().some((line) => line.includes('COREGATE_SOAP_AUTH=credentials')));
  });
});
