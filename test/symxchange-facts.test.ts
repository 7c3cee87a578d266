/**
 * SymXchange facts (src/catalog/symxchange, generated from the published WSDLs/XSDs of releases 3.0 and
 * 2020.00): against release 3.0, every coregate operation has its SOAP operation or a listed sibling, and the
 * records the operations carry hold exactly their XSD elements (every element of the share records' retrieve
 * and update types is a catalog field of its type's kind, but for the listed child lists); in both releases,
 * each share record has its record type and update object, and 2020.00 differs from 3.0 as published; the
 * committed modules are what the script writes.
 * The lists below are facts docs/symxchange.md explains; a change to the catalog, the operations or the
 * WSDLs that moves a field or an operation in or out of them fails here, so it is a decision, never a drift.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  fieldOf,
  fieldRuleViolation,
  recordDef,
  SHARE_RECORD_NAMES,
  wireRuleViolation,
  type FieldDef,
  type FieldKind,
  type RecordDef,
} from '../src/catalog/index.js';
import {
  complexType,
  complexTypeNames,
  elementsOf,
  isComplexType,
  KNOWN_RELEASES,
  recordElements,
  recordType,
  releaseFacts,
  RELEASE_2020_00,
  RELEASE_3_0,
  SYMX_ERROR_TYPES,
  symxchangeOperation,
  symxchangeOperations,
  symxchangeService,
  VERSION_ELEMENT,
  type SymxRelease,
  type XsdElement,
} from '../src/catalog/symxchange/index.js';
import { envelopeProperties } from '../src/contract/envelope.js';
import { COLLATERAL_RECORDS } from '../src/operations/collateral.js';
import { OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { createSymxMapping } from '../src/symxchange/mapping.js';
import { SHARE_UPDATE_RECORDS } from '../src/operations/share-update.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MIRROR = process.env.SYMXIFY_REPO ?? '/work/.mirror/nicholashosken+symxify/repo';

/** coregate's operations that have a SymXchange counterpart: all but session management (logon, logoff). */
const CORE_OPERATIONS = OPERATIONS.filter((op) => op.service !== 'usermanagement');

/**
 * coregate operations the 3.0 WSDLs lack (all are 2022.01 collateral reads of spec document 2), and the WSDL
 * operation whose pattern each follows: the same record read with field selection and/or paging.
 */
const LACKING_IN_WSDL: Readonly<Record<string, string>> = {
  // Single-record read without SelectableFields: the WSDL reads one record only with field selection.
  getCollateral: 'getCollateralSelectFields',
  getCollateralCollHold: 'getCollateralCollHoldSelectFields',
  getCollateralDocument: 'getCollateralDocumentSelectFields',
  getCollateralDocumentTracking: 'getCollateralDocumentTrackingSelectFields',
  getCollateralTracking: 'getCollateralTrackingSelectFields',
  // Paged list without SelectableFields: the WSDL pages only with field selection.
  getCollateralCollHoldPagedList: 'getCollateralCollHoldPagedListSelectFields',
  getCollateralDocumentPagedList: 'getCollateralDocumentPagedListSelectFields',
  getCollateralFmHistoryPagedList: 'getCollateralFmHistoryPagedListSelectFields',
  getCollateralTrackingPagedList: 'getCollateralTrackingPagedListSelectFields',
  // Unpaged list (hasReachedMaximumListSize): the WSDL lists child records only page by page.
  getCollateralCollHoldListSelectFields: 'getCollateralCollHoldPagedListSelectFields',
  getCollateralDocumentListSelectFields: 'getCollateralDocumentPagedListSelectFields',
  getCollateralDocumentTrackingListSelectFields: 'getCollateralDocumentTrackingPagedListSelectFields',
  getCollateralFmHistoryListSelectFields: 'getCollateralFmHistoryPagedListSelectFields',
  getCollateralTrackingListSelectFields: 'getCollateralTrackingPagedListSelectFields',
  // Unpaged search (SearchFilter, list response): the WSDL searches only page by page.
  searchCollateralCollHoldSelectFields: 'searchCollateralCollHoldPagedSelectFields',
  searchCollateralDocumentSelectFields: 'searchCollateralDocumentPagedSelectFields',
  searchCollateralDocumentTrackingSelectFields: 'searchCollateralDocumentTrackingPagedSelectFields',
  searchCollateralFmHistorySelectFields: 'searchCollateralFmHistoryPagedSelectFields',
};

