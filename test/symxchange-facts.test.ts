/**
 * SymXchange facts (src/catalog/symxchange, generated from the published 3.0 WSDLs/XSDs): every coregate
 * operation has its SOAP operation or a listed sibling, every catalog field of the records the operations
 * carry has its XSD element or is listed as lacking, and the committed facts are what the script writes.
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
import { recordDef, type FieldDef, type FieldKind, type RecordDef } from '../src/catalog/index.js';
import {
  complexType,
  complexTypeNames,
  elementsOf,
  isComplexType,
  recordElements,
  recordType,
  SYMX_ERROR_TYPES,
  symxchangeOperation,
  symxchangeOperations,
  symxchangeService,
  type XsdElement,
} from '../src/catalog/symxchange/index.js';
import { envelopeProperties } from '../src/contract/envelope.js';
import { COLLATERAL_RECORDS } from '../src/operations/collateral.js';
import { OPERATIONS, SHARED_SCHEMAS } from '../src/operations/index.js';
import { createSymxMapping } from '../src/symxchange/mapping.js';
import { SHARE_UPDATE_RECORDS } from '../src/operations/share-update.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FACTS_FILE = join(ROOT, 'src/catalog/symxchange/facts.ts');
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

/**
 * XSD elements the catalog leaves out of a record the operations carry: a gateway refuses them (400,
 * an unknown property), so each is a decision (docs/decisions.md, "SymXchange").
 */
const XSD_FIELDS_THE_CATALOG_LEAVES_OUT: Readonly<Record<string, readonly string[]>> = {
  // An SSN printed on checks: coregate keeps SSNs only protected, which a repeating field cannot be.
  ShareCheckOrder: ['Ssn'],
};

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

  test('the catalog fields of a record are its XSD elements, but for those listed as left out', () => {
    for (const record of CARRIED_RECORDS) {
      for (const field of record.fields) {
        assert.ok(fieldElements(record, field), `${record.name}.${field.name} is not in ${recordType(record.name)}`);
      }
      const leftOut = XSD_FIELDS_THE_CATALOG_LEAVES_OUT[record.name] ?? [];
      const missing = recordElements(record.name)
        .map((e) => e.name)
        .filter((name) => !record.fields.some((f) => f.name === name))
        .filter((name) => !record.children.some((child) => child.list === name));
      assert.deepEqual(missing, leftOut, `XSD elements of ${record.name} the catalog lacks`);
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

describe('the generated module', () => {
  test(
    'src/catalog/symxchange/facts.ts is what scripts/symxchange-facts.ts writes from the symxify mirror',
    {
      skip:
        !existsSync(MIRROR) &&
        `no symxify mirror at ${MIRROR}: set SYMXIFY_REPO to a checkout or bare git dir of nicholashosken/symxify`,
    },
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'symxchange-facts-'));
      try {
        const out = join(dir, 'facts.ts');
        const run = spawnSync(
          process.execPath,
          ['--import', 'tsx', 'scripts/symxchange-facts.ts', MIRROR, '--out', out],
          {
            cwd: ROOT,
            encoding: 'utf8',
          },
        );
        assert.equal(run.status, 0, run.stderr);
        assert.ok(
          readFileSync(out, 'utf8') === readFileSync(FACTS_FILE, 'utf8'),
          'facts.ts is stale: run npx tsx scripts/symxchange-facts.ts <symxify mirror>',
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
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
      const body = { type: 'object', properties: { ...envelopeProperties, ...op.request } } as unknown as JsonRule;
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
