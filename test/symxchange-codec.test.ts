/**
 * The SymXchange codec (src/symxchange/codec.ts) over the mapping (src/symxchange/mapping.ts): every
 * operation but logon/logoff has a SOAP operation (the WSDLs' own, or one derived from its sibling), and
 * JSON → SOAP → JSON is the identity for every operation's requests and responses. What coregate's JSON can
 * say and the wire cannot (child selectors where the XSD's selector has none) is refused with
 * SOAP_SCHEMA_VIOLATION naming the element path, never dropped. Envelopes written as SymXchange clients
 * write them decode, element order follows each XSD sequence, and hostile XML is refused before parsing.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { Type } from 'typebox';
import { RECORDS } from '../src/catalog/index.js';
import {
  CREDENTIAL_SCHEMAS,
  CREDENTIAL_SECRET_CHOICES,
  envelopeProperties,
  type CredentialKind,
} from '../src/contract/envelope.js';
import { OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import type { AnyOperation } from '../src/operations/types.js';
import { createSymxCodec, plainDecimal, SoapCodecError, type Endpoint } from '../src/symxchange/codec.js';
import { valueArbitrary, type JsonSchema } from './support/schema-arbitrary.js';

const codec = createSymxCodec({ operations: OPERATIONS, schemas: SHARED_SCHEMAS });
const { mapping } = codec;
const SCHEMAS = new Map(SHARED_SCHEMAS.map((schema) => [(schema as JsonSchema).$id!, schema as JsonSchema]));
const CORE_OPERATIONS = OPERATIONS.filter((op) => op.service !== 'usermanagement');
const operation = (name: string, family: 'P1' | 'P2' = 'P1') =>
  OPERATIONS.find((op) => op.name === name && op.family === family)!;
const endpointOf = (op: AnyOperation): Endpoint => ({ service: op.service as Endpoint['service'], family: op.family });

/** The element names of a complex type of the mapping (one level). */
const elementNames = (typeName: string): string[] => {
  const names: string[] = [];
  const visit = (group: { particles: readonly unknown[] } | undefined) =>
    group?.particles.forEach((p) => {
      const particle = p as { kind: string; name?: string; particles?: readonly unknown[] };
      if (particle.kind === 'element') names.push(particle.name!);
      else if (particle.kind !== 'any') visit(particle as { particles: readonly unknown[] });
    });
  visit(mapping.complexType(typeName).content);
  return names;
};

/** One credential kind the operation's XSD choice takes, with one secret where the core takes one of two. */
function credentialsArbitrary(op: AnyOperation): fc.Arbitrary<unknown> {
  const kinds = op.credentials.filter((kind: CredentialKind) => kind in CREDENTIAL_SCHEMAS);
  return fc.constantFrom(...kinds).chain((kind: CredentialKind) =>
    valueArbitrary(Type.Object(CREDENTIAL_SCHEMAS[kind]) as unknown as JsonSchema, ['Credentials', kind], {
      schemas: SCHEMAS,
      mode: 'valid',
    }).map((value) => {
      const fields = { ...(value as Record<string, unknown>) };
      const [kept, ...others] = CREDENTIAL_SECRET_CHOICES[kind] ?? [];
      if (kept) for (const name of others) delete fields[name];
      return { [kind]: fields };
    }),
  );
}

/** Child selectors the operation's wire selector lacks (the vendor's get…SelectFields and document lists). */
function special(op: AnyOperation) {
  const wireRequest = mapping.wireOperation(op).request.child.type;
  return (path: readonly string[]): fc.Arbitrary<unknown> | undefined => {
    const last = path[path.length - 1] ?? '';
    if (path.length === 1 && last === 'Credentials') return credentialsArbitrary(op);
    if (path.length === 1 && last === 'nxAttributes') return fc.constant(undefined);
    if (path[0] === 'SelectableFields' && path.length === 2 && /SelectableFields$/.test(last)) {
      const selector = mapping
        .complexType(wireRequest)
        .content!.particles.find((p) => p.kind === 'element' && p.name === 'SelectableFields') as { type: string };
      if (!elementNames(selector.type).includes(last)) return fc.constant(undefined);
    }
    return undefined;
  };
}

