/**
 * CollateralService (spec document 2): thirty-three operations generated from the operation kinds
 * (single record, list, paged, search, filter-children) over the collateral record tree
 * Collateral → CollHold, Document → DocumentTracking, FmHistory, Tracking.
 */
import { Type, type TOptional, type TSchema, type TUnsafe } from 'typebox';
import { filterBounds, INT4_MAX, INT4_MIN, recordDef, type RecordDef } from '../catalog/index.js';
import { filterBoundProperties, QuerySchema, schemaIds } from '../catalog/schemas.js';
import { symxchangeOperation } from '../catalog/symxchange/index.js';
import { recordNotFound } from '../contract/problems.js';
import { answerCache } from '../store/answer-cache.js';
import { recordTree } from '../store/record-tree.js';
import type { Row, WireRecord } from '../store/records.js';
import { TEXT_PATTERN } from '../contract/envelope.js';
import { PagingRequestContextSchema, readPage, type PagingRequest, type PagingScope } from './paging.js';
import {
  compileFilter,
  planMemo,
  readAnswerSchema,
  selectedPlan,
  type ChildrenFilter,
  type ReadPlan,
  type RecordFilter,
  type SelectableFields,
} from './read-plan.js';
import { defineOperation, STAFF_CREDENTIALS, type OperationContext, type RequestBody } from './types.js';

interface Kind {
  readonly verb: 'get' | 'search';
  readonly suffix: string;
  readonly shape: 'single' | 'list' | 'paged';
  /** Takes SelectableFields. */
  readonly selects?: boolean;
  /** Takes ChildrenSearchFilter. */
  readonly filtersChildren?: boolean;
  /** Takes SearchFilter (Query and the children filter). */
  readonly searchFilter?: boolean;
  /** Takes a top-level Query. */
  readonly query?: boolean;
}

/** The operation kinds of the spec, named by their operation-name pattern. */
const KINDS = {
  get: { verb: 'get', suffix: '', shape: 'single' },
  getSelectFields: { verb: 'get', suffix: 'SelectFields', shape: 'single', selects: true },
  getSelectFieldsFilterChildren: {
    verb: 'get',
    suffix: 'SelectFieldsFilterChildren',
    shape: 'single',
    selects: true,
    filtersChildren: true,
  },
  getPagedList: { verb: 'get', suffix: 'PagedList', shape: 'paged' },
  getListSelectFields: { verb: 'get', suffix: 'ListSelectFields', shape: 'list', selects: true },
  searchSelectFields: { verb: 'search', suffix: 'SelectFields', shape: 'list', selects: true, searchFilter: true },
  getPagedListSelectFields: { verb: 'get', suffix: 'PagedListSelectFields', shape: 'paged', selects: true },
  searchPagedSelectFields: { verb: 'search', suffix: 'PagedSelectFields', shape: 'paged', selects: true, query: true },
} as const satisfies Record<string, Kind>;

type KindName = keyof typeof KINDS;

/** Spec: "Operations" table of document 2, record by record. */
const OPERATIONS_BY_RECORD: Readonly<Record<string, readonly KindName[]>> = {
  Collateral: ['get', 'getSelectFields', 'getSelectFieldsFilterChildren'],
  CollateralCollHold: [
    'get',
    'getSelectFields',
    'getPagedList',
    'getListSelectFields',
    'searchSelectFields',
    'getPagedListSelectFields',
    'searchPagedSelectFields',
  ],
  CollateralDocument: [
    'get',
    'getSelectFields',
    'getSelectFieldsFilterChildren',
    'getPagedList',
    'getListSelectFields',
    'searchSelectFields',
    'getPagedListSelectFields',
    'searchPagedSelectFields',
  ],
  CollateralDocumentTracking: [
    'get',
    'getSelectFields',
    'getListSelectFields',
    'searchSelectFields',
    'getPagedListSelectFields',
    'searchPagedSelectFields',
  ],
  CollateralFmHistory: [
    'getPagedList',
    'getListSelectFields',
    'searchSelectFields',
    'getPagedListSelectFields',
    'searchPagedSelectFields',
  ],
  CollateralTracking: ['get', 'getSelectFields', 'getPagedList', 'getListSelectFields'],
};

