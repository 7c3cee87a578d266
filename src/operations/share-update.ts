/**
 * updateShare (spec document 1): ten operations, updateShareByID to updateShareTrackingByID, on both
 * path families: twenty routes from one pattern over the catalog. Each request is one transaction:
 * the record is locked, every submitted field is checked against its rules, the valid changes are
 * written with one history row each, and the broken ones are reported in FailedUpdateStatus.
 */
import { Type, type TOptional, type TSchema } from 'typebox';
import {
  FAMILIES,
  FM_DATA_TYPES,
  FM_TYPE_FIELD_CHANGE,
  INT4_MAX,
  INT4_MIN,
  SHARE_RECORD_NAMES,
  fieldRuleViolation,
  recordDef,
  wireRuleViolation,
  type Family,
  type FieldDef,
  type FieldRuleViolation,
  type RecordDef,
} from '../catalog/index.js';
import { updatableFieldsName, updatableFieldsSchema } from '../catalog/schemas.js';
import { recordNotFound } from '../contract/problems.js';
import type { Secrets } from '../crypto/secrets.js';
import { toRow, type Row, type WireRecord } from '../store/records.js';
import { shareRecords, type ShareRecordKey } from '../store/share-records.js';
import { protectedColumns, protectedValue } from '../database/schema.js';
import { AccountNumberSchema, TEXT_PATTERN } from '../contract/envelope.js';
import {
  defineOperation,
  STAFF_AND_MEMBER_CREDENTIALS,
  type CoreRequest,
  type CoreUpdateObject,
  type OperationContext,
  type RequestBody,
} from './types.js';

/** The records of the updateShare group: the share and its sub-records, in the spec's order (the catalog's group). */
export const SHARE_UPDATE_RECORDS: readonly RecordDef[] = SHARE_RECORD_NAMES.map(recordDef);

/** Spec: the name and tracking operations return only UpdateStatus; the first eight also MessageId. */
const carriesMessageId = (record: RecordDef) => record.name !== 'ShareName' && record.name !== 'ShareTracking';

/** The request's locator field; updateShareByID has none. */
export const locatorName = (record: RecordDef) => (record.name === 'Share' ? undefined : `${record.name}Locator`);

export const operationName = (record: RecordDef) => `update${record.name}ByID`;

// ---- Response shapes (spec: Versioning; DESIGN: Requests and responses) ----

const FailureItem = Type.Object(
  {
    Record: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
    ErrorCode: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
    ErrorMessage: Type.Unsafe<string | null>({ type: ['string', 'null'] }),
    PrimaryKeyField: Type.Array(
      Type.Object({ Name: Type.String(), Value: Type.String() }, { additionalProperties: false }),
    ),
  },
  { $id: 'FailedUpdateItem', additionalProperties: false },
);
const FailureRef = Type.Ref('FailedUpdateItem');

export interface FailureBody {
  Record: string | null;
  ErrorCode: string | null;
  ErrorMessage: string | null;
  PrimaryKeyField: { Name: string; Value: string }[];
}

/** P1 name and tracking: FailedUpdateStatus is a single object; with nothing failed its members are empty. */
const EMPTY_FAILURE: FailureBody = { Record: null, ErrorCode: null, ErrorMessage: null, PrimaryKeyField: [] };
const NothingFailed = Type.Object(
  {
    Record: Type.Null(),
    ErrorCode: Type.Null(),
    ErrorMessage: Type.Null(),
    PrimaryKeyField: Type.Array(Type.Never(), { maxItems: 0 }),
  },
  { additionalProperties: false },
);

/**
 * FailedUpdateStatus per family (spec: Versioning; DESIGN: Requests and responses). P2: an array, one item
 * per failed field. P1 is never an array (the 3.0 XSD's element occurs at most once): `null` (first eight
 * operations) or an object with empty members (name and tracking) when nothing failed, one failure object
 * otherwise. Its `default` is what "nothing failed" looks like: on the SymXchange wire, no element.
 */