/** The records the operations carry: the corporate transfer, the share and its sub-records, the collateral tree. */
const CARRIED_RECORDS: readonly RecordDef[] = [
  recordDef('CorpTransfer'),
  ...SHARE_UPDATE_RECORDS,
  ...COLLATERAL_RECORDS,
];

/** The XSD built-in types a catalog kind may map to. */
const XSD_TYPES_OF_KIND: Readonly<Record<FieldKind, readonly string[]>> = {
  string: ['xsd:string'],
  integer: ['xsd:short', 'xsd:int'],
  money: ['xsd:decimal'],
  rate: ['xsd:decimal'],
  date: ['xsd:date'],
};
/** The ranges of the XSD integer types: a catalog range must lie within its element's. */
const XSD_INTEGER_RANGES: Readonly<Record<string, { minimum: number; maximum: number }>> = {
  'xsd:short': { minimum: -32768, maximum: 32767 },
  'xsd:int': { minimum: -2147483648, maximum: 2147483647 },
};

/** The element of a field, and the element holding its value (the entry's own element when it repeats). */
function fieldElements(record: RecordDef, field: FieldDef): { element: XsdElement; value: XsdElement } | undefined {
  const element = recordElements(record.name).find((e) => e.name === field.name);
  if (!element) return undefined;
  const value = isComplexType(element.type) ? elementsOf(element.type).find((e) => e.name === field.name) : element;
  assert.ok(value, `${record.name}.${field.name}: the entry type ${element.type} holds no ${field.name}`);
  return { element, value };
}

describe('SymXchange operations', () => {
  test('every coregate operation but logon/logoff has its SOAP operation, or is listed as lacking with a sibling', () => {
    for (const op of CORE_OPERATIONS) {
      const soap = symxchangeOperation(op.service, op.name);
      if (soap) {
        assert.ok(soap.coregateFamilies.includes(op.family), `${op.name} (${op.family}) is recorded for its family`);
        assert.equal(
          LACKING_IN_WSDL[op.name],
          undefined,
          `${op.name} has a SOAP operation: remove it from LACKING_IN_WSDL`,
        );
      } else {
        assert.ok(
          LACKING_IN_WSDL[op.name],
          `${op.service}/${op.name} has no SymXchange facts and is not in LACKING_IN_WSDL`,
        );
      }
    }
  });

  test('each operation the WSDLs lack names a coregate operation and a sibling the WSDL has, recorded as following it', () => {
    for (const [name, sibling] of Object.entries(LACKING_IN_WSDL)) {
      const ours = CORE_OPERATIONS.find((op) => op.name === name);
      assert.ok(ours, `${name} is not a coregate operation any more`);
      const soap = symxchangeOperation(ours.service, sibling);
      assert.ok(soap, `${ours.service}/${sibling} is not in the facts`);
      assert.ok(soap.siblingOf.includes(name), `${sibling}.siblingOf names ${name}`);
    }
    const recordedSiblings = symxchangeOperations().flatMap((op) => op.siblingOf.map((name) => [name, op.name]));
    assert.deepEqual(
      Object.fromEntries(recordedSiblings.sort()),
      Object.fromEntries(Object.entries(LACKING_IN_WSDL).sort()),
    );
  });

  test('the WSDLs have one version: P1 and P2 share updates both correspond to it, whose fields element has the P1 name', () => {
    for (const record of SHARE_UPDATE_RECORDS) {
      const soap = symxchangeOperation('account', `update${record.name}ByID`);
      assert.ok(soap, record.name);
      assert.deepEqual(soap.coregateFamilies, ['P1', 'P2']);
      const names = elementsOf(soap.request.child.type).map((e) => e.name);
      assert.ok(names.includes(`${record.name}Fields`), `${soap.name} carries ${record.name}Fields`);
      assert.ok(!names.includes(`${record.name}UpdatableFields`), `${soap.name} has no 2022.01 UpdatableFields`);
    }
  });

  test('every operation is document/literal with one wrapper child and no declared faults', () => {
    const wrappers = new Set(['Request', 'SingleResponse', 'PluralResponse', 'PagedResponse', 'UpdateResponse']);
    for (const op of symxchangeOperations()) {
      const service = symxchangeService(op.service);
      assert.deepEqual([service.soapVersion, service.style, service.use], ['1.1', 'document', 'literal']);
      assert.equal(op.request.child.name, 'Request', op.name);
      assert.ok(wrappers.has(op.response.child.name), `${op.name}: ${op.response.child.name}`);
      assert.ok(op.soapAction.endsWith(`/${op.name}`), op.soapAction);
      assert.deepEqual(op.faults, []);
    }
  });

  test('the facts hold exactly the complex types the operations and the error types reach', () => {
    const reached = new Set<string>();
    const visit = (name: string) => {
      if (reached.has(name)) return;
      reached.add(name);
      const type = complexType(name);
      if (type.base) visit(type.base);
      for (const element of elementsOf(name)) if (isComplexType(element.type)) visit(element.type);
    };
    for (const op of symxchangeOperations()) [op.request.child.type, op.response.child.type].forEach(visit);
    SYMX_ERROR_TYPES.forEach(visit);
    assert.deepEqual([...reached].sort(), [...complexTypeNames()].sort());
  });
});