const ROOT = recordDef('Collateral');

/** The chain of records from the root down to (excluding) `record`. */
function ancestors(record: RecordDef): RecordDef[] {
  if (record === ROOT) return [];
  const parent = [ROOT, ...ROOT.children.map((c) => recordDef(c.record))].find((r) =>
    r.children.some((c) => c.record === record.name),
  )!;
  return [...ancestors(parent), parent];
}

const locatorField = (record: RecordDef) => `${record.name}Locator`;

/**
 * Every property a collateral request may have; each operation takes those its kind needs
 * (`requestSchema`). The shared schemas they refer to are derived per record by the catalog, so their
 * shapes are given here once, as the types the read plan works with. Locators are named from the
 * catalog at run time (`<Record>Locator`) and are read with `locatorOf`.
 */
/** The collateral number: any text the core takes (an unknown one is a 404). */
const CollateralNumberSchema = Type.String({
  minLength: 1,
  pattern: TEXT_PATTERN,
  description: 'The collateral number',
});

type CollateralRequest = {
  CollateralNumber: typeof CollateralNumberSchema;
  SelectableFields: TOptional<TUnsafe<SelectableFields>>;
  ChildrenSearchFilter: TOptional<TUnsafe<ChildrenFilter>>;
  SearchFilter: TOptional<TUnsafe<{ Query?: string } & ChildrenFilter>>;
  PagingRequestContext: TOptional<TUnsafe<PagingRequest>>;
  Query: TOptional<typeof QuerySchema>;
};
type CollateralBody = RequestBody<CollateralRequest>;

/** A locator of the request, named from the catalog (validated by the route like every other property). */
const locatorOf = (body: CollateralBody, record: RecordDef): number =>
  (body as unknown as Readonly<Record<string, number>>)[locatorField(record)]!;

/** Key columns of the record's parent (the root's own key for the root), from the request. */
function parentKey(record: RecordDef, body: CollateralBody): Row {
  const key: Row = { collateral_number: body.CollateralNumber };
  ancestors(record)
    .slice(1)
    .forEach((ancestor, i) => (key[record.keyColumns[i + 1]!.column] = locatorOf(body, ancestor)));
  return key;
}

/** 404 unless every record named by the request's parent keys exists. */
async function requireParents(context: OperationContext, record: RecordDef, body: CollateralBody): Promise<void> {
  const chain = ancestors(record);
  for (const [depth, ancestor] of chain.entries()) {
    const key: Row =
      depth === 0
        ? { collateral_number: body.CollateralNumber }
        : { ...parentKey(ancestor, body), [ancestor.positionColumn!]: locatorOf(body, ancestor) };
    if (!(await recordTree.exists(context.db, ancestor, key))) {
      throw recordNotFound(`No ${ancestor.name} ${Object.values(key).join('/')}`);
    }
  }
}

/** The request of an operation of `kind` on `record`: the properties of `CollateralRequest` it takes, and its locators. */
function requestSchema(record: RecordDef, kind: Kind): CollateralRequest {
  // The core's xsd:int: a locator no record has is a 404.
  const locator = Type.Integer({ minimum: INT4_MIN, maximum: INT4_MAX });
  return {
    CollateralNumber: CollateralNumberSchema,
    ...Object.fromEntries(
      ancestors(record)
        .slice(1)
        .map((a) => [locatorField(a), locator]),
    ),
    ...(kind.shape === 'single' && record !== ROOT ? { [locatorField(record)]: locator } : {}),
    ...(kind.selects ? { SelectableFields: Type.Optional(Type.Ref(schemaIds.selectable(record))) } : {}),
    ...(kind.filtersChildren
      ? { ChildrenSearchFilter: Type.Optional(Type.Ref(schemaIds.childrenFilter(record))) }
      : {}),
    ...(kind.searchFilter
      ? {
          SearchFilter: Type.Optional(
            Type.Object(
              {
                Query: Type.Optional(QuerySchema),
                ...filterBoundProperties(record),
                ...(record.children.length > 0
                  ? { [schemaIds.childrenFilter(record)]: Type.Optional(Type.Ref(schemaIds.childrenFilter(record))) }
                  : {}),
              },
              { additionalProperties: false },
            ),
          ),
        }
      : {}),
    ...(kind.shape === 'paged' ? { PagingRequestContext: Type.Optional(Type.Ref('PagingRequestContext')) } : {}),
    // Spec: the paged searches take their Query at the top level; the record's date bounds sit beside it.
    ...(kind.query ? { Query: Type.Optional(QuerySchema), ...filterBoundProperties(record) } : {}),
  } as Record<string, TSchema> as CollateralRequest;
}

