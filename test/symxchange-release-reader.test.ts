/**
 * The release reader (src/symxchange/release-reader.ts): a release's facts read from WSDLs and XSDs through a
 * loader, as a gateway reads a core's own (`<endpoint>?wsdl` and its imports, or a directory). No vendor
 * file is needed: the documents are written here, or are coregate's own served WSDL. What a core serves is
 * hostile input, so every bound and refusal is a behaviour here, each error naming the document at fault.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { RELEASE_3_0, type SymxRelease } from '../src/catalog/symxchange/index.js';
import { OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { createSymxMapping } from '../src/symxchange/mapping.js';
import {
  namespaceAliases,
  namespaceRole,
  readRelease,
  RELEASE_READ_LIMITS,
  SymxReleaseError,
  type ReadReleaseOptions,
} from '../src/symxchange/release-reader.js';
import { wsdlDocument } from '../src/symxchange/wsdl.js';

const BASE = 'http://www.symxchange.generated.symitar.com/';
/** The scheme of the release that publishes no WSDL: `v2/` services over a `v1/` common namespace. */
const NS = {
  account: `${BASE}v2/account`,
  retrieve: `${BASE}v2/account/dto/retrieve`,
  update: `${BASE}v2/account/dto/update`,
  common: `${BASE}v1/common/dto/common`,
};
const XSD_NS = 'http://www.w3.org/2001/XMLSchema';

/** An XML Schema document: the namespace, its prefixes, imports (location → namespace) and declarations. */
function schema(targetNamespace: string, imports: Readonly<Record<string, string>>, body: string): string {
  return (
    `<?xml version="1.0" encoding="utf-8"?>\n<xsd:schema xmlns:xsd="${XSD_NS}" xmlns:tns="${targetNamespace}"` +
    ` xmlns:common="${NS.common}" xmlns:retrieve="${NS.retrieve}" xmlns:update="${NS.update}" targetNamespace="${targetNamespace}">` +
    Object.entries(imports)
      .map(([location, namespace]) => `<xsd:import schemaLocation="${location}" namespace="${namespace}"/>`)
      .join('') +
    `${body}</xsd:schema>`
  );
}

/** A wrapper element with its one child, as SymXchange declares every body element. */
const wrapper = (name: string, child: string, type: string) =>
  `<xsd:element name="${name}"><xsd:complexType><xsd:sequence>` +
  `<xsd:element minOccurs="0" maxOccurs="1" name="${child}" type="${type}"/>` +
  `</xsd:sequence></xsd:complexType></xsd:element>`;

/** A SOAP 1.1 document/literal WSDL of the account service: operation name → [request child type, response child, type]. */
function accountWsdl(
  operations: Readonly<Record<string, readonly [string, string, string]>>,
  imports: Readonly<Record<string, string>>,
  types: string,
  address = 'http://core.example:8087/SymXchange/v2/account',
): string {
  const names = Object.keys(operations);
  const wrappers = names
    .map((name) => {
      const [request, responseChild, response] = operations[name]!;
      return wrapper(name, 'Request', request) + wrapper(`${name}Response`, responseChild, response);
    })
    .join('');
  const messages = names
    .map(
      (name) =>
        `<wsdl:message name="${name}Request"><wsdl:part name="parameters" element="tns:${name}"/></wsdl:message>` +
        `<wsdl:message name="${name}Response"><wsdl:part name="parameters" element="tns:${name}Response"/></wsdl:message>`,
    )
    .join('');
  const portType = names
    .map(
      (name) =>
        `<wsdl:operation name="${name}"><wsdl:input message="tns:${name}Request"/><wsdl:output message="tns:${name}Response"/></wsdl:operation>`,
    )
    .join('');
  // As 2020.00's: no style on the binding (WSDL 1.1's default, document).
  const binding = names
    .map(
      (name) =>
        `<wsdl:operation name="${name}"><soap:operation soapAction="${NS.account}/${name}"/>` +
        '<wsdl:input><soap:body use="literal"/></wsdl:input><wsdl:output><soap:body use="literal"/></wsdl:output></wsdl:operation>',
    )
    .join('');
  return (
    '<?xml version="1.0" encoding="utf-8"?>\n' +
    `<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/"` +
    ` xmlns:xsd="${XSD_NS}" xmlns:tns="${NS.account}" xmlns:retrieve="${NS.retrieve}" xmlns:update="${NS.update}"` +
    ` xmlns:common="${NS.common}" name="AccountService" targetNamespace="${NS.account}">` +
    '<xsd:documentation>Version 2.1</xsd:documentation>' +
    `<wsdl:types>${schema(NS.account, imports, types + wrappers).replace(/^<\?xml[^>]*>\n/, '')}</wsdl:types>` +
    `${messages}<wsdl:portType name="AccountService">${portType}</wsdl:portType>` +
    `<wsdl:binding name="AccountServiceSOAPBinding" type="tns:AccountService">` +
    `<soap:binding transport="http://schemas.xmlsoap.org/soap/http"/>${binding}</wsdl:binding>` +
    `<wsdl:service name="AccountService"><wsdl:port name="AccountServicePort" binding="tns:AccountServiceSOAPBinding">` +
    `<soap:address location="${address}"/></wsdl:port></wsdl:service></wsdl:definitions>`
  );
}

