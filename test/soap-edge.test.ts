/**
 * The edge of the SymXchange SOAP face (src/http/soap-routes.ts), on both databases: what it refuses before
 * an operation runs. A SOAP header marked mustUnderstand is a MustUnderstand Fault (coregate understands no
 * header); the body is read as bytes and decoded strictly as UTF-8, never with replacement characters; every
 * request-derived text a Fault quotes is clipped, so no request makes a large Fault; and every refused call
 * leaves its audit row, as on the JSON API.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import soap from 'soap';
import { OPERATIONS } from '../src/operations/index.js';
import { readAudit, type AuditRow } from '../src/store/audit.js';
import { adminCredentials, ADMIN_PASSWORD, BACKENDS, createHarness, type Harness } from './support/harness.js';
import { soapArguments } from './support/soap-client.js';

const FINDBY_NS = 'http://www.symxchange.generated.symitar.com/noncrud/findby';
const COMMON_NS = 'http://www.symxchange.generated.symitar.com/symxcommon';
const SOAP_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
const FIND_BY_SSN = `${FINDBY_NS}/findBySSN`;
const findBySsn = OPERATIONS.find((op) => op.name === 'findBySSN')!;

/** A findBySSN envelope: `header` in its Header, `messageId` on its Request, `extra` in it, `prolog` before it. */
const envelope = ({ header = '', messageId = 'edge-1', ssn = '123456789', extra = '', prolog = '' } = {}) =>
  `${prolog}<soapenv:Envelope xmlns:soapenv="${SOAP_NS}" xmlns:fin="${FINDBY_NS}" xmlns:cmn="${COMMON_NS}">` +
  `<soapenv:Header>${header}</soapenv:Header><soapenv:Body><fin:findBySSN><Request cmn:MessageId="${messageId}">` +
  `<SSN>${ssn}</SSN>${extra}<Credentials><AdministrativeCredentials><Password>${ADMIN_PASSWORD}</Password>` +
  `</AdministrativeCredentials></Credentials></Request></fin:findBySSN></soapenv:Body></soapenv:Envelope>`;

const utf8 = (text: string) => new TextEncoder().encode(text);

interface Answer {
  readonly status: number;
  readonly bytes: Uint8Array;
  readonly text: string;
}