/**
 * The filter of the listed records: a paged search's top-level Query and date bounds, or a search's
 * SearchFilter. The bounds' names come from the catalog at run time, so the body is read as a record.
 */
function recordFilter(record: RecordDef, kind: Kind, body: CollateralBody): RecordFilter | undefined {
  if (kind.searchFilter) return body.SearchFilter;
  if (!kind.query) return undefined;
  const properties = body as unknown as Readonly<Record<string, unknown>>;
  return Object.fromEntries(
    ['Query', ...filterBounds(record).map((bound) => bound.name)].flatMap((name) =>
      properties[name] === undefined ? [] : [[name, properties[name]]],
    ),
  );
}

/**
 * What decides a request's plan, as the key of its operation's plan memo: the selection, both filters, and
 * a paged search's top-level query and bounds (a search's record filter is its SearchFilter, already there).
 */
const planKey = (record: RecordDef, kind: Kind, body: CollateralBody) =>
  JSON.stringify([
    kind.selects ? (body.SelectableFields ?? null) : null,
    body.ChildrenSearchFilter ?? null,
    body.SearchFilter ?? null,
    kind.searchFilter ? null : (recordFilter(record, kind, body) ?? null),
  ]);

function readPlan(record: RecordDef, kind: Kind, body: CollateralBody): ReadPlan {
  const childrenFilter = kind.filtersChildren
    ? body.ChildrenSearchFilter
    : (body.SearchFilter?.[schemaIds.childrenFilter(record)] as ChildrenFilter | undefined);
  const filterPointer = kind.filtersChildren
    ? '/ChildrenSearchFilter'
    : `/SearchFilter/${schemaIds.childrenFilter(record)}`;
  return selectedPlan(
    record,
    kind.selects ? body.SelectableFields : undefined,
    childrenFilter,
    { selection: '/SelectableFields', filter: filterPointer },
    compileFilter(recordFilter(record, kind, body), record, kind.query ? '' : '/SearchFilter'),
  );
}

/**
 * A record read's answer, from memory when nothing in the collateral tree has changed since it was read
 * (store/answer-cache.ts), else from `read`. `key` names the operation, the plan and the record. Answers
 * are kept as their JSON text, weighed by its length, and parsed for each request: a tree's objects take
 * twice the memory of its text.
 */
async function cached(
  { db, config }: OperationContext,
  key: readonly unknown[],
  read: () => Promise<WireRecord | undefined>,
): Promise<WireRecord | undefined> {
  const cache = answerCache(db, 'collateral', config.collateralCacheMb * 1024 * 1024, textLength);
  if (!cache) return read();
  // A request whose answer was read from the database is given what it read: no one else holds it.
  let fresh: { record: WireRecord | undefined } | undefined;
  const text = await cache.answer(JSON.stringify(key), async () => {
    fresh = { record: await read() };
    return JSON.stringify(fresh.record ?? null);
  });
  return fresh ? fresh.record : ((JSON.parse(text) as WireRecord | null) ?? undefined);
}

const textLength = (text: unknown) => (text as string).length;