/**
 * A small account service laid out as 2020.00's: the WSDL imports `xsd/…`, and the update schema imports
 * `common.xsd` relative to itself. ShareHold is read whole and updated through its updateable fields only.
 */
const ACCOUNT_FILES: Readonly<Record<string, string>> = {
  'wsdl/AccountService.wsdl': accountWsdl(
    {
      getShareHoldSelectFields: [
        'tns:ShareHoldSelectFieldsRequest',
        'SingleResponse',
        'tns:ShareHoldSelectFieldsResponse',
      ],
      updateShareHoldByID: ['tns:UpdateShareHoldByIDRequest', 'UpdateResponse', 'tns:ShareHoldUpdateByIDResponse'],
    },
    {
      'xsd/common.xsd': NS.common,
      'xsd/account_retrieve.xsd': NS.retrieve,
      'xsd/account_update.xsd': NS.update,
    },
    '<xsd:attribute name="BranchId" type="xsd:string"/>' +
      '<xsd:complexType name="ShareHoldSelectFieldsRequest"><xsd:sequence>' +
      '<xsd:element minOccurs="0" name="AccountNumber" type="xsd:string"/>' +
      '<xsd:element minOccurs="0" name="ShareHoldLocator" type="xsd:int"/>' +
      '</xsd:sequence><xsd:attribute name="MessageId" type="xsd:string" use="required"/>' +
      '<xsd:attribute ref="tns:BranchId"/></xsd:complexType>' +
      '<xsd:complexType name="ShareHoldSelectFieldsResponse"><xsd:sequence>' +
      '<xsd:element minOccurs="0" name="ShareHold" type="retrieve:ShareHold"/></xsd:sequence></xsd:complexType>' +
      '<xsd:complexType name="UpdateShareHoldByIDRequest"><xsd:complexContent mixed="false">' +
      '<xsd:extension base="update:ShareHoldUpdateRequest"><xsd:sequence>' +
      '<xsd:element minOccurs="0" name="AccountNumber" type="xsd:string"/>' +
      '<xsd:element minOccurs="0" name="ShareId" type="xsd:string"/>' +
      '</xsd:sequence></xsd:extension></xsd:complexContent></xsd:complexType>' +
      '<xsd:complexType name="ShareHoldUpdateByIDResponse"><xsd:sequence>' +
      '<xsd:element minOccurs="0" name="UpdateStatus" type="common:UpdateStatus"/></xsd:sequence></xsd:complexType>',
  ),
  'wsdl/xsd/common.xsd': schema(
    NS.common,
    {},
    '<xsd:simpleType name="Text40"><xsd:restriction base="xsd:string"><xsd:maxLength value="40"/></xsd:restriction></xsd:simpleType>' +
      '<xsd:complexType name="Status"><xsd:sequence><xsd:element minOccurs="0" name="Message" type="xsd:string"/></xsd:sequence></xsd:complexType>' +
      '<xsd:complexType name="BaseResponse"><xsd:sequence><xsd:element minOccurs="0" name="Status" type="tns:Status"/></xsd:sequence></xsd:complexType>' +
      '<xsd:complexType name="UpdateStatus"><xsd:sequence>' +
      '<xsd:element minOccurs="0" maxOccurs="unbounded" name="FailedUpdateStatus" type="tns:FailedUpdateStatus"/>' +
      '</xsd:sequence></xsd:complexType>' +
      '<xsd:complexType name="FailedUpdateStatus"><xsd:sequence>' +
      '<xsd:element minOccurs="0" name="ErrorCode" type="xsd:string"/></xsd:sequence></xsd:complexType>',
  ),
  'wsdl/xsd/account_retrieve.xsd': schema(
    NS.retrieve,
    { 'common.xsd': NS.common },
    '<xsd:complexType name="ShareHold"><xsd:sequence>' +
      '<xsd:element minOccurs="0" name="Amount" type="xsd:decimal"/>' +
      '<xsd:element minOccurs="0" name="Locator" type="xsd:int"/>' +
      '<xsd:element minOccurs="0" name="PayeeName" type="common:Text40"/>' +
      '<xsd:element minOccurs="0" name="RecordChangeDate" nillable="true" type="xsd:date"/>' +
      '</xsd:sequence></xsd:complexType>',
  ),
  'wsdl/xsd/account_update.xsd': schema(
    NS.update,
    { 'common.xsd': NS.common },
    '<xsd:complexType name="ShareHoldUpdateRequest"><xsd:sequence>' +
      '<xsd:element minOccurs="0" name="ShareHoldLocator" type="xsd:int"/>' +
      '<xsd:element minOccurs="1" name="ShareHoldUpdateableFields" type="update:ShareHoldUpdateableFields"/>' +
      '</xsd:sequence></xsd:complexType>' +
      '<xsd:complexType name="ShareHoldUpdateableFields"><xsd:sequence>' +
      '<xsd:element minOccurs="0" name="Amount" type="xsd:decimal"/>' +
      '<xsd:element minOccurs="0" name="PayeeName" type="common:Text40"/>' +
      '</xsd:sequence></xsd:complexType>',
  ),
};