function failedUpdateStatusSchema(family: Family, record: RecordDef): TSchema {
  if (family === 'P2') return Type.Array(FailureRef, { description: 'Empty when nothing failed', default: [] });
  if (carriesMessageId(record)) {
    return Type.Union([FailureRef, Type.Null()], {
      description: 'null when nothing failed; one failure object naming every failed field otherwise',
      default: null,
    });
  }
  return Type.Union([FailureRef, NothingFailed], {
    description: 'A single object: empty members when nothing failed; one failure naming every failed field otherwise',
    default: EMPTY_FAILURE,
  });
}

/**
 * The P1 failure object of several failed fields (DESIGN, Requests and responses): the first in request
 * order gives Record, ErrorCode and PrimaryKeyField; the message names every failed field with its reason,
 * so that nothing is hidden.
 * @example p1Failure([hold, reference]).ErrorMessage // 'Amount takes at most 2 decimal places; Reference1 must be at most 40 characters'
 */
export function p1Failure(failures: readonly FailureBody[]): FailureBody {
  const [first] = failures;
  return { ...first!, ErrorMessage: failures.map((failure) => failure.ErrorMessage).join('; ') };
}

function failedUpdateStatus(family: Family, record: RecordDef, failures: FailureBody[]): unknown {
  if (family === 'P2') return failures;
  if (failures.length > 0) return p1Failure(failures);
  return carriesMessageId(record) ? null : EMPTY_FAILURE;
}

function responseSchema(family: Family, record: RecordDef): TSchema {
  const p1Extras: Record<string, TSchema> =
    family === 'P1' && carriesMessageId(record) ? { Version_1: Type.Null(), _value_1: Type.Null() } : {};
  const updateStatus = Type.Object(
    {
      isAllFieldsUpdateSuccess: Type.Boolean(),
      FailedUpdateStatus: failedUpdateStatusSchema(family, record),
      ...p1Extras,
    },
    { additionalProperties: false },
  );
  return Type.Object(
    { UpdateStatus: updateStatus, ...(carriesMessageId(record) ? { MessageId: Type.String() } : {}) },
    { additionalProperties: false },
  );
}

function response(family: Family, record: RecordDef, failures: FailureBody[]) {
  const updateStatus = {
    isAllFieldsUpdateSuccess: failures.length === 0,
    FailedUpdateStatus: failedUpdateStatus(family, record, failures),
    ...(family === 'P1' && carriesMessageId(record) ? { Version_1: null, _value_1: null } : {}),
  };
  return carriesMessageId(record)
    ? { UpdateStatus: updateStatus, MessageId: operationName(record) }
    : { UpdateStatus: updateStatus };
}

// ---- Addressing ----

/** The share id: any text the core takes (one no share has is a 404). */
export const ShareIdSchema = Type.String({ minLength: 1, pattern: TEXT_PATTERN, description: 'Share id' });

/** A sub-record's locator: the core's xsd:int (one no record has is a 404). */
export const ShareLocatorSchema = Type.Integer({
  minimum: INT4_MIN,
  maximum: INT4_MAX,
  description: 'Unique within the account',
});

/**
 * The part of an update's request whose names are fixed: AccountNumber and ShareId. The locator and the
 * fields object are named from the catalog at run time (`<Record>Locator`, `<Record>UpdatableFields`),
 * so they are read with `property`.
 */
type UpdateRequest = { AccountNumber: typeof AccountNumberSchema; ShareId: TOptional<typeof ShareIdSchema> };
type UpdateBody = RequestBody<UpdateRequest>;

/** A body property whose name comes from the catalog (validated by the route like every other). */
const property = (body: UpdateBody, name: string): unknown =>
  (body as unknown as Readonly<Record<string, unknown>>)[name];

/**
 * The record a request names. AccountNumber and the locator (ShareId for updateShareByID) identify it,
 * the locator being unique within the account; a ShareId given with a locator must match too. The
 * request schema requires them (DESIGN: a request that cannot identify the record gets 400).
 */
function recordKey(record: RecordDef, body: UpdateBody): ShareRecordKey {
  const locator = locatorName(record);
  return {
    accountNumber: body.AccountNumber,
    shareId: body.ShareId,
    locator: locator ? (property(body, locator) as number) : undefined,
  };
}