async function handle(
  name: string,
  record: RecordDef,
  kind: Kind,
  context: OperationContext,
  body: CollateralBody,
  plan: ReadPlan,
  /** The plan's memo key (`planKey`): part of a kept answer's key. */
  planText: string,
) {
  const { db, config } = context;
  // The parent's key; for the root, its own key. The records' children share it too.
  const key = parentKey(record, body);

  if (kind.shape === 'single') {
    const fullKey = record === ROOT ? key : { ...key, [record.positionColumn!]: locatorOf(body, record) };
    const found = await cached(context, [name, planText, ...Object.values(fullKey)], () =>
      recordTree.read(db, plan, fullKey, config.listMaximum),
    );
    if (!found) throw recordNotFound(`No ${record.name} ${Object.values(fullKey).join('/')}`);
    return { [record.name]: found };
  }

  if (kind.shape === 'list') {
    const list = await recordTree.list(db, plan, key, { limit: config.listMaximum }, config.listMaximum);
    if (list.records.length === 0) await requireParents(context, record, body);
    return { [`${record.name}List`]: { hasReachedMaximumListSize: list.more, [record.name]: list.records } };
  }

  const scope: PagingScope = {
    operation: name,
    parentKey: Object.values(key) as (string | number)[],
    filter: kind.query ? (recordFilter(record, kind, body) ?? {}) : {},
    selection: body.SelectableFields ?? null,
  };
  const page = await readPage(context, plan, key, scope, body.PagingRequestContext);
  if (page.records.length === 0) await requireParents(context, record, body);
  return { [record.name]: page.records, Token: page.token };
}

function collateralOperation(record: RecordDef, kindName: KindName) {
  const kind: Kind = KINDS[kindName];
  const name = `${kind.verb}${record.name}${kind.suffix}`;
  const plans = planMemo();
  const planFor = (body: CollateralBody, text: string) => plans(text, () => readPlan(record, kind, body));
  const planOf = (body: CollateralBody) => planFor(body, planKey(record, kind, body));
  return defineOperation({
    name,
    family: 'P2',
    service: 'collateral',
    summary: `${kind.shape === 'single' ? 'One' : kind.shape === 'list' ? 'A list of' : 'A page of'} ${record.name} ${
      kind.shape === 'single' ? 'record' : 'records'
    }${kind.selects ? ' with the selected fields' : ''}${kind.searchFilter || kind.query ? ' matching a query' : ''}${
      kind.filtersChildren ? ', child lists filtered' : ''
    }`,
    scope: 'collateral:read',
    credentials: STAFF_CREDENTIALS,
    request: requestSchema(record, kind),
    // Spec: "Response shape by operation kind".
    response: readAnswerSchema(record, kind.shape),
    collateralOf: (body) => body.CollateralNumber,
    readPlan: planOf,
    handle: (context, body) => {
      const planText = planKey(record, kind, body);
      return handle(name, record, kind, context, body, planFor(body, planText), planText);
    },
  });
}

/** Every collateral operation with its record and kind. */
export const COLLATERAL_OPERATION_TABLE = Object.entries(OPERATIONS_BY_RECORD).flatMap(([recordName, kinds]) =>
  kinds.map((kind) => ({
    operation: collateralOperation(recordDef(recordName), kind),
    record: recordDef(recordName),
    kind: KINDS[kind] as Kind,
  })),
);

export const COLLATERAL_OPERATIONS = COLLATERAL_OPERATION_TABLE.map((entry) => entry.operation);

/**
 * The collateral operations of the WSDLs that the spec's JSON lacks (`getCollateralTrackingPagedListSelectFields`):
 * the SOAP face serves them as the core does, since the gateway sends an operation the 3.0 WSDLs lack as
 * the WSDL sibling it was derived from. Found from the facts, one per record and kind the spec leaves out.
 */
export const COLLATERAL_WIRE_ONLY_OPERATIONS = Object.keys(OPERATIONS_BY_RECORD).flatMap((recordName) =>
  (Object.keys(KINDS) as KindName[])
    .filter((kind) => !OPERATIONS_BY_RECORD[recordName]!.includes(kind))
    .filter((kind) => {
      const wire = symxchangeOperation('collateral', `${KINDS[kind].verb}${recordName}${KINDS[kind].suffix}`);
      return wire !== undefined && wire.coregateFamilies.length === 0;
    })
    .map((kind) => collateralOperation(recordDef(recordName), kind)),
);

export const COLLATERAL_RECORDS: readonly RecordDef[] = Object.keys(OPERATIONS_BY_RECORD).map(recordDef);

export const COLLATERAL_SCHEMAS: readonly TSchema[] = [PagingRequestContextSchema];