const ACCOUNT_OPERATIONS: ReadReleaseOptions['operations'] = [
  { service: 'account', name: 'getShareHoldSelectFields', family: 'P1' },
  { service: 'account', name: 'updateShareHoldByID', family: 'P1' },
  { service: 'account', name: 'updateShareHoldByID', family: 'P2' },
];

/** A loader over in-memory documents that records what it is asked for. */
function filesLoader(files: Readonly<Record<string, string>>) {
  const asked: string[] = [];
  const load = async (location: string) => {
    asked.push(location);
    const text = files[location];
    if (text === undefined) throw new Error('no such file');
    return text;
  };
  return { asked, load };
}

/** Reads `files`' account service (its WSDL at wsdl/AccountService.wsdl unless another is named). */
const readAccount = (files: Readonly<Record<string, string>>, wsdl = 'wsdl/AccountService.wsdl') =>
  readRelease({
    release: 'test',
    load: filesLoader(files).load,
    services: { account: wsdl },
    operations: ACCOUNT_OPERATIONS,
  });

/** The error reading `files` fails with: a SymxReleaseError naming a document. */
async function refusal(read: Promise<unknown>): Promise<SymxReleaseError> {
  const error = await read.then(
    () => assert.fail('the release was read'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof SymxReleaseError, `not a SymxReleaseError: ${String(error)}`);
  return error;
}

describe('reading a release through its loader', () => {
  let release: SymxRelease;
  let asked: string[];
  before(async () => {
    const loader = filesLoader(ACCOUNT_FILES);
    asked = loader.asked;
    release = await readRelease({
      release: 'v2',
      load: loader.load,
      services: { account: 'wsdl/AccountService.wsdl' },
      operations: ACCOUNT_OPERATIONS,
    });
  });

  test('each document is loaded once, imports resolved against the document that names them', () => {
    assert.deepEqual(asked, [
      'wsdl/AccountService.wsdl',
      'wsdl/xsd/common.xsd',
      'wsdl/xsd/account_retrieve.xsd',
      'wsdl/xsd/account_update.xsd',
    ]);
    assert.deepEqual(release.source, { repository: '', commit: '', paths: asked, identicalCopies: [] });
  });

  test("the service is the WSDL's: endpoint path, version note, binding, and the aliases of the schemas it loads", () => {
    assert.deepEqual(release.services.account, {
      name: 'account',
      wsdlName: 'AccountService',
      wsdlVersion: '2.1',
      endpointPath: '/SymXchange/v2/account',
      targetNamespace: NS.account,
      schemaNamespaces: ['account', 'account/retrieve', 'account/update', 'symxcommon'],
      portType: 'AccountService',
      binding: 'AccountServiceSOAPBinding',
      port: 'AccountServicePort',
      soapVersion: '1.1',
      style: 'document',
      use: 'literal',
      transport: 'http://schemas.xmlsoap.org/soap/http',
    });
  });

  test("coregate's operations select the SOAP operations, with their families and body elements", () => {
    assert.deepEqual(
      release.operations.map((op) => [op.name, op.coregateFamilies, op.request.child.type, op.response.child.name]),
      [
        ['getShareHoldSelectFields', ['P1'], 'account:ShareHoldSelectFieldsRequest', 'SingleResponse'],
        ['updateShareHoldByID', ['P1', 'P2'], 'account:UpdateShareHoldByIDRequest', 'UpdateResponse'],
      ],
    );
  });

  test('named simple types resolve to their built-in base and facets; global attributes are qualified', () => {
    const payee = release.complexTypes['account/retrieve:ShareHold']!.content!.particles[2];
    assert.deepEqual(payee, {
      kind: 'element',
      name: 'PayeeName',
      type: 'xsd:string',
      simpleType: 'symxcommon:Text40',
      minOccurs: 0,
      maxOccurs: 1,
      nillable: false,
      restrictions: { maxLength: 40 },
    });
    const branch = release.complexTypes['account:ShareHoldSelectFieldsRequest']!.attributes[1];
    assert.deepEqual(branch, {
      name: 'BranchId',
      qualified: true,
      namespace: 'account',
      type: 'xsd:string',
      use: 'optional',
    });
  });

  test("a record's type is the retrieve schema's when the update schema has only the updateable fields", () => {
    assert.deepEqual(release.recordTypes, { ShareHold: 'account/retrieve:ShareHold' });
  });

  test("a record's update object is the element of the update request whose type holds the record's fields", () => {
    assert.deepEqual(release.updateObjects, {
      ShareHold: { element: 'ShareHoldUpdateableFields', type: 'account/update:ShareHoldUpdateableFields' },
    });
  });

  test('the common error types are kept, and every type the operations reach', () => {
    assert.deepEqual(release.errorTypes, ['symxcommon:Status', 'symxcommon:BaseResponse']);
    assert.deepEqual(Object.keys(release.complexTypes), [
      'account/retrieve:ShareHold',
      'account/update:ShareHoldUpdateRequest',
      'account/update:ShareHoldUpdateableFields',
      'account:ShareHoldSelectFieldsRequest',
      'account:ShareHoldSelectFieldsResponse',
      'account:ShareHoldUpdateByIDResponse',
      'account:UpdateShareHoldByIDRequest',
      'symxcommon:BaseResponse',
      'symxcommon:FailedUpdateStatus',
      'symxcommon:Status',
      'symxcommon:UpdateStatus',
    ]);
  });

  test("coregate's own served WSDL reads back as the 3.0 facts of its operations", async () => {
    const mapping = createSymxMapping(OPERATIONS, SHARED_SCHEMAS);
    const address = 'http://coregate.test/SymXchange/account';
    const served = await readRelease({
      release: 'served',
      load: async () => wsdlDocument(mapping, { service: 'account', family: 'P1' }, address),
      services: { account: `${address}?wsdl` },
      operations: OPERATIONS.filter((op) => op.family === 'P1'),
    });
    const p1 = (release: SymxRelease) =>
      release.operations
        .filter((op) => op.service === 'account' && op.coregateFamilies.includes('P1'))
        .map((op) => ({ ...op, coregateFamilies: [] }));
    assert.deepEqual(p1(served), p1(RELEASE_3_0));
    // The served WSDL writes each facet inline, so the named simple types are not in it.
    const withoutSimpleTypes = (value: unknown) =>
      JSON.parse(JSON.stringify(value, (key, v: unknown) => (key === 'simpleType' ? undefined : v))) as unknown;
    for (const [name, type] of Object.entries(served.complexTypes))
      assert.deepEqual(withoutSimpleTypes(type), withoutSimpleTypes(RELEASE_3_0.complexTypes[name]), name);
    assert.deepEqual(served.updateObjects, RELEASE_3_0.updateObjects);
    const accountRecords = Object.entries(RELEASE_3_0.recordTypes).filter(([, type]) => type.startsWith('account/'));
    assert.deepEqual(served.recordTypes, Object.fromEntries(accountRecords));
  });
});

describe('namespace aliases name a role, the same in every release', () => {
  test('the three SymXchange namespace schemes give the same aliases', () => {
    const schemes = [
      ['crud/account', 'crud/account/dto/update', 'noncrud/findby/dto', 'symxcommon'], // 3.0
      ['account', 'account/dto/update', 'findby/dto', 'common/dto/common'], // 2020.00
      ['v2/account', 'v2/account/dto/update', 'v2/findby/dto', 'v1/common/dto/common'], // no WSDL published
    ];
    for (const scheme of schemes)
      assert.deepEqual(
        scheme.map((path) => namespaceRole(`${BASE}${path}`)),
        ['account', 'account/update', 'findby/dto', 'symxcommon'],
        scheme.join(', '),
      );
  });

  test('a namespace outside the SymXchange base gets an alias derived from it, unique among the release', () => {
    const aliases = namespaceAliases([
      'urn:example:core:records',
      'http://example.com/core/records',
      'http://example.com/core/records/',
      `${BASE}crud/account`,
    ]);
    assert.deepEqual(Object.fromEntries(aliases), {
      [`${BASE}crud/account`]: 'account',
      'http://example.com/core/records': 'example.com/core/records',
      'http://example.com/core/records/': 'example.com/core/records-2',
      'urn:example:core:records': 'example-core-records',
    });
  });

  test('two namespaces of one role both get aliases derived from their URIs, so neither is taken for the other', () => {
    const aliases = namespaceAliases([`${BASE}v1/account`, `${BASE}v2/account`]);
    assert.deepEqual(
      [...aliases.values()],
      ['www.symxchange.generated.symitar.com/v1/account', 'www.symxchange.generated.symitar.com/v2/account'],
    );
  });
});

describe('what a core serves is refused, naming the document, when it is hostile or not understood', () => {
  const withWsdl = (wsdl: string) => ({ ...ACCOUNT_FILES, 'wsdl/AccountService.wsdl': wsdl });
  const withSchema = (file: string, text: string) => ({ ...ACCOUNT_FILES, [`wsdl/xsd/${file}`]: text });
  const wsdlText = ACCOUNT_FILES['wsdl/AccountService.wsdl']!;

  test('a document type declaration, so no entity can be declared or expanded', async () => {
    const doctype = wsdlText.replace('?>\n', '?>\n<!DOCTYPE lol [<!ENTITY lol "lol">]>\n');
    const error = await refusal(readAccount(withWsdl(doctype)));
    assert.equal(error.document, 'wsdl/AccountService.wsdl');
    assert.match(error.message, /document type declarations and entity declarations are refused/);
  });

  test('an entity reference no DTD declares', async () => {
    const error = await refusal(readAccount(withWsdl(wsdlText.replace('Version 2.1', 'Version &lol;'))));
    assert.equal(error.document, 'wsdl/AccountService.wsdl');
    assert.match(error.message, /entity/i);
  });

  test('a document over 16 MiB, before it is parsed', async () => {
    const huge = `<xsd:schema xmlns:xsd="${XSD_NS}">${' '.repeat(RELEASE_READ_LIMITS.maxDocumentLength)}</xsd:schema>`;
    const error = await refusal(readAccount(withSchema('common.xsd', huge)));
    assert.equal(error.message, 'wsdl/xsd/common.xsd: larger than 16777216 characters');
  });

  test('more documents than the bound (64)', async () => {
    const files: Record<string, string> = { ...ACCOUNT_FILES };
    const imports = Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`extra${i}.xsd`, `urn:extra:${i}`]));
    files['wsdl/xsd/common.xsd'] = files['wsdl/xsd/common.xsd']!.replace(
      `targetNamespace="${NS.common}">`,
      `targetNamespace="${NS.common}">${Object.entries(imports)
        .map(([location, namespace]) => `<xsd:import schemaLocation="${location}" namespace="${namespace}"/>`)
        .join('')}`,
    );
    for (const [location, namespace] of Object.entries(imports))
      files[`wsdl/xsd/${location}`] = schema(namespace, {}, '');
    const error = await refusal(readAccount(files));
    assert.match(error.message, /^wsdl\/xsd\/extra\d+\.xsd: more than 64 documents in the release$/);
  });

  test('imports nested deeper than the bound (8)', async () => {
    const files: Record<string, string> = { ...ACCOUNT_FILES };
    files['wsdl/xsd/common.xsd'] = files['wsdl/xsd/common.xsd']!.replace(
      `targetNamespace="${NS.common}">`,
      `targetNamespace="${NS.common}"><xsd:import schemaLocation="deep1.xsd" namespace="urn:deep:1"/>`,
    );
    for (let depth = 1; depth <= 10; depth += 1)
      files[`wsdl/xsd/deep${depth}.xsd`] = schema(
        `urn:deep:${depth}`,
        { [`deep${depth + 1}.xsd`]: `urn:deep:${depth + 1}` },
        '',
      );
    const error = await refusal(readAccount(files));
    assert.equal(error.message, 'wsdl/xsd/deep8.xsd: imported more than 8 deep from wsdl/AccountService.wsdl');
  });

  test('an import cycle', async () => {
    // The WSDL imports common.xsd, which imports account_update.xsd, which imports common.xsd.
    const cyclic = withSchema('common.xsd', schema(NS.common, { 'account_update.xsd': NS.update }, ''));
    const error = await refusal(readAccount(cyclic));
    assert.equal(
      error.message,
      'wsdl/xsd/account_update.xsd: import cycle: wsdl/AccountService.wsdl → wsdl/xsd/common.xsd → ' +
        'wsdl/xsd/account_update.xsd → wsdl/xsd/common.xsd',
    );
  });

  test('an import from above the WSDL directory, by absolute path, or from another origin', async () => {
    for (const location of [
      '../../secrets.xsd',
      '/etc/passwd',
      'file:///etc/passwd',
      'http://elsewhere.example/a.xsd',
    ]) {
      const error = await refusal(
        readAccount(withSchema('common.xsd', schema(NS.common, { [location]: 'urn:x' }, ''))),
      );
      assert.equal(error.document, 'wsdl/xsd/common.xsd', location);
      assert.match(error.message, /import of ".*" refused: /, location);
    }
    const overHttp = {
      'http://core.example/SymXchange/v2/account?wsdl': accountWsdl(
        {},
        { 'http://elsewhere.example/common.xsd': NS.common },
        '',
      ),
    };
    const error = await refusal(readAccount(overHttp, 'http://core.example/SymXchange/v2/account?wsdl'));
    assert.match(error.message, /refused: not on the WSDL's origin http:\/\/core\.example$/);
  });

  test('an XML Schema construct the reader does not understand, by name and place', async () => {
    const grouped = withSchema(
      'account_retrieve.xsd',
      ACCOUNT_FILES['wsdl/xsd/account_retrieve.xsd']!.replace(
        '<xsd:element minOccurs="0" name="Locator" type="xsd:int"/>',
        '<xsd:group ref="tns:Keys"/>',
      ),
    );
    const error = await refusal(readAccount(grouped));
    assert.equal(error.message, 'wsdl/xsd/account_retrieve.xsd: unsupported <xsd:group> in account/retrieve:ShareHold');
  });

  test('a declared name longer than the bound (256)', async () => {
    const long = withSchema(
      'account_retrieve.xsd',
      ACCOUNT_FILES['wsdl/xsd/account_retrieve.xsd']!.replace('"Locator"', `"${'L'.repeat(300)}"`),
    );
    const error = await refusal(readAccount(long));
    assert.equal(error.document, 'wsdl/xsd/account_retrieve.xsd');
    assert.match(error.message, /<xsd:element> name="L+…" is not a name$/);
  });

  test('a document the loader cannot give', async () => {
    const { 'wsdl/xsd/account_update.xsd': _missing, ...files } = ACCOUNT_FILES;
    const error = await refusal(readAccount(files));
    assert.equal(error.message, 'wsdl/xsd/account_update.xsd: cannot be read: no such file');
  });

  test('a type extending itself', async () => {
    const circular = withSchema(
      'account_update.xsd',
      ACCOUNT_FILES['wsdl/xsd/account_update.xsd']!.replace(
        '<xsd:complexType name="ShareHoldUpdateRequest"><xsd:sequence>',
        '<xsd:complexType name="ShareHoldUpdateRequest"><xsd:complexContent><xsd:extension base="tns:ShareHoldUpdateRequest"><xsd:sequence>',
      ).replace(
        '</xsd:sequence></xsd:complexType><xsd:complexType name="ShareHoldUpdateableFields">',
        '</xsd:sequence></xsd:extension></xsd:complexContent></xsd:complexType><xsd:complexType name="ShareHoldUpdateableFields">',
      ),
    );
    const error = await refusal(readAccount(circular));
    assert.equal(
      error.message,
      'wsdl/xsd/account_update.xsd: complex type account/update:ShareHoldUpdateRequest extends itself',
    );
  });
});