describe('catalog fields and XSD elements', () => {
  test('every record the operations carry has a complex type of its name', () => {
    for (const record of CARRIED_RECORDS) {
      const name = recordType(record.name);
      assert.ok(name, `${record.name} has no SymXchange record type`);
      assert.ok(name.endsWith(`:${record.name}`), name);
    }
  });

  test('the catalog fields of a record are exactly its XSD elements, its child lists aside', () => {
    for (const record of CARRIED_RECORDS) {
      for (const field of record.fields) {
        assert.ok(fieldElements(record, field), `${record.name}.${field.name} is not in ${recordType(record.name)}`);
      }
      // A gateway refuses a field the catalog lacks (400, an unknown property): none may be missing.
      const missing = recordElements(record.name)
        .map((e) => e.name)
        .filter((name) => !record.fields.some((f) => f.name === name))
        .filter((name) => !record.children.some((child) => child.list === name));
      assert.deepEqual(missing, [], `XSD elements of ${record.name} the catalog lacks`);
    }
  });

  test('a field has an XSD type of its kind, and an integer range within its XSD type', () => {
    for (const record of CARRIED_RECORDS) {
      for (const field of record.fields) {
        const { value } = fieldElements(record, field)!;
        const key = `${record.name}.${field.name}`;
        assert.ok(XSD_TYPES_OF_KIND[field.kind].includes(value.type), `${key}: ${field.kind} vs ${value.type}`);
        const range = XSD_INTEGER_RANGES[value.type];
        if (field.kind === 'integer' && range) {
          assert.ok(
            field.minimum !== undefined && field.minimum >= range.minimum,
            `${key}: minimum ${field.minimum} within ${value.type}`,
          );
          assert.ok(
            field.maximum !== undefined && field.maximum <= range.maximum,
            `${key}: maximum ${field.maximum} within ${value.type}`,
          );
        }
      }
    }
  });

  test('a repeating field is a repeating {EntryId, <name>} entry in the XSD with as many entries; a scalar occurs once', () => {
    for (const record of CARRIED_RECORDS) {
      for (const field of record.fields) {
        const { element, value } = fieldElements(record, field)!;
        const key = `${record.name}.${field.name}`;
        if (!field.repeating) {
          assert.equal(element.maxOccurs, 1, `${key} repeats in the XSD only`);
          continue;
        }
        assert.ok(isComplexType(element.type), `${key} repeats in the catalog only`);
        assert.deepEqual(
          elementsOf(element.type).map((e) => [e.name, e.type]),
          [
            ['EntryId', 'xsd:short'],
            [field.name, value.type],
          ],
        );
        assert.equal(field.repeating.maxEntries, element.maxOccurs, `${key}: entries`);
      }
    }
  });
});

/**
 * The two schemas of the account service that carry the share records: `retrieve` (what a read answers)
 * and `update` (what an update sends). The facts hold one version, which both path families speak.
 */
const SHARE_DTO_SCHEMAS = ['account/retrieve', 'account/update'] as const;

/** Why a share's child list is no field: coregate's share does not nest its sub-records. */
const CHILD_LIST =
  'a child list: the share does not nest its sub-records, each is read and updated by its own operations ' +
  '(docs/decisions.md, "Share reads")';

/**
 * Elements of the share records' XSD types that are no catalog field, each with the reason, by
 * `<type>.<element>`. Nothing else may be missing: a gateway would refuse the field (400, an unknown
 * property) and the store could not hold it.
 */