/** JSON values through JSON text, as a request body arrives (no undefined properties). */
const asJson = (value: unknown) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;

/** The entry ids of a repeating field of a `<Record>Fields` selector (Memo: 1 and 2), or undefined for a scalar. */
function entryIdsOf(selector: string | undefined, fieldName: string): number[] | undefined {
  const record = RECORDS.find((r) => `${r.name}Fields` === selector);
  const maxEntries = record?.fields.find((f) => f.name === fieldName)?.repeating?.maxEntries;
  return maxEntries === undefined ? undefined : Array.from({ length: maxEntries }, (_, i) => i + 1);
}

/**
 * What the wire cannot tell apart, made equal on both sides: an empty list is no element (absent), and a
 * repeating field's selector `false` is no selector and `true` every entry id (1 and 2 for Memo), as the
 * store reads them alike.
 */
function normalize(value: unknown, key?: string, nullIsAbsent = false): unknown {
  if (Array.isArray(value)) return value.map((item) => normalize(item, undefined, nullIsAbsent));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [name, item] of Object.entries(value)) {
    if (Array.isArray(item) && item.length === 0) continue;
    if (nullIsAbsent && item === null) continue;
    const entryIds = typeof item === 'boolean' ? entryIdsOf(key, name) : undefined;
    if (entryIds) {
      if (item) out[name] = entryIds;
      continue;
    }
    out[name] = normalize(item, name, nullIsAbsent);
  }
  return out;
}

/**
 * A generated answer as an operation gives it: its MessageId is the operation's name (spec), and
 * findByLookup's AccountNumber is its Result's.
 */
function asAnswer(op: AnyOperation, generated: unknown): Record<string, unknown> {
  const result = asJson(generated);
  if ('MessageId' in result) result.MessageId = op.name;
  if (op.name === 'findByLookup') {
    const found = result.Result as { AccountNumber: string } | null;
    result.AccountNumber = found ? found.AccountNumber : null;
  }
  return result;
}

describe('the mapping', () => {
  test("every operation but logon and logoff has a SOAP operation: the WSDLs' own, or one derived from its sibling", () => {
    const derived = CORE_OPERATIONS.filter((op) => mapping.wireOperation(op).derivedFrom);
    assert.equal(derived.length, 18);
    assert.ok(derived.every((op) => op.service === 'collateral' && op.family === 'P2'));
    assert.ok(!mapping.carries(operation('logon')));
    for (const op of CORE_OPERATIONS) {
      const wire = mapping.wireOperation(op);
      assert.equal(wire.name, op.name);
      assert.ok(wire.soapAction.endsWith(`/${op.name}`), wire.soapAction);
      assert.ok(wire.request.element.endsWith(`:${op.name}`));
    }
  });

  test("a derived request is its sibling's without what the JSON lacks, with the types the JSON needs", () => {
    const wire = (name: string) => mapping.wireOperation(operation(name, 'P2'));
    assert.equal(wire('getCollateral').derivedFrom, 'getCollateralSelectFields');
    assert.ok(!elementNames(wire('getCollateral').request.child.type).includes('SelectableFields'));
    assert.ok(
      !elementNames(wire('getCollateralCollHoldListSelectFields').request.child.type).includes('PagingRequestContext'),
    );
    const search = wire('searchCollateralDocumentSelectFields');
    const filter = mapping
      .complexType(search.request.child.type)
      .content!.particles.find((p) => p.kind === 'element' && p.name === 'SearchFilter') as { type: string };
    assert.equal(filter.type, 'collateral/retrieve:CollateralDocumentFilter', 'a filter with the children filter');
  });

  test('a list operation answers a SingleResponse holding the record list; a paged one answers as its sibling', () => {
    const list = mapping.wireOperation(operation('getCollateralCollHoldListSelectFields', 'P2'));
    assert.equal(list.response.child.name, 'SingleResponse');
    assert.deepEqual(elementNames(list.response.child.type), ['CollateralCollHoldList', 'Version_1']);
    const paged = mapping.wireOperation(operation('getCollateralCollHoldPagedList', 'P2'));
    assert.equal(paged.response.child.name, 'PagedResponse');
  });

  test('FailedUpdateStatus repeats on the 2022.01 family (its array reports each failed field), and occurs once on the persistent family, as the XSD has it', () => {
    const occurs = (family?: 'P1' | 'P2') =>
      (
        mapping
          .complexType('symxcommon:UpdateStatus', family)
          .content!.particles.find((p) => p.kind === 'element' && p.name === 'FailedUpdateStatus') as {
          maxOccurs: unknown;
        }
      ).maxOccurs;
    assert.equal(occurs('P2'), 'unbounded');
    assert.equal(occurs('P1'), 1);
    assert.equal(occurs(), 'unbounded', 'the codec reads either, by the JSON schema');
  });
});