/** The failures of broken field rules, each naming the record by its key (its ShareId as `shareId` says). */
function failuresOf(
  record: RecordDef,
  key: ShareRecordKey,
  shareId: string,
  violations: readonly FieldRuleViolation[],
): FailureBody[] {
  const locator = locatorName(record);
  const primaryKey = [
    { Name: 'AccountNumber', Value: key.accountNumber },
    { Name: 'ShareId', Value: shareId },
    ...(locator ? [{ Name: locator, Value: String(key.locator) }] : []),
  ];
  return violations.map((violation) => ({
    Record: record.name,
    ErrorCode: violation.code,
    ErrorMessage: violation.message,
    PrimaryKeyField: primaryKey,
  }));
}

// ---- Planning the changes ----

interface FieldChange {
  readonly field: FieldDef;
  readonly entryId: number | undefined;
  readonly oldValue: unknown;
  readonly newValue: unknown;
}

interface Plan {
  /** New wire values of the changed fields (a repeating field: its whole new entry list). */
  readonly values: WireRecord;
  readonly changes: FieldChange[];
  readonly violations: { field: FieldDef; violation: FieldRuleViolation }[];
}

type Entry = { EntryId: number } & Record<string, unknown>;

function currentValue(field: FieldDef, row: Row, secrets: Secrets): unknown {
  if (!field.protection) return row[field.column] ?? null;
  const sealed = row[protectedColumns(field).cipher] as Uint8Array | null;
  return sealed ? protectedValue(field, secrets.decrypt(sealed)) : null;
}

function sameValue(field: FieldDef, a: unknown, b: unknown): boolean {
  if (a === null || b === null) return a === b;
  return field.kind === 'money' || field.kind === 'rate' ? Number(a) === Number(b) : a === b;
}

function planRepeating(field: FieldDef, current: unknown, entries: Entry[], plan: Plan): void {
  const maxEntries = field.repeating!.maxEntries;
  // More entries than the core's element holds (maxOccurs): the field as a whole cannot be taken.
  if (entries.length > maxEntries) {
    plan.violations.push({
      field,
      violation: {
        code: 'TOO_MANY_ENTRIES',
        message: `${field.name} holds at most ${maxEntries} entries, got ${entries.length}`,
      },
    });
    return;
  }
  const byId = new Map<number, Entry>((Array.isArray(current) ? (current as Entry[]) : []).map((e) => [e.EntryId, e]));
  let changed = false;
  for (const entry of entries) {
    const value = entry[field.name] ?? null;
    const violation =
      entry.EntryId < 1 || entry.EntryId > maxEntries
        ? {
            code: 'INVALID_ENTRY_ID' as const,
            message: `${field.name} EntryId must be between 1 and ${maxEntries}, got ${entry.EntryId}`,
          }
        : fieldRuleViolation(field, value);
    if (violation) {
      plan.violations.push({
        field,
        violation: { ...violation, message: `${violation.message} (EntryId ${entry.EntryId})` },
      });
      continue;
    }
    const oldValue = byId.get(entry.EntryId)?.[field.name] ?? null;
    if (sameValue(field, oldValue, value)) continue;
    plan.changes.push({ field, entryId: entry.EntryId, oldValue, newValue: value });
    if (value === null) byId.delete(entry.EntryId);
    else byId.set(entry.EntryId, { EntryId: entry.EntryId, [field.name]: value });
    changed = true;
  }
  if (changed) plan.values[field.name] = [...byId.values()].sort((a, b) => a.EntryId - b.EntryId);
}

/** Spec rule 2: a field that breaks a rule is reported and left unchanged; the others are applied. */
function planChanges(record: RecordDef, row: Row, submitted: WireRecord, secrets: Secrets): Plan {
  const plan: Plan = { values: {}, changes: [], violations: [] };
  for (const [name, value] of Object.entries(submitted)) {
    const field = record.fields.find((f) => f.name === name)!;
    // What the core's element could not carry fails first, as a gateway reports it (wire-rules.ts).
    const wireViolation = wireRuleViolation(record, field, value);
    if (wireViolation) {
      plan.violations.push({ field, violation: wireViolation });
      continue;
    }
    if (field.readOnly) {
      plan.violations.push({ field, violation: { code: 'READ_ONLY_FIELD', message: `${name} is read-only` } });
      continue;
    }
    const current = currentValue(field, row, secrets);
    if (field.repeating) {
      planRepeating(field, current, value as Entry[], plan);
      continue;
    }
    const violation = fieldRuleViolation(field, value);
    if (violation) {
      plan.violations.push({ field, violation });
    } else if (!sameValue(field, current, value)) {
      plan.changes.push({ field, entryId: undefined, oldValue: current, newValue: value });
      plan.values[name] = value;
    }
  }
  return plan;
}