const SHARE_ELEMENTS_NOT_FIELDS: Readonly<Record<string, string>> = {
  'account/retrieve:Share.ShareAnalysisList': CHILD_LIST,
  'account/retrieve:Share.ShareAnalysisGroupList': CHILD_LIST,
  'account/retrieve:Share.ShareAnalysisPlanList': CHILD_LIST,
  'account/retrieve:Share.ShareCheckOrderList': CHILD_LIST,
  'account/retrieve:Share.ShareHoldList': CHILD_LIST,
  'account/retrieve:Share.ShareNameList': CHILD_LIST,
  'account/retrieve:Share.ShareNoteList': CHILD_LIST,
  'account/retrieve:Share.ShareTrackingList': CHILD_LIST,
  'account/retrieve:Share.ShareTransferList': CHILD_LIST,
  'account/retrieve:Share.ShareTransactionList':
    'coregate keeps no share transactions (docs/decisions.md, "Share reads": not offered)',
};

/** The record types of the share and its nine sub-records in both schemas, with their elements but Version_1. */
const shareDtos = () =>
  SHARE_RECORD_NAMES.flatMap((name) =>
    SHARE_DTO_SCHEMAS.map((schema) => {
      const type = `${schema}:${name}`;
      const elements = isComplexType(type) ? elementsOf(type).filter((e) => e.name !== VERSION_ELEMENT) : [];
      return { record: recordDef(name), type, elements };
    }),
  );

describe('share records against every share type of the account XSDs', () => {
  test('the share and each of its nine sub-records have a retrieve and an update record type', () => {
    for (const { type, elements } of shareDtos()) assert.ok(elements.length > 0, `${type} is not in the facts`);
  });

  test('every element of a retrieve or update type is a catalog field, but for the listed child lists', () => {
    for (const { record, type, elements } of shareDtos()) {
      const missing = elements
        .filter((e) => !record.fields.some((f) => f.name === e.name))
        .map((e) => `${type}.${e.name}`)
        .filter((key) => !SHARE_ELEMENTS_NOT_FIELDS[key]);
      assert.deepEqual(missing, [], `XSD elements the catalog lacks: add them to ${record.name}`);
      const notInXsd = record.fields.filter((f) => !elements.some((e) => e.name === f.name)).map((f) => f.name);
      assert.deepEqual(notInXsd, [], `${record.name} fields ${type} lacks`);
    }
  });

  test('each listed exception is still an element of its type and still no catalog field', () => {
    const dtos = new Map(shareDtos().map((dto) => [dto.type, dto]));
    for (const key of Object.keys(SHARE_ELEMENTS_NOT_FIELDS)) {
      const [type, name] = [key.slice(0, key.lastIndexOf('.')), key.slice(key.lastIndexOf('.') + 1)];
      const dto = dtos.get(type);
      assert.ok(dto, `${type} is not a share record type`);
      assert.ok(
        dto.elements.some((e) => e.name === name),
        `${key} is not in the facts any more: unlist it`,
      );
      assert.ok(!dto.record.fields.some((f) => f.name === name), `${key} is a catalog field now: unlist it`);
    }
  });

  test("each element's XSD type is its catalog field's kind, repeating as the field repeats", () => {
    for (const { record, type, elements } of shareDtos()) {
      for (const element of elements) {
        const field = record.fields.find((f) => f.name === element.name);
        if (!field) continue;
        const key = `${type}.${element.name}`;
        if (!field.repeating) {
          assert.equal(element.maxOccurs, 1, `${key} repeats in the XSD only`);
          assert.ok(XSD_TYPES_OF_KIND[field.kind].includes(element.type), `${key}: ${field.kind} vs ${element.type}`);
          continue;
        }
        assert.equal(element.maxOccurs, field.repeating.maxEntries, `${key}: entries`);
        assert.ok(isComplexType(element.type), `${key} repeats in the catalog only`);
        const [entryId, value, ...rest] = elementsOf(element.type).filter((e) => e.name !== VERSION_ELEMENT);
        assert.deepEqual(
          [entryId?.name, entryId?.type, value?.name, rest.length],
          ['EntryId', 'xsd:short', field.name, 0],
        );
        assert.ok(XSD_TYPES_OF_KIND[field.kind].includes(value!.type), `${key}: ${field.kind} vs ${value!.type}`);
      }
    }
  });

  test('the retrieve selector <Record>Fields flags every catalog field: a boolean, or the EntryIds of a repeating one', () => {
    for (const name of SHARE_RECORD_NAMES) {
      const record = recordDef(name);
      const selector = `account/retrieve:${name}Fields`;
      const flags = elementsOf(selector).filter((e) => e.name !== VERSION_ELEMENT);
      assert.deepEqual(
        flags.map((e) => e.name).sort(),
        record.fields.map((f) => f.name).sort(),
        `${selector} flags exactly the fields of ${name}`,
      );
      for (const flag of flags) {
        const field = record.fields.find((f) => f.name === flag.name)!;
        const expected = field.repeating ? ['xsd:short', field.repeating.maxEntries] : ['xsd:boolean', 1];
        assert.deepEqual([flag.type, flag.maxOccurs], expected, `${selector}.${flag.name}`);
      }
    }
  });
});