describe('JSON → SOAP → JSON is the identity', () => {
  for (const op of CORE_OPERATIONS) {
    test(`${op.family} ${op.name}: requests`, () => {
      const schema = Type.Object({ ...envelopeProperties, ...op.request }) as unknown as JsonSchema;
      const bodies = valueArbitrary(schema, [], { schemas: SCHEMAS, mode: 'valid', special: special(op) });
      fc.assert(
        fc.property(bodies, (generated) => {
          // What a gateway sends: a share update without the fields the core's elements cannot carry.
          const forCore = op.coreRequest?.(asJson(generated) as never, {
            release: '3.0',
            fields: codec.mapping.updateObject(op)?.fields,
          });
          fc.pre(!forCore || forCore.request !== undefined);
          const body = forCore ? forCore.request! : asJson(generated);
          const xml = codec.encodeRequest(op, body, {
            messageId: 'm-1',
            deviceInformation: { DeviceType: 'GW', DeviceNumber: 7 },
          });
          const decoded = codec.decodeRequest(xml, endpointOf(op));
          assert.equal(decoded.operation, op);
          assert.equal(decoded.messageId, 'm-1');
          assert.deepEqual(decoded.deviceInformation, { DeviceType: 'GW', DeviceNumber: 7 });
          assert.deepEqual(normalize(decoded.body), normalize(body));
        }),
        { numRuns: 50 },
      );
    });

    test(`${op.family} ${op.name}: responses`, () => {
      const results = valueArbitrary(op.response as unknown as JsonSchema, [], { schemas: SCHEMAS, mode: 'valid' });
      fc.assert(
        fc.property(results, (generated) => {
          const result = asAnswer(op, generated);
          const decoded = codec.decodeResponse(op, codec.encodeResponse(op, result, 'request-7'));
          assert.equal(decoded.messageId, 'request-7');
          // A record's null is no element (its elements are not nillable) and reads back absent; the
          // gateway answers it as null again from the read plan (test/gateway.test.ts).
          assert.deepEqual(normalize(decoded.result, undefined, true), normalize(result, undefined, true));
        }),
        { numRuns: 50 },
      );
    });
  }
});

