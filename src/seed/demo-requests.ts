/**
 * A request that succeeds against the demo dataset, for any operation: its body (without `Credentials`)
 * built from the demo examples by the names of the properties the operation's request declares (an
 * optional one without a demo value is left out), so no operation is listed here. The interactive reference shows them as examples; the SOAP face's and the
 * gateway's suites send them.
 */
import { Type, type TSchema } from 'typebox';
import { recordDef, SHARE_RECORD_NAMES, type ShareRecordName } from '../catalog/index.js';
import { updatableFieldsName } from '../catalog/schemas.js';
import type { DemoExamples } from './examples.js';

/** What demoRequest needs of an operation (src/operations' `Operation` has these). */
export interface RequestedOperation {
  readonly name: string;
  readonly family: 'P1' | 'P2';
  readonly request: Readonly<Record<string, unknown>>;
}

/** The field each share update sets: the spec's own field of the record (spec: "Fields shown"). */
const UPDATED_FIELDS: Readonly<Record<ShareRecordName, Readonly<Record<string, unknown>>>> = {
  Share: { Description: 'DEMO SAVINGS' },
  ShareAnalysis: { StatementGroup: 2 },
  ShareAnalysisGroup: { Comment1: 'DEMO GROUP' },
  ShareAnalysisPlan: { Description: 'DEMO PLAN' },
  ShareCheckOrder: { Quantity: 200 },
  ShareHold: { Reference1: 'DEMO HOLD' },
  ShareNote: { Text: [{ EntryId: 1, Text: 'DEMO NOTE' }] },
  ShareTransfer: { PaymentType: 1 },
  ShareName: { First: 'DEMO' },
  ShareTracking: { UserChar1: 'DEMO' },
};

/** A search every record of the type matches (the demo's values are all non-negative). */
const QUERIES: Readonly<Record<string, string>> = {
  CollateralCollHold: 'Amount >= 0',
  CollateralDocument: 'Type >= 0',
  CollateralDocumentTracking: 'Type >= 0',
  CollateralFmHistory: 'FieldNumber >= 0',
};

/** The record an operation reads or updates, from its name (`getCollateralDocumentTrackingPagedList` → CollateralDocumentTracking). */
function recordOf(name: string): string {
  const records = [...SHARE_RECORD_NAMES, ...Object.keys(QUERIES), 'Collateral', 'CollateralTracking', 'CorpTransfer'];
  return records.filter((record) => name.includes(record)).sort((a, b) => b.length - a.length)[0] ?? '';
}

/**
 * The body of a request of `operation` that succeeds against the demo dataset the examples describe.
 * @example demoRequest(examples, findBySSN) // { SSN: '…' }
 */
export function demoRequest(examples: DemoExamples, operation: RequestedOperation): Record<string, unknown> {
  const record = recordOf(operation.name);
  const { collateral } = examples;
  const shareRecord = (SHARE_RECORD_NAMES as readonly string[]).includes(record)
    ? (record as ShareRecordName)
    : undefined;
  // Share updates: the example record of the type (the share of the hold for updateShareByID).
  const target =
    examples.shareTargets.find((t) => t.record === (shareRecord === 'Share' ? 'ShareHold' : shareRecord)) ??
    examples.shareTargets[0]!;
  const fieldsObject = shareRecord ? updatableFieldsName(recordDef(shareRecord), operation.family) : undefined;
  const values: Readonly<Record<string, unknown>> = {
    CardNumber: operation.name === 'findByAnyCard' ? examples.reissuedCard.cardNumber : examples.activeCard.cardNumber,
    HomeBankingUserName: examples.homeBankingUser.userName,
    MICR: examples.micr.micrNumber,
    Draft: examples.micr.draft,
    LookupType: examples.lookupWithShare.lookupType,
    LookupNumber: examples.lookupWithShare.lookupNumber,
    SSN: examples.sharedSsn.ssn,
    ShortName: examples.shortName.shortName,
    CorpTransferGlobalSequenceDate: examples.corpTransfer.globalSequenceDate,
    CorpTransferGlobalSequence: examples.corpTransfer.globalSequence,
    AccountNumber: target.accountNumber,
    ShareId: target.shareId,
    [`${shareRecord}Locator`]: target.locator,
    ...(fieldsObject && shareRecord ? { [fieldsObject]: UPDATED_FIELDS[shareRecord] } : {}),
    CollateralNumber: collateral.collateralNumber,
    CollateralCollHoldLocator: collateral.holdLocator,
    CollateralDocumentLocator: collateral.documentLocator,
    CollateralDocumentTrackingLocator: collateral.documentTrackingLocator,
    CollateralTrackingLocator: collateral.trackingLocator,
    SelectableFields: { [`IncludeAll${record}Fields`]: true },
    PagingRequestContext: { NumberOfRecordsToReturn: 10 },
    SearchFilter: { Query: QUERIES[record] ?? '' },
    Query: QUERIES[record] ?? '',
    ChildrenSearchFilter: {},
  };
  const body: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(operation.request)) {
    if (name in values) body[name] = values[name];
    else if (!Type.IsOptional(schema as TSchema)) throw new Error(`no demo value for ${operation.name}.${name}`);
  }
  return body;
}