for (const backend of BACKENDS) {
  describe(`the edge of the SymXchange SOAP face on ${backend.name}`, () => {
    let h: Harness;
    let base: string;

    before(async () => {
      h = await createHarness(backend);
      base = await h.app.listen({ port: 0, host: '127.0.0.1' });
    });
    after(() => h.close());

    const post = async (body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Answer> => {
      const response = await fetch(`${base}/SymXchange/findby`, {
        method: 'POST',
        headers: {
          'content-type': 'text/xml; charset=utf-8',
          authorization: `Bearer ${h.token}`,
          soapaction: FIND_BY_SSN,
          ...headers,
        },
        body,
      });
      const bytes = new Uint8Array(await response.arrayBuffer());
      return { status: response.status, bytes, text: new TextDecoder().decode(bytes) };
    };

    /** The Fault's faultcode, its problem's code, and the codec's code its detail starts with. */
    const faultOf = (answer: Answer) => ({
      faultcode: /<faultcode>([^<]*)<\/faultcode>/.exec(answer.text)?.[1],
      code: /<code>([^<]*)<\/code>/.exec(answer.text)?.[1],
      codec: /<detail>([A-Z_0-9]+):/.exec(answer.text)?.[1],
    });

    const clientFault = (codec: string) => ({ faultcode: 'soapenv:Client', code: 'VALIDATION_FAILED', codec });

    const auditRow = async (requestId: string): Promise<AuditRow | undefined> => {
      await h.app.audit.flush();
      const rows = await readAudit(h.database.db, new Date(Date.now() - 60_000), { limit: 10_000 });
      return rows.find((row) => row.requestId === requestId);
    };

    describe('SOAP headers marked mustUnderstand', () => {
      test("a node-soap client's WS-Security header marked mustUnderstand is refused with a MustUnderstand Fault naming it", async () => {
        const client = await soap.createClientAsync(`${base}/SymXchange/findby?wsdl`);
        client.addHttpHeader('Authorization', `Bearer ${h.token}`);
        client.setSecurity(new soap.WSSecurity('teller', 'secret', { mustUnderstand: true }));
        const call = client as unknown as Record<string, (args: unknown) => Promise<unknown>>;
        await assert.rejects(
          call.findBySSNAsync!(soapArguments(findBySsn, { SSN: '123456789', Credentials: adminCredentials }, 'wsse-1')),
          (error: {
            response?: { status?: number };
            root?: { Envelope?: { Body?: { Fault?: { faultcode?: string; faultstring?: string } } } };
          }) => {
            const fault = error.root?.Envelope?.Body?.Fault;
            assert.equal(error.response?.status, 500);
            assert.equal(fault?.faultcode, 'soapenv:MustUnderstand');
            assert.match(fault?.faultstring ?? '', /wsse:Security \(namespace http:\/\/docs\.oasis-open\.org\/wss\//);
            return true;
          },
        );
      });

      test('a mandatory header for this node, with no actor or the "next" actor, is refused', async () => {
        for (const actor of ['', ` soapenv:actor="http://schemas.xmlsoap.org/soap/actor/next"`]) {
          const answer = await post(
            envelope({ header: `<t:Tx xmlns:t="urn:example:tx"${actor} soapenv:mustUnderstand="1">7</t:Tx>` }),
          );
          assert.equal(answer.status, 500);
          assert.deepEqual(faultOf(answer), {
            faultcode: 'soapenv:MustUnderstand',
            code: 'VALIDATION_FAILED',
            codec: 'SOAP_MUST_UNDERSTAND',
          });
          assert.match(answer.text, /t:Tx \(namespace urn:example:tx\)/);
        }
      });

      test('a header that is not mandatory, or is for another actor, is ignored', async () => {
        for (const header of [
          '<t:Tx xmlns:t="urn:example:tx">7</t:Tx>',
          '<t:Tx xmlns:t="urn:example:tx" soapenv:mustUnderstand="0">7</t:Tx>',
          '<t:Tx xmlns:t="urn:example:tx" soapenv:actor="urn:example:proxy" soapenv:mustUnderstand="1">7</t:Tx>',
          // Unqualified, it is the entry's own attribute, not SOAP's.
          '<t:Tx xmlns:t="urn:example:tx" mustUnderstand="1">7</t:Tx>',
        ]) {
          const answer = await post(envelope({ header }));
          assert.equal(answer.status, 200, `${header}: ${answer.text}`);
        }
      });

      test('a mustUnderstand other than "1" or "0" is a Client fault', async () => {
        const answer = await post(
          envelope({ header: '<t:Tx xmlns:t="urn:example:tx" soapenv:mustUnderstand="true">7</t:Tx>' }),
        );
        assert.equal(answer.status, 500);
        assert.deepEqual(faultOf(answer), clientFault('SOAP_SCHEMA_VIOLATION'));
        assert.match(answer.text, /mustUnderstand is "1" or "0"/);
      });
    });

    describe('the body is UTF-8, strictly', () => {
      test('a charset other than UTF-8 is a Client fault XML_ENCODING_REFUSED', async () => {
        const answer = await post(envelope(), { 'content-type': 'text/xml; charset=iso-8859-1' });
        assert.equal(answer.status, 500);
        assert.deepEqual(faultOf(answer), clientFault('XML_ENCODING_REFUSED'));
        assert.match(answer.text, /charset is iso-8859-1/);
      });

      test('an XML declaration naming another encoding than the UTF-8 charset is a Client fault', async () => {
        const answer = await post(envelope({ prolog: '<?xml version="1.0" encoding="ISO-8859-1"?>' }));
        assert.deepEqual(faultOf(answer), clientFault('XML_ENCODING_REFUSED'));
        assert.match(answer.text, /encoding="ISO-8859-1" and the Content-Type charset=utf-8/);
      });

      test('bytes that are not UTF-8 are a Client fault XML_INVALID_UTF8, not replacement characters', async () => {
        const [before, after] = envelope({ messageId: 'Zo\u0000' }).split('\u0000');
        const latin1 = Uint8Array.from([...utf8(before!), 0xeb, ...utf8(after!)]);
        const answer = await post(latin1);
        assert.equal(answer.status, 500);
        assert.deepEqual(faultOf(answer), clientFault('XML_INVALID_UTF8'));
        assert.match(answer.text, new RegExp(`offset ${utf8(before!).length}\\b`));
        assert.doesNotMatch(answer.text, /\uFFFD/);
      });

      test('UTF-8 with a byte order mark is answered', async () => {
        const answer = await post(Uint8Array.from([0xef, 0xbb, 0xbf, ...utf8(envelope())]));
        assert.equal(answer.status, 200, answer.text);
      });

      test('multi-byte UTF-8 text comes back byte for byte (the MessageId echoed)', async () => {
        const messageId = 'réf-€-😀-Ω';
        const answer = await post(utf8(envelope({ messageId, prolog: '<?xml version="1.0" encoding="UTF-8"?>' })), {
          'content-type': 'text/xml',
        });
        assert.equal(answer.status, 200, answer.text);
        const echoed = Buffer.from(`cmn:MessageId="${messageId}"`, 'utf8');
        assert.ok(Buffer.from(answer.bytes).includes(echoed), answer.text);
      });
    });

    describe('request-derived text in a Fault is clipped', () => {
      test('a 200 KB element name gets a Fault of a few KB (XML_NAME_TOO_LONG)', async () => {
        const name = 'N'.repeat(200_000);
        const answer = await post(envelope({ extra: `<${name}/>` }));
        assert.equal(answer.status, 500);
        assert.deepEqual(faultOf(answer), clientFault('XML_NAME_TOO_LONG'));
        assert.ok(answer.bytes.length < 4096, `${answer.bytes.length} bytes`);
      });

      test('a long value, name, namespace or SOAPAction is quoted clipped: every Fault stays a few KB', async () => {
        const long = 'x'.repeat(100_000);
        const name = `E${'n'.repeat(1000)}`; // within the reader's limit: the codec refuses it
        const cases: [string, string | Uint8Array, Record<string, string>?][] = [
          ['an integer', envelope({ extra: `<DeviceInformation DeviceType="T" DeviceNumber="${long}"/>` })],
          ['an unknown element', envelope({ extra: `<${name}/>` })],
          ['an unknown attribute', envelope({ extra: `<DeviceInformation ${name}="1"/>` })],
          [
            'an unknown operation',
            `<s:Envelope xmlns:s="${SOAP_NS}"><s:Body><f:${name} xmlns:f="urn:${long}"/></s:Body></s:Envelope>`,
          ],
          ['a mandatory header', envelope({ header: `<h:${name} xmlns:h="urn:${long}" soapenv:mustUnderstand="1"/>` })],
          ['a SOAPAction', envelope(), { soapaction: `${FINDBY_NS}/findByMICR${long.slice(0, 8000)}` }],
          ['a charset', envelope(), { 'content-type': `text/xml; charset=${long.slice(0, 8000)}` }],
          ['a duplicate attribute', envelope({ extra: `<DeviceInformation ${name}="1" ${name}="2"/>` })],
        ];
        for (const [what, body, headers] of cases) {
          const answer = await post(body, headers);
          assert.equal(answer.status, 500, what);
          assert.ok(answer.bytes.length < 4096, `${what}: ${answer.bytes.length} bytes`);
          assert.match(answer.text, /…/, `${what}: the quote is clipped`);
        }
      });
    });

    describe('the audit trail', () => {
      test('a call refused as bad XML is audited with its status, code, token and request id', async () => {
        const answer = await post('<soapenv:Envelope', { 'x-request-id': `edge-xml-${backend.name}` });
        assert.equal(answer.status, 500);
        const row = await auditRow(`edge-xml-${backend.name}`);
        assert.ok(row, 'audited');
        assert.deepEqual(
          { operation: row.operation, status: row.status, code: row.code, tokenName: row.tokenName },
          { operation: 'P1:findBySSN', status: 500, code: 'VALIDATION_FAILED', tokenName: 'test' },
        );
      });

      test('every call refused before an operation is known is audited, under its SOAPAction or the endpoint', async () => {
        const cases: {
          readonly id: string;
          readonly body: string | Uint8Array;
          readonly headers: Record<string, string>;
          readonly expected: Pick<AuditRow, 'operation' | 'status' | 'code' | 'tokenName'>;
        }[] = [
          {
            id: 'unknown-operation',
            body: `<s:Envelope xmlns:s="${SOAP_NS}"><s:Body><f:nothing xmlns:f="${FINDBY_NS}"/></s:Body></s:Envelope>`,
            headers: { soapaction: '' },
            expected: { operation: 'soap:/SymXchange/findby', status: 500, code: 'NOT_FOUND', tokenName: 'test' },
          },
          {
            id: 'media-type',
            body: '{}',
            headers: { 'content-type': 'application/json' },
            expected: { operation: 'P1:findBySSN', status: 415, code: 'UNSUPPORTED_MEDIA_TYPE', tokenName: 'test' },
          },
          {
            id: 'too-large',
            body: envelope({ ssn: 'x'.repeat(h.config.bodyLimit) }),
            headers: {},
            expected: { operation: 'P1:findBySSN', status: 500, code: 'PAYLOAD_TOO_LARGE', tokenName: 'test' },
          },
          {
            id: 'no-token',
            body: envelope(),
            headers: { authorization: '', soapaction: `"${FINDBY_NS}/findByMICR"` },
            expected: { operation: 'P1:findByMICR', status: 401, code: 'UNAUTHENTICATED', tokenName: null },
          },
          {
            id: 'must-understand',
            body: envelope({ header: '<t:Tx xmlns:t="urn:example:tx" soapenv:mustUnderstand="1"/>' }),
            headers: { soapaction: 'urn:not-an-action' },
            expected: {
              operation: 'soap:/SymXchange/findby',
              status: 500,
              code: 'VALIDATION_FAILED',
              tokenName: 'test',
            },
          },
          {
            id: 'encoding',
            body: envelope(),
            headers: { 'content-type': 'text/xml; charset=utf-16' },
            expected: { operation: 'P1:findBySSN', status: 500, code: 'VALIDATION_FAILED', tokenName: 'test' },
          },
        ];
        for (const { id, body, headers, expected } of cases) {
          const requestId = `edge-${id}-${backend.name}`;
          const answer = await post(body, { ...headers, 'x-request-id': requestId });
          assert.equal(answer.status, expected.status, `${id}: ${answer.text.slice(0, 300)}`);
          const row = await auditRow(requestId);
          assert.ok(row, `${id} is audited`);
          assert.deepEqual(
            { operation: row.operation, status: row.status, code: row.code, tokenName: row.tokenName },
            expected,
            id,
          );
        }
      });
    });
  });
}