describe('the wire form', () => {
  const token = { TokenCredentials: { TokenId: 'tok' } };

  test('a findBySSN envelope as SymXchange clients write it decodes to the JSON body', () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"
    xmlns:fin="http://www.symxchange.generated.symitar.com/noncrud/findby"
    xmlns:cmn="http://www.symxchange.generated.symitar.com/symxcommon">
  <soapenv:Header/>
  <soapenv:Body>
    <fin:findBySSN>
      <Request cmn:MessageId="abc-1">
        <SSN>123456789</SSN>
        <DeviceInformation DeviceType="KIOSK" DeviceNumber="12"/>
        <Credentials>
          <AdministrativeCredentials><Password>s3cret &amp; &lt;x&gt;</Password></AdministrativeCredentials>
        </Credentials>
      </Request>
    </fin:findBySSN>
  </soapenv:Body>
</soapenv:Envelope>`;
    const decoded = codec.decodeRequest(xml, { service: 'findby', family: 'P1' });
    assert.equal(decoded.operation, operation('findBySSN'));
    assert.equal(decoded.messageId, 'abc-1');
    assert.deepEqual(decoded.deviceInformation, { DeviceType: 'KIOSK', DeviceNumber: 12 });
    assert.deepEqual(decoded.body, {
      SSN: '123456789',
      Credentials: { AdministrativeCredentials: { Password: 's3cret & <x>' } },
    });
  });

  test('a P2 share update names its fields object <Record>Fields on the wire, and decodes back for P2', () => {
    const body = {
      Credentials: token,
      AccountNumber: '0000000001',
      ShareId: '0001',
      ShareHoldLocator: 5,
      ShareHoldUpdatableFields: { Amount: 12.5, ExpirationDate: null },
    };
    const xml = codec.encodeRequest(operation('updateShareHoldByID', 'P2'), body, { messageId: 'm' });
    assert.match(xml, /<ShareHoldFields><Amount>12\.5<\/Amount><ExpirationDate xsi:nil="true"\/><\/ShareHoldFields>/);
    assert.doesNotMatch(xml, /UpdatableFields/);
    assert.deepEqual(codec.decodeRequest(xml, { service: 'account', family: 'P2' }).body, body);
  });

  test('the body element is qualified, findby MessageId is cmn: qualified, crud MessageId is not', () => {
    const findby = codec.encodeRequest(
      operation('findBySSN'),
      { Credentials: token, SSN: '123456789' },
      { messageId: 'm' },
    );
    assert.match(findby, /<tns:findBySSN><Request cmn:MessageId="m">/);
    const crud = codec.encodeRequest(
      operation('getCollateral', 'P2'),
      { Credentials: token, CollateralNumber: 'C1' },
      { messageId: 'm' },
    );
    assert.match(crud, /<tns:getCollateral><Request MessageId="m">/);
  });

  test('elements follow each XSD sequence: findby puts DeviceInformation before Credentials, findByShortName Credentials first, crud after', () => {
    const device = { messageId: 'm', deviceInformation: { DeviceType: 'GW', DeviceNumber: 1 } };
    const order = (xml: string) =>
      [...xml.matchAll(/<(SSN|ShortName|ShareId|Credentials|DeviceInformation|ShareFields)\b/g)].map((m) => m[1]);
    assert.deepEqual(
      order(codec.encodeRequest(operation('findBySSN'), { SSN: '123456789', Credentials: token }, device)),
      ['SSN', 'DeviceInformation', 'Credentials'],
    );
    assert.deepEqual(
      order(codec.encodeRequest(operation('findByShortName'), { ShortName: 'SMITH', Credentials: token }, device)),
      ['Credentials', 'DeviceInformation', 'ShortName'],
    );
    assert.deepEqual(
      order(
        codec.encodeRequest(
          operation('updateShareByID'),
          { ShareFields: { Description: 'x' }, Credentials: token, ShareId: '0001' },
          device,
        ),
      ),
      ['ShareId', 'Credentials', 'DeviceInformation', 'ShareFields'],
    );
  });

  test('record fields are written in the XSD order (ASCII: UserChar10 before UserChar2), and read in any order', () => {
    const body = {
      Credentials: token,
      AccountNumber: '0000000001',
      ShareId: '0001',
      ShareTrackingLocator: 1,
      ShareTrackingFields: { UserChar2: 'b', UserChar10: 'a' },
    };
    const xml = codec.encodeRequest(operation('updateShareTrackingByID'), body, { messageId: 'm' });
    assert.ok(xml.indexOf('<UserChar10>') < xml.indexOf('<UserChar2>'));
    const swapped = xml.replace(
      '<UserChar10>a</UserChar10><UserChar2>b</UserChar2>',
      '<UserChar2>b</UserChar2><UserChar10>a</UserChar10>',
    );
    // Read in any order, as a non-validating core reads what SOAP toolkits write.
    assert.deepEqual(codec.decodeRequest(swapped, { service: 'account', family: 'P1' }).body, body);
  });

  test('repeating entries are repeated elements with their EntryId (a required null is no element); the Memo selector `true` sends every entry id', () => {
    const result = {
      CorpTransfer: {
        Memo: [
          { EntryId: 1, Memo: 'first' },
          { EntryId: 2, Memo: null },
        ],
      },
    };
    const op = operation('getCorpTransferSelectFields');
    const xml = codec.encodeResponse(op, result, op.name);
    assert.match(xml, /<Memo><EntryId>1<\/EntryId><Memo>first<\/Memo><\/Memo><Memo><EntryId>2<\/EntryId><\/Memo>/);
    assert.deepEqual(codec.decodeResponse(op, xml).result, result);
    const request = {
      Credentials: token,
      CorpTransferGlobalSequenceDate: '2024-01-02',
      CorpTransferGlobalSequence: 3,
      SelectableFields: { CorpTransferFields: { Memo: true } },
    };
    const wire = codec.encodeRequest(op, request, { messageId: 'm' });
    assert.match(wire, /<CorpTransferFields><Memo>1<\/Memo><Memo>2<\/Memo><\/CorpTransferFields>/);
    assert.deepEqual(codec.decodeRequest(wire, endpointOf(op)).body.SelectableFields, {
      CorpTransferFields: { Memo: [1, 2] },
    });
  });

  test("a record field's null is no element, as a core writes it: its elements are not nillable", () => {
    const op = operation('getCollateralTrackingSelectFields', 'P2');
    const result = { CollateralTracking: { Locator: 3, UserChar1: 'x', ExpireDate: null, UserAmount1: null } };
    const xml = codec.encodeResponse(op, result, 'm');
    assert.match(xml, /<CollateralTracking><[^]*<\/CollateralTracking>/);
    assert.doesNotMatch(xml, /ExpireDate|UserAmount1|xsi:nil/);
    assert.deepEqual(codec.decodeResponse(op, xml).result, { CollateralTracking: { Locator: 3, UserChar1: 'x' } });
  });

  test('Version_1 and _value_1 nulls are the empty <Version_1/> marker and the empty wildcard', () => {
    const op = operation('findByAnyCard');
    const result = {
      AccountNumber: ['0000000001', '0000000002'],
      MessageId: 'findByAnyCard',
      Version_1: null,
      _value_1: null,
    };
    const xml = codec.encodeResponse(op, result, 'findByAnyCard');
    assert.match(
      xml,
      /<PluralResponse cmn:MessageId="findByAnyCard"><AccountNumber>0000000001<\/AccountNumber><AccountNumber>0000000002<\/AccountNumber><Version_1\/><\/PluralResponse>/,
    );
    assert.deepEqual(codec.decodeResponse(op, xml).result, result);
  });

  test('a core response with the marker the JSON does not show decodes without it', () => {
    const xml = `<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body>
      <ns2:getCorpTransferSelectFieldsResponse xmlns:ns2="http://www.symxchange.generated.symitar.com/crud/corptransfer">
        <SingleResponse MessageId="x"><CorpTransfer><Amount>10.25</Amount><EffectiveDate>2024-02-29</EffectiveDate><Version_1/></CorpTransfer><Version_1/></SingleResponse>
      </ns2:getCorpTransferSelectFieldsResponse></S:Body></S:Envelope>`;
    assert.deepEqual(codec.decodeResponse(operation('getCorpTransferSelectFields'), xml).result, {
      CorpTransfer: { Amount: 10.25, EffectiveDate: '2024-02-29' },
    });
  });

  test("a paged search's top-level Query travels in SearchFilter, and a derived getCollateral sends no selector", () => {
    const get = codec.encodeRequest(
      operation('getCollateral', 'P2'),
      { Credentials: token, CollateralNumber: 'C1' },
      { messageId: 'm' },
    );
    assert.match(
      get,
      /<tns:getCollateral><Request MessageId="m"><CollateralNumber>C1<\/CollateralNumber><Credentials>/,
    );
    assert.doesNotMatch(get, /SelectableFields/);
    const search = operation('searchCollateralCollHoldPagedSelectFields', 'P2');
    const body = { Credentials: token, CollateralNumber: 'C1', Query: "Amount > 1 AND Reference1 = '<&>'" };
    const xml = codec.encodeRequest(search, body, { messageId: 'm' });
    assert.match(xml, /<SearchFilter><Query>Amount &gt; 1 AND Reference1 = '&lt;&amp;&gt;'<\/Query><\/SearchFilter>/);
    assert.deepEqual(codec.decodeRequest(xml, endpointOf(search)).body, body);
  });

  test("the spec's empty credential objects are no credential; the one kind given is sent", () => {
    const body = {
      Credentials: { TokenCredentials: {}, AdministrativeCredentials: { Password: 'p' } },
      SSN: '123456789',
    };
    const xml = codec.encodeRequest(operation('findBySSN'), body, { messageId: 'm' });
    assert.match(
      xml,
      /<Credentials><AdministrativeCredentials><Password>p<\/Password><\/AdministrativeCredentials><\/Credentials>/,
    );
  });

  test('every failed field is a FailedUpdateStatus of its own; nothing failed is no element, whatever the family', () => {
    const failure = (ErrorCode: string) => ({
      Record: 'ShareHold',
      ErrorCode,
      ErrorMessage: 'x',
      PrimaryKeyField: [{ Name: 'AccountNumber', Value: '0000000001' }],
    });
    const p2 = operation('updateShareHoldByID', 'P2');
    const failed = {
      UpdateStatus: { isAllFieldsUpdateSuccess: false, FailedUpdateStatus: [failure('A'), failure('B')] },
      MessageId: 'updateShareHoldByID',
    };
    const xml = codec.encodeResponse(p2, failed, 'r');
    assert.equal(xml.match(/<FailedUpdateStatus>/g)?.length, 2);
    assert.deepEqual(codec.decodeResponse(p2, xml).result, failed);
    const empty = {
      Record: null,
      ErrorCode: null,
      ErrorMessage: null,
      PrimaryKeyField: [],
    };
    const cases: [AnyOperation, unknown][] = [
      [p2, []],
      [operation('updateShareHoldByID'), null],
      [operation('updateShareNameByID'), empty],
    ];
    for (const [op, nothing] of cases) {
      const result = {
        UpdateStatus: {
          isAllFieldsUpdateSuccess: true,
          FailedUpdateStatus: nothing,
          ...(op.family === 'P1' && op.name !== 'updateShareNameByID' ? { Version_1: null, _value_1: null } : {}),
        },
        ...(op.name === 'updateShareNameByID' ? {} : { MessageId: op.name }),
      };
      const encoded = codec.encodeResponse(op, result, 'r');
      assert.doesNotMatch(encoded, /FailedUpdateStatus/, `${op.family} ${op.name}`);
      assert.deepEqual(codec.decodeResponse(op, encoded).result, result, `${op.family} ${op.name}`);
    }
  });

  test('findByLookup answers Result or AccountNumber: a found Result is sent alone, a bare AccountNumber names only the account', () => {
    const op = operation('findByLookup');
    const found = {
      Result: { AccountNumber: '0000000003', IdType: 'SHARE', Id: '0010' },
      AccountNumber: '0000000003',
      MessageId: 'findByLookup',
    };
    const xml = codec.encodeResponse(op, found, 'r');
    assert.doesNotMatch(xml, /<\/Result><AccountNumber>/);
    assert.deepEqual(codec.decodeResponse(op, xml).result, found);
    const bare = xml.replace(/<Result>.*<\/Result>/, '<AccountNumber>0000000004</AccountNumber>');
    assert.deepEqual(codec.decodeResponse(op, bare).result, {
      Result: { AccountNumber: '0000000004', IdType: 'NONE', Id: null },
      AccountNumber: '0000000004',
      MessageId: 'findByLookup',
    });
  });

  test("a response echoes the request's MessageId; the JSON's MessageId stays the operation name", () => {
    const op = operation('findBySSN');
    const xml = codec.encodeResponse(op, { AccountNumber: [], MessageId: 'findBySSN' }, 'caller-42');
    assert.match(xml, /<PluralResponse cmn:MessageId="caller-42"/);
    assert.deepEqual(codec.decodeResponse(op, xml), {
      result: { AccountNumber: [], MessageId: 'findBySSN' },
      messageId: 'caller-42',
    });
  });

  test("a newer core's elements after Version_1 and elements coregate does not ask for are skipped in a response", () => {
    const xml = `<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body>
      <ns2:findBySSNResponse xmlns:ns2="http://www.symxchange.generated.symitar.com/noncrud/findby"
          xmlns:c="http://www.symxchange.generated.symitar.com/symxcommon">
        <PluralResponse c:MessageId="x"><AccountNumber>0000000001</AccountNumber><Version_1/><Extra>1</Extra><x:More xmlns:x="urn:x"/></PluralResponse>
      </ns2:findBySSNResponse></S:Body></S:Envelope>`;
    assert.deepEqual(codec.decodeResponse(operation('findBySSN'), xml).result, {
      AccountNumber: ['0000000001'],
      MessageId: 'findBySSN',
    });
  });

  test('attributes the JSON does not carry (BranchId, ProcessorUser) are accepted and not passed on', () => {
    const xml = codec
      .encodeRequest(
        operation('getCollateral', 'P2'),
        { Credentials: token, CollateralNumber: 'C1' },
        { messageId: 'm' },
      )
      .replace('<Request MessageId="m">', '<Request MessageId="m" tns:BranchId="3">')
      .replace('<Credentials>', '<Credentials cmn:ProcessorUser="12">');
    assert.deepEqual(codec.decodeRequest(xml, { service: 'collateral', family: 'P2' }).body, {
      Credentials: token,
      CollateralNumber: 'C1',
    });
  });

  test('numbers are written in plain decimal notation, never with an exponent', () => {
    assert.equal(plainDecimal(1e21), '1000000000000000000000');
    assert.equal(plainDecimal(1.5e-7), '0.00000015');
    assert.equal(plainDecimal(-2.5e-3), '-0.0025');
    assert.equal(plainDecimal(12.34), '12.34');
  });
});

describe('what has no SOAP form is refused with its element path', () => {
  const token = { TokenCredentials: { TokenId: 'tok' } };
  const violation = (path: string) => (error: unknown) =>
    error instanceof SoapCodecError && error.code === 'SOAP_SCHEMA_VIOLATION' && error.path === path;

  test('a member credential where the operation takes staff credentials only', () => {
    const body = { Credentials: { CardCredentials: { CardNumber: '4000000000000002' } }, SSN: '123456789' };
    assert.throws(
      () => codec.encodeRequest(operation('findBySSN'), body, { messageId: 'm' }),
      violation('findBySSN/Request/Credentials/CardCredentials'),
    );
  });

  test("two credential kinds: the core takes one, and which is the caller's choice", () => {
    const body = {
      Credentials: { AdministrativeCredentials: { Password: 'p' }, TokenCredentials: { TokenId: 't' } },
      SSN: '123456789',
    };
    assert.throws(
      () => codec.encodeRequest(operation('findBySSN'), body, { messageId: 'm' }),
      violation('findBySSN/Request/Credentials'),
    );
  });

  test("a child selector where the WSDL's selector has none (get…SelectFields, document lists)", () => {
    const select = {
      Credentials: token,
      CollateralNumber: 'C1',
      SelectableFields: { CollateralTrackingSelectableFields: { IncludeAllCollateralTrackingFields: true } },
    };
    assert.throws(
      () => codec.encodeRequest(operation('getCollateralSelectFields', 'P2'), select, { messageId: 'm' }),
      violation('getCollateralSelectFields/Request/SelectableFields/CollateralTrackingSelectableFields'),
    );
    const page = {
      Credentials: token,
      CollateralNumber: 'C1',
      SelectableFields: { CollateralDocumentTrackingSelectableFields: {} },
    };
    assert.throws(
      () =>
        codec.encodeRequest(operation('getCollateralDocumentPagedListSelectFields', 'P2'), page, { messageId: 'm' }),
      violation(
        'getCollateralDocumentPagedListSelectFields/Request/SelectableFields/CollateralDocumentTrackingSelectableFields',
      ),
    );
  });

  test('more Memo entries than maxOccurs', () => {
    const memo = [1, 2, 3].map((EntryId) => ({ EntryId, Memo: 'm' }));
    const ct = operation('getCorpTransferSelectFields');
    assert.throws(
      () => codec.encodeResponse(ct, { CorpTransfer: { Memo: memo } }, 'm'),
      violation('getCorpTransferSelectFieldsResponse/SingleResponse/CorpTransfer/Memo'),
    );
  });

  test('two alternatives of a choice in a SOAP request (two credential kinds) are refused', () => {
    const xml = codec
      .encodeRequest(operation('findBySSN'), { Credentials: token, SSN: '123456789' }, { messageId: 'm' })
      .replace('<TokenCredentials>', '<AdministrativeCredentials/><TokenCredentials>');
    assert.throws(
      () => codec.decodeRequest(xml, { service: 'findby', family: 'P1' }),
      violation('findBySSN/Request/Credentials'),
    );
  });

  test('an element the JSON cannot carry is refused in a request', () => {
    const xml = codec
      .encodeRequest(operation('findBySSN'), { Credentials: token, SSN: '123456789' }, { messageId: 'm' })
      .replace('<SSN>', '<Bogus/><SSN>');
    assert.throws(
      () => codec.decodeRequest(xml, { service: 'findby', family: 'P1' }),
      violation('findBySSN/Request/Bogus'),
    );
  });

  test('logon has no SymXchange operation; an unknown body element, or one of another service, is refused', () => {
    assert.throws(() => codec.encodeRequest(operation('logon'), {}, { messageId: 'm' }));
    const xml =
      '<e:Envelope xmlns:e="http://schemas.xmlsoap.org/soap/envelope/"><e:Body><x:nope xmlns:x="http://www.symxchange.generated.symitar.com/noncrud/findby"><Request/></x:nope></e:Body></e:Envelope>';
    assert.throws(() => codec.decodeRequest(xml, { service: 'findby', family: 'P1' }), {
      code: 'SOAP_UNKNOWN_OPERATION',
    });
    const ssn = codec.encodeRequest(
      operation('findBySSN'),
      { Credentials: token, SSN: '123456789' },
      { messageId: 'm' },
    );
    assert.throws(() => codec.decodeRequest(ssn, { service: 'collateral', family: 'P2' }), {
      code: 'SOAP_UNKNOWN_OPERATION',
    });
  });
});

const FINDBY: Endpoint = { service: 'findby', family: 'P1' };

describe('hostile XML is refused before parsing', () => {
  const wrap = (body: string) =>
    `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>${body}</soapenv:Body></soapenv:Envelope>`;

  test('an external entity (XXE) is refused with XML_DTD_REFUSED', () => {
    const xml = `<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${wrap('<a>&xxe;</a>')}`;
    assert.throws(() => codec.decodeRequest(xml, FINDBY), { code: 'XML_DTD_REFUSED' });
  });

  test('billion laughs is refused with XML_DTD_REFUSED', () => {
    const entities = Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i};`.repeat(10)}">`).join('');
    const xml = `<!DOCTYPE lolz [<!ENTITY lol0 "lol">${entities}]>${wrap('<a>&lol9;</a>')}`;
    assert.throws(() => codec.decodeRequest(xml, FINDBY), { code: 'XML_DTD_REFUSED' });
  });

  test('an undeclared entity reference is malformed, never expanded', () => {
    assert.throws(() => codec.decodeRequest(wrap('<a>&ext;</a>'), FINDBY), { code: 'XML_MALFORMED' });
  });

  test('oversized, too deep and too many elements are refused', () => {
    const small = createSymxCodec({
      operations: OPERATIONS,
      schemas: SHARED_SCHEMAS,
      limits: { maxLength: 1000, maxElements: 50 },
    });
    assert.throws(() => small.decodeRequest(wrap(`<a>${'x'.repeat(2000)}</a>`), FINDBY), { code: 'XML_TOO_LARGE' });
    assert.throws(() => codec.decodeRequest(wrap(`${'<a>'.repeat(100)}${'</a>'.repeat(100)}`), FINDBY), {
      code: 'XML_TOO_DEEP',
    });
    assert.throws(() => small.decodeRequest(wrap('<b/>'.repeat(60)), FINDBY), { code: 'XML_TOO_MANY_ELEMENTS' });
  });

  test('malformed XML and a non-envelope are refused with stable codes', () => {
    assert.throws(() => codec.decodeRequest('<a><b></a>', FINDBY), { code: 'XML_MALFORMED' });
    assert.throws(() => codec.decodeRequest('<a/>', FINDBY), { code: 'SOAP_NOT_AN_ENVELOPE' });
  });
});