describe('the releases coregate knows', () => {
  const releases = [RELEASE_3_0, RELEASE_2020_00];

  test('KNOWN_RELEASES names each release by its label', () => {
    assert.deepEqual(Object.keys(KNOWN_RELEASES).sort(), ['2020.00', '3.0']);
    for (const release of releases) assert.equal(KNOWN_RELEASES[release.release], release);
  });

  test('a namespace has the same alias in both releases, whatever its URI', () => {
    const [three, twenty] = releases.map((release) => release.namespaces);
    const shared = ['account', 'account/retrieve', 'account/update', 'findby', 'findby/dto', 'symxcommon'];
    for (const alias of shared) {
      assert.ok(three![alias] && twenty![alias], `${alias} in both`);
      assert.notEqual(three![alias]!.uri, twenty![alias]!.uri, `${alias}: the URIs differ`);
    }
    assert.equal(twenty!.symxcommon!.uri, 'http://www.symxchange.generated.symitar.com/common/dto/common');
  });

  test('every share record has a record type and an update object in both releases, holding only its fields', () => {
    for (const release of releases) {
      const facts = releaseFacts(release);
      for (const name of SHARE_RECORD_NAMES) {
        const type = facts.recordType(name);
        assert.ok(type?.endsWith(`:${name}`), `${release.release} ${name}: ${type}`);
        const update = facts.updateObject(name);
        assert.ok(update, `${release.release} ${name} has an update object`);
        const request = facts.operation('account', `update${name}ByID`)!.request.child.type;
        assert.deepEqual(facts.elementOf(request, update.element)?.type, update.type, `${request}.${update.element}`);
        const fields = new Set(facts.recordElements(name).map((e) => e.name));
        const strangers = facts
          .elementsOf(update.type)
          .filter((e) => e.name !== VERSION_ELEMENT && !fields.has(e.name))
          .map((e) => e.name);
        assert.deepEqual(strangers, [], `${release.release} ${update.type} elements that are no field of ${type}`);
      }
    }
  });

  test("3.0's record types are the update schema's; 2020.00's the retrieve schema's, its update schema holding only updateable fields", () => {
    assert.equal(releaseFacts(RELEASE_3_0).recordType('ShareHold'), 'account/update:ShareHold');
    assert.equal(releaseFacts(RELEASE_2020_00).recordType('ShareHold'), 'account/retrieve:ShareHold');
    assert.equal(releaseFacts(RELEASE_3_0).recordType('CorpTransfer'), 'corptransfer/retrieve:CorpTransfer');
  });

  test("ShareHold's update object is ShareHoldFields in 3.0 and ShareHoldUpdateableFields in 2020.00", () => {
    assert.deepEqual(releaseFacts(RELEASE_3_0).updateObject('ShareHold'), {
      element: 'ShareHoldFields',
      type: 'account/update:ShareHoldFields',
    });
    assert.deepEqual(releaseFacts(RELEASE_2020_00).updateObject('ShareHold'), {
      element: 'ShareHoldUpdateableFields',
      type: 'account/update:ShareHoldUpdateableFields',
    });
  });

  test("ShareTracking's 2020.00 update object leaves out the read-only FmLastDate, Id, IdType, Locator and RecordChangeDate", () => {
    const facts = releaseFacts(RELEASE_2020_00);
    const updateable = new Set(facts.elementsOf(facts.updateObject('ShareTracking')!.type).map((e) => e.name));
    const readOnly = facts
      .recordElements('ShareTracking')
      .map((e) => e.name)
      .filter((name) => !updateable.has(name));
    assert.deepEqual(readOnly, ['FmLastDate', 'Id', 'IdType', 'Locator', 'RecordChangeDate']);
  });

  test('2020.00 serves /SymXchange/2020.00/findby and /SymXchange/2020.00/account, and has no corptransfer or collateral service', () => {
    const facts = releaseFacts(RELEASE_2020_00);
    assert.equal(facts.service('findby').endpointPath, '/SymXchange/2020.00/findby');
    assert.equal(facts.service('account').endpointPath, '/SymXchange/2020.00/account');
    assert.deepEqual(Object.keys(RELEASE_2020_00.services), ['findby', 'account']);
    assert.equal(facts.hasService('corptransfer') || facts.hasService('collateral'), false);
    assert.deepEqual(facts.operations('collateral'), []);
  });

  test('2020.00 has no Version_1 element anywhere, and its FailedUpdateStatus repeats without bound (once in 3.0)', () => {
    assert.ok(!JSON.stringify(RELEASE_2020_00).includes(VERSION_ELEMENT));
    const failed = (release: SymxRelease) =>
      releaseFacts(release).elementOf('symxcommon:UpdateStatus', 'FailedUpdateStatus')?.maxOccurs;
    assert.equal(failed(RELEASE_2020_00), 'unbounded');
    assert.equal(failed(RELEASE_3_0), 1);
  });

  test("2020.00's update requests extend the update schema's request type in the service's own namespace", () => {
    const facts = releaseFacts(RELEASE_2020_00);
    const request = facts.operation('account', 'updateShareHoldByID')!.request.child.type;
    assert.equal(request, 'account:UpdateShareHoldByIDRequest');
    assert.equal(facts.complexType(request).base, 'account/update:ShareHoldUpdateRequest');
  });
});