// ---- File-maintenance history ----

/** History never holds a protected value in clear: only its last four characters. */
function historyValue(field: FieldDef, value: unknown): unknown {
  if (value === null || !field.protection) return value;
  const text = String(value);
  return `${'*'.repeat(Math.max(0, text.length - 4))}${text.slice(-4)}`;
}

function historyRows(
  record: RecordDef,
  key: ShareRecordKey,
  row: Row,
  changes: readonly FieldChange[],
  userNumber: number,
  secrets: Secrets,
): Row[] {
  const history = recordDef('AccountFmHistory');
  const now = new Date();
  const postDate = now.toISOString().slice(0, 10);
  // HHMM: the core's PostTime is an xsd:short.
  const postTime = now.getUTCHours() * 100 + now.getUTCMinutes();
  const shareId = (row.share_id as string | null) ?? null;
  return changes.map((change) => {
    const { dataType, oldField, newField } = FM_DATA_TYPES[change.field.kind];
    const values: WireRecord = {
      AccountNumber: key.accountNumber,
      RecordName: record.name,
      RecordType: SHARE_UPDATE_RECORDS.indexOf(record),
      FieldName: change.field.name,
      FieldNumber: record.fields.indexOf(change.field) + 1,
      SubFieldNumber: change.entryId ?? 0,
      DataType: dataType,
      [oldField]: historyValue(change.field, change.oldValue),
      [newField]: historyValue(change.field, change.newValue),
      FmType: FM_TYPE_FIELD_CHANGE,
      UserNumber: userNumber,
      ProcessorUser: userNumber,
      PostDate: postDate,
      PostTime: postTime,
      Id: shareId,
      IdType: shareId === null ? 0 : 1,
    };
    return toRow(
      history,
      values,
      { share_id: shareId, record_locator: (row.locator as number | undefined) ?? null },
      secrets,
    );
  });
}

// ---- The operations ----

async function applyUpdate(record: RecordDef, family: Family, context: OperationContext, body: UpdateBody) {
  const key = recordKey(record, body);
  const { db, secrets, caller } = context;
  const submitted = property(body, updatableFieldsName(record, family)) as WireRecord;
  const fields = record.fields.filter((field) => field.name in submitted);
  const row = await shareRecords.lock(db, record, key, fields);
  if (!row) {
    const where = [key.accountNumber, key.shareId, key.locator].filter((part) => part !== undefined).join('/');
    throw recordNotFound(`No ${record.name} record ${where}`);
  }
  const plan = planChanges(record, row, submitted, secrets);
  const history = historyRows(record, key, row, plan.changes, caller.userNumber, secrets);
  await shareRecords.write(db, record, key, toRow(record, plan.values, {}, secrets), history);
  const violations = plan.violations.map(({ violation }) => violation);
  const failures = failuresOf(record, key, String(row.share_id ?? ''), violations);
  return response(family, record, failures);
}

// ---- In front of a core (gateway mode) ----

/** Whether a failure object reports a failure (P1 name and tracking answer one with empty members when none did). */
const reportsFailure = (failure: FailureBody) =>
  failure.Record !== null ||
  failure.ErrorCode !== null ||
  failure.ErrorMessage !== null ||
  failure.PrimaryKeyField.length > 0;

/**
 * The failures a core's `FailedUpdateStatus` reports, as a list whatever the family's shape. A P1 object
 * whose message names several fields (`…; …`, as coregate's own core writes it) stands for each of them.
 */
function coreFailures(failed: unknown): FailureBody[] {
  const list = Array.isArray(failed) ? (failed as FailureBody[]) : failed ? [failed as FailureBody] : [];
  return list
    .filter(reportsFailure)
    .flatMap((failure) =>
      Array.isArray(failed) || !failure.ErrorMessage?.includes('; ')
        ? [failure]
        : failure.ErrorMessage.split('; ').map((message) => ({ ...failure, ErrorMessage: message })),
    );
}

