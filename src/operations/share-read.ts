/**
 * Share read-back (SymXchange AccountService): the reads of the records the share updates write
 * (share-update.ts), so that a client can verify every update through the API. Two operation kinds over
 * the share record group, on both path families, as the account WSDL names them:
 * - get<Record>SelectFields: one record, named as its update names it (AccountNumber and ShareId for the
 *   share; AccountNumber and the locator, ShareId optional, for a sub-record);
 * - get<Record>PagedListSelectFields: a page of the shares of an account, or of the sub-records of a share,
 *   in key order (keyset paging, paging.ts).
 * Both take SelectableFields (`IncludeAll<Record>Fields` and the `<Record>Fields` flags); protected values
 * (a name's SSN) are never returned.
 */
import { Type, type TOptional, type TSchema, type TUnsafe } from 'typebox';
import { FAMILIES, recordDef, type Family, type RecordDef } from '../catalog/index.js';
import { schemaIds } from '../catalog/schemas.js';
import { AccountNumberSchema } from '../contract/envelope.js';
import { recordNotFound } from '../contract/problems.js';
import { recordTree } from '../store/record-tree.js';
import type { Row } from '../store/records.js';
import { readPage, type PagingRequest, type PagingScope } from './paging.js';
import { planMemo, readAnswerSchema, selectedPlan, type ReadPlan, type SelectableFields } from './read-plan.js';
import { locatorName, SHARE_UPDATE_RECORDS, ShareIdSchema, ShareLocatorSchema } from './share-update.js';
import { defineOperation, STAFF_AND_MEMBER_CREDENTIALS, type OperationContext, type RequestBody } from './types.js';

interface Kind {
  readonly suffix: string;
  readonly shape: 'single' | 'paged';
}

/** The read kinds of the account WSDL's share records, named by their operation-name pattern. */
const KINDS = {
  getSelectFields: { suffix: 'SelectFields', shape: 'single' },
  getPagedListSelectFields: { suffix: 'PagedListSelectFields', shape: 'paged' },
} as const satisfies Record<string, Kind>;

type KindName = keyof typeof KINDS;

const SHARE = recordDef('Share');

/** The record a share record is listed under: the account for a share, the share for a sub-record. */
const parentOf = (record: RecordDef) => (record === SHARE ? recordDef('Account') : SHARE);

/**
 * The properties of a share read whose names are fixed; the locator is named from the catalog at run
 * time (`<Record>Locator`) and read with `locatorOf`.
 */
type ShareReadRequest = {
  AccountNumber: typeof AccountNumberSchema;
  ShareId: TOptional<typeof ShareIdSchema>;
  SelectableFields: TOptional<TUnsafe<SelectableFields>>;
  PagingRequestContext: TOptional<TUnsafe<PagingRequest>>;
};
type ShareReadBody = RequestBody<ShareReadRequest>;

/** The locator of the request, named from the catalog (validated by the route like every other property). */
const locatorOf = (body: ShareReadBody, record: RecordDef): number =>
  (body as unknown as Readonly<Record<string, number>>)[locatorName(record)!]!;

/**
 * The request of a read of `kind` on `record`. One record is named as its update names it; a page lists
 * the shares of an account, or the sub-records of one share (ShareId required).
 */
function requestSchema(record: RecordDef, kind: Kind): ShareReadRequest {
  const locator = locatorName(record);
  const single = kind.shape === 'single';
  return {
    AccountNumber: AccountNumberSchema,
    ...(record === SHARE && !single
      ? {}
      : { ShareId: single && locator ? Type.Optional(ShareIdSchema) : ShareIdSchema }),
    ...(single && locator ? { [locator]: ShareLocatorSchema } : {}),
    ...(single ? {} : { PagingRequestContext: Type.Optional(Type.Ref('PagingRequestContext')) }),
    SelectableFields: Type.Optional(Type.Ref(schemaIds.selectable(record))),
  } as Record<string, TSchema> as ShareReadRequest;
}

const readPlan = (record: RecordDef, body: ShareReadBody): ReadPlan =>
  selectedPlan(record, body.SelectableFields, undefined, { selection: '/SelectableFields', filter: '' });

/** The key columns of the one record a request names (a ShareId given with a locator must match too). */
function recordKey(record: RecordDef, body: ShareReadBody): Row {
  return {
    account_number: body.AccountNumber,
    ...(body.ShareId === undefined ? {} : { share_id: body.ShareId }),
    ...(locatorName(record) ? { locator: locatorOf(body, record) } : {}),
  };
}

/** The key columns of the record a page lists under: the account, or the share. */
const parentKey = (record: RecordDef, body: ShareReadBody): Row =>
  record === SHARE
    ? { account_number: body.AccountNumber }
    : { account_number: body.AccountNumber, share_id: body.ShareId };

async function handle(
  name: string,
  record: RecordDef,
  kind: Kind,
  context: OperationContext,
  body: ShareReadBody,
  plan: ReadPlan,
) {
  if (kind.shape === 'single') {
    const key = recordKey(record, body);
    const found = await recordTree.read(context.db, plan, key);
    if (!found) throw recordNotFound(`No ${record.name} record ${Object.values(key).join('/')}`);
    return { [record.name]: found };
  }
  const key = parentKey(record, body);
  const scope: PagingScope = {
    operation: name,
    parentKey: Object.values(key) as (string | number)[],
    filter: {},
    selection: body.SelectableFields ?? null,
  };
  const page = await readPage(context, plan, key, scope, body.PagingRequestContext);
  // An empty page of a parent that does not exist is a 404, as for every key-addressed read.
  if (page.records.length === 0 && !(await recordTree.exists(context.db, parentOf(record), key))) {
    throw recordNotFound(`No ${parentOf(record).name} ${Object.values(key).join('/')}`);
  }
  return { [record.name]: page.records, Token: page.token };
}

function shareReadOperation(record: RecordDef, kindName: KindName, family: Family) {
  const kind: Kind = KINDS[kindName];
  const name = `get${record.name}${kind.suffix}`;
  const listedUnder = record === SHARE ? 'an account' : 'a share';
  const plans = planMemo();
  const planOf = (body: ShareReadBody) =>
    plans(JSON.stringify(body.SelectableFields ?? null), () => readPlan(record, body));
  return defineOperation({
    name,
    family,
    service: 'account',
    summary:
      kind.shape === 'single'
        ? `One ${record.name} record with the selected fields`
        : `A page of the ${record.name} records of ${listedUnder} with the selected fields`,
    scope: 'share:read',
    credentials: STAFF_AND_MEMBER_CREDENTIALS,
    accountOf: (body) => body.AccountNumber,
    request: requestSchema(record, kind),
    // The account WSDL's responses: `<Record>` for one record; `<Record>` repeated and `Token` for a page.
    response: readAnswerSchema(record, kind.shape),
    readPlan: planOf,
    handle: (context, body) => handle(name, record, kind, context, body, planOf(body)),
  });
}

/** Every share read with its record and kind: each kind on each share record, on both families. */
export const SHARE_READ_OPERATION_TABLE = FAMILIES.flatMap((family) =>
  SHARE_UPDATE_RECORDS.flatMap((record) =>
    (Object.keys(KINDS) as KindName[]).map((kind) => ({
      operation: shareReadOperation(record, kind, family),
      record,
      kind: KINDS[kind] as Kind,
    })),
  ),
);

export const SHARE_READ_OPERATIONS = SHARE_READ_OPERATION_TABLE.map((entry) => entry.operation);