/** The public repository each known release is read from, and where a local copy may be found. */
const MIRRORS: readonly { release: SymxRelease; mirror: string; variable: string }[] = [
  { release: RELEASE_3_0, mirror: MIRROR, variable: 'SYMXIFY_REPO' },
  {
    release: RELEASE_2020_00,
    mirror: process.env.SYMITAR_CLIENT_REPO ?? '/work/.mirror/Backbase+symitar-core-banking-client/repo',
    variable: 'SYMITAR_CLIENT_REPO',
  },
];

describe('the generated modules', () => {
  for (const { release, mirror, variable } of MIRRORS) {
    const { repository } = release.source;
    const module = `src/generated/symxchange-${release.release}.ts`;
    test(
      `${module} is what scripts/symxchange-facts.ts writes from the ${repository} mirror`,
      {
        skip:
          !existsSync(mirror) &&
          `no ${repository} mirror at ${mirror}: set ${variable} to a checkout or bare git dir of it`,
      },
      () => {
        const dir = mkdtempSync(join(tmpdir(), 'symxchange-facts-'));
        try {
          const out = join(dir, 'facts.ts');
          const run = spawnSync(
            process.execPath,
            ['--import', 'tsx', 'scripts/symxchange-facts.ts', '--release', release.release, mirror, '--out', out],
            { cwd: ROOT, encoding: 'utf8' },
          );
          assert.equal(run.status, 0, run.stderr);
          assert.ok(
            readFileSync(out, 'utf8') === readFileSync(join(ROOT, module), 'utf8'),
            `${module} is stale: run npx tsx scripts/symxchange-facts.ts --release ${release.release} <${repository} mirror>`,
          );
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );
  }
});

/**
 * Where coregate's JSON request rules differ from the core's XSD facets, and why (docs/decisions.md,
 * "SymXchange"): every other request value takes exactly its element's facets. Keys are element paths
 * below the operation's `Request`.
 */
const REQUEST_RULES_NOT_THE_CORES: Readonly<Record<string, string>> = {
  // The spec: AccountNumber is 10 digits.
  AccountNumber: 'spec: 10 digits',
  'Credentials/AccountNumberCredentials/AccountNumber': 'spec: 10 digits',
  // The spec requires each lookup key, so an empty one is refused; the XSDs allow empty strings.
  CardNumber: 'spec: required, so at least 1',
  HomeBankingUserName: 'spec: required, so at least 1',
  MICR: 'spec: required, so at least 1',
  Draft: 'spec: required, so at least 1',
  LookupNumber: 'spec: required, so at least 1',
  // Keys that name the record a request reads or updates.
  CollateralNumber: 'names the record: at least 1',
  ShareId: 'names the record: at least 1',
  // DESIGN: a repeating field's selector (CorpTransferFields.Memo, ShareNoteFields.Text, …) is true, false,
  // or the EntryIds to return (1 and up).
  'SelectableFields/*Fields/*': 'DESIGN: true, false or EntryIds',
  // coregate's query language, checked before a query costs the core a call (every filter's Query).
  '*/Query': "coregate's query language: at most 2,000 characters",
};

// The paths a decision is about: a star stands for any part of one element's name, and a leading star
// element for any elements before (every filter's Query).
function decisionPaths(key: string): RegExp {
  const anyParents = key.startsWith('*/');
  // Keys are element names, slashes and stars: nothing else a regular expression would read.
  const names = (anyParents ? key.slice(2) : key).split('*').join('[^/]*');
  return new RegExp(`^${anyParents ? '(?:.*/)?' : ''}${names}$`);
}

/** The decision about a path, if one was recorded. */
const decisionAbout = (path: string) =>
  Object.entries(REQUEST_RULES_NOT_THE_CORES).find(([key]) => decisionPaths(key).test(path))?.[1];

describe("request fields take the core's rules", () => {
  const mapping = createSymxMapping(OPERATIONS, SHARED_SCHEMAS);
  const shared = new Map((SHARED_SCHEMAS as readonly { $id?: string }[]).map((s) => [s.$id, s as JsonRule]));
  interface JsonRule {
    readonly $ref?: string;
    readonly type?: string | readonly string[];
    readonly properties?: Readonly<Record<string, JsonRule>>;
    readonly anyOf?: readonly JsonRule[];
    readonly items?: JsonRule;
    readonly minLength?: number;
    readonly maxLength?: number;
    readonly minimum?: number;
    readonly maximum?: number;
    readonly pattern?: string;
    readonly format?: string;
  }
  const resolve = (schema: JsonRule): JsonRule => (schema.$ref ? resolve(shared.get(schema.$ref)!) : schema);
  const scalar = (schema: JsonRule): JsonRule => {
    const resolved = resolve(schema);
    const alternatives = resolved.anyOf ?? [resolved];
    return alternatives.map(resolve).find((alt) => alt.type !== 'null' && alt.type !== 'object') ?? resolved;
  };
  /** A string's length bounds, from its lengths or a pattern's `{m,n}`. */
  const lengths = (schema: JsonRule) => {
    const counted = /\{(\d+)(?:,(\d+))?\}\$$/.exec(schema.pattern ?? '');
    return {
      min: schema.minLength ?? (counted ? Number(counted[1]) : 0),
      max: schema.maxLength ?? (counted ? Number(counted[2] ?? counted[1]) : undefined),
    };
  };

  /** Element path → what differs, for every scalar request value whose JSON rule is not its facets. */
  function differences(): Map<string, string> {
    const found = new Map<string, string>();
    const walk = (typeName: string, schema: JsonRule, path: string) => {
      const object = resolve(schema);
      const properties = (object.anyOf?.map(resolve).find((a) => a.properties) ?? object).properties ?? {};
      const elements = mapping.isComplexType(typeName) ? collect(typeName) : [];
      for (const element of elements) {
        const property = properties[element.name];
        if (!property) continue;
        const at = path ? `${path}/${element.name}` : element.name;
        if (mapping.isComplexType(element.type)) {
          const items = resolve(property).items;
          walk(element.type, items ?? property, at);
          continue;
        }
        const json = scalar(property);
        const facets = element.restrictions ?? {};
        const issues: string[] = [];
        if (element.type === 'xsd:string') {
          const { min, max } = lengths(json);
          const xsdMin = facets.length ?? facets.minLength ?? 0;
          const xsdMax = facets.length ?? facets.maxLength;
          if (json.type === 'string' && (min !== xsdMin || max !== xsdMax))
            issues.push(`length ${min}..${max ?? '∞'} vs ${xsdMin}..${xsdMax ?? '∞'}`);
        } else if (element.type === 'xsd:short' || element.type === 'xsd:int') {
          const range = XSD_INTEGER_RANGES[element.type]!;
          const xsdMin = facets.minInclusive ?? range.minimum;
          const xsdMax = facets.maxInclusive ?? range.maximum;
          if (json.minimum !== xsdMin || json.maximum !== xsdMax)
            issues.push(`range ${json.minimum}..${json.maximum} vs ${xsdMin}..${xsdMax}`);
        } else if (element.type === 'xsd:date' && json.format !== 'date') issues.push('not a date');
        if (issues.length > 0) found.set(at, issues.join('; '));
      }
    };
    const collect = (typeName: string): XsdElement[] => {
      const out: XsdElement[] = [];
      const type = mapping.complexType(typeName);
      if (type.base) out.push(...collect(type.base));
      const visit = (particles: readonly unknown[]) =>
        particles.forEach((p) => {
          const particle = p as XsdElement & { kind: string; particles?: readonly unknown[] };
          if (particle.kind === 'element') out.push(particle);
          else if (particle.particles) visit(particle.particles);
        });
      visit(type.content?.particles ?? []);
      return out;
    };
    for (const op of CORE_OPERATIONS) {
      const wire = mapping.wireOperation(op);
      // A share update's fields are judged by their field and wire rules, per field (the next test).
      const request = Object.fromEntries(
        Object.entries(op.request).filter(([name]) => !/Fields$/.test(name) || !op.coreRequest),
      );
      const body = { type: 'object', properties: { ...envelopeProperties, ...request } } as unknown as JsonRule;
      // The wire's names: P2's UpdatableFields is the wire's Fields, a paged search's Query is in SearchFilter.
      const renamed = Object.fromEntries(
        Object.entries(body.properties!).map(([name, schema]) => [name.replace(/UpdatableFields$/, 'Fields'), schema]),
      );
      if ('Query' in renamed && !('SearchFilter' in renamed))
        renamed.SearchFilter = { properties: { Query: renamed.Query! } };
      walk(wire.request.child.type, { properties: renamed }, '');
    }
    return found;
  }

  test("every share update field's wire rules are its element's facets, and its field rules keep within them", () => {
    const checked = new Set<string>();
    for (const op of CORE_OPERATIONS.filter((candidate) => candidate.coreRequest)) {
      const record = recordDef(op.name.replace(/^update|ByID$/g, ''));
      for (const element of recordElements(record.name)) {
        const field = fieldOf(record, element.name);
        if (!field || checked.has(`${record.name}.${field.name}`)) continue;
        checked.add(`${record.name}.${field.name}`);
        const at = `${record.name}.${field.name}`;
        const codes = (value: unknown) => [
          wireRuleViolation(record, field, value)?.code,
          fieldRuleViolation(field, value)?.code,
        ];
        const entries = (count: number, value: (id: number) => unknown) =>
          Array.from({ length: count }, (_, i) => ({ EntryId: i + 1, [field.name]: value(i + 1) }));
        if (field.repeating) {
          const maxOccurs = element.maxOccurs as number;
          assert.deepEqual(
            wireRuleViolation(
              record,
              field,
              entries(maxOccurs + 1, () => null),
            )?.code,
            'TOO_MANY_ENTRIES',
            at,
          );
          assert.equal(
            wireRuleViolation(record, field, [{ EntryId: 32768, [field.name]: null }])?.code,
            'INVALID_ENTRY_ID',
            at,
          );
          assert.ok(maxOccurs >= field.repeating.maxEntries, `${at}: the catalog holds no more entries than the XSD`);
          continue;
        }
        const range = XSD_INTEGER_RANGES[element.type];
        if (range) {
          const min = element.restrictions?.minInclusive ?? range.minimum;
          const max = element.restrictions?.maxInclusive ?? range.maximum;
          assert.deepEqual(codes(max + 1), ['OUT_OF_RANGE', 'OUT_OF_RANGE'], at);
          assert.deepEqual(codes(min - 1), ['OUT_OF_RANGE', 'OUT_OF_RANGE'], at);
          assert.equal(wireRuleViolation(record, field, max), undefined, at);
          assert.ok(
            field.minimum! >= min && field.maximum! <= max,
            `${at}: the field's range keeps within ${element.type}`,
          );
        } else if (element.type === 'xsd:date') {
          assert.deepEqual(codes('2023-02-30'), ['INVALID_DATE', 'INVALID_DATE'], at);
          assert.deepEqual(codes('0000-01-01'), ['INVALID_DATE', 'INVALID_DATE'], at);
          assert.deepEqual(codes('2024-02-29'), [undefined, undefined], at);
        }
      }
    }
    assert.ok(checked.size > 500, `${checked.size} share fields checked`);
  });

  test("every request value takes its element's facets, but where a decision says otherwise", () => {
    const found = differences();
    const unrecorded = [...found].filter(([path]) => !decisionAbout(path));
    assert.deepEqual(unrecorded, [], "request rules that are not the core's and no recorded decision");
    for (const key of Object.keys(REQUEST_RULES_NOT_THE_CORES)) {
      const matches = [...found.keys()].some((path) => decisionPaths(key).test(path));
      assert.ok(matches, `${key} now takes the core's facets: unlist it`);
    }
  });
});