/**
 * Failures in the order of the request's fields, as the store reports them: a failure's field is the one its
 * message starts with (coregate's messages do); one that names none goes last, in the order it came.
 */
function inRequestOrder(failures: readonly FailureBody[], fields: readonly string[]): FailureBody[] {
  const position = (failure: FailureBody) => {
    const named = /^[A-Za-z0-9]+/.exec(failure.ErrorMessage ?? '')?.[0];
    const index = named === undefined ? -1 : fields.indexOf(named);
    return index === -1 ? fields.length : index;
  };
  return failures
    .map((failure, arrival) => ({ failure, arrival, at: position(failure) }))
    .sort((a, b) => a.at - b.at || a.arrival - b.arrival)
    .map(({ failure }) => failure);
}

/**
 * DESIGN, Errors: in gateway mode a field the core's element cannot carry (wire-rules.ts) is reported failed
 * by the gateway and not sent; the other fields go to the core, whose failures are merged with the gateway's
 * into one UpdateStatus of the family's shape, in the request's order. With no field left,
 * the core is not called. The primary key of the gateway's failures is the request's (ShareId as given).
 */
function coreRequest(record: RecordDef, family: Family, body: UpdateBody, core: CoreUpdateObject): CoreRequest {
  const fieldsName = updatableFieldsName(record, family);
  const submitted = property(body, fieldsName) as WireRecord;
  const carried: WireRecord = {};
  const violations: FieldRuleViolation[] = [];
  for (const [name, value] of Object.entries(submitted)) {
    const field = record.fields.find((f) => f.name === name)!;
    // Spec, rule 2: a field the core's release cannot update is a failure of its own, never dropped.
    const violation =
      core.fields && !core.fields.has(name)
        ? {
            code: 'NOT_UPDATABLE_AT_CORE' as const,
            message: `${name} cannot be updated at this core (SymXchange ${core.release} has no such element in its update)`,
          }
        : wireRuleViolation(record, field, value);
    if (violation) violations.push(violation);
    else carried[name] = value;
  }
  const failures = failuresOf(record, recordKey(record, body), body.ShareId ?? '', violations);
  const request =
    Object.keys(carried).length === 0
      ? undefined
      : { ...(body as unknown as Record<string, unknown>), [fieldsName]: carried };
  return {
    request,
    answer(core) {
      if (failures.length === 0 && core) return core;
      const status = (core?.UpdateStatus ?? {}) as { FailedUpdateStatus?: unknown };
      const merged = [...failures, ...coreFailures(status.FailedUpdateStatus)];
      return response(family, record, inRequestOrder(merged, Object.keys(submitted)));
    },
  };
}

function updateOperation(record: RecordDef, family: Family) {
  const locator = locatorName(record);
  // updateShareByID names its record by ShareId; the others by their locator, ShareId optional.
  const request = {
    AccountNumber: AccountNumberSchema,
    ShareId: locator ? Type.Optional(ShareIdSchema) : ShareIdSchema,
    ...(locator ? { [locator]: ShareLocatorSchema } : {}),
    [updatableFieldsName(record, family)]: Type.Ref(updatableFieldsName(record, family)),
  } as UpdateRequest;
  return defineOperation({
    name: operationName(record),
    family,
    service: 'account',
    summary: `Update fields of a ${record.name} record; rule failures are reported per field`,
    scope: 'share:write',
    credentials: STAFF_AND_MEMBER_CREDENTIALS,
    accountOf: (body) => body.AccountNumber,
    writes: true,
    request,
    response: responseSchema(family, record),
    handle: (context, body) => applyUpdate(record, family, context, body),
    coreRequest: (body, core) => coreRequest(record, family, body, core),
  });
}

export const SHARE_UPDATE_OPERATIONS = FAMILIES.flatMap((family) =>
  SHARE_UPDATE_RECORDS.map((record) => updateOperation(record, family)),
);

export const SHARE_UPDATE_SCHEMAS: readonly TSchema[] = [
  FailureItem,
  ...FAMILIES.flatMap((family) => SHARE_UPDATE_RECORDS.map((record) => updatableFieldsSchema(record, family))),
];
