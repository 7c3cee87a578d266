/**
 * Collateral securing an account's loan, with its children: collateral holds on the member's shares,
 * the required documents and their tracking, the file-maintenance history of later changes (a long one
 * on account 1, to page through) and the collateral's own tracking records.
 */
import { FM_DATA_TYPES, fieldOf, recordDef, type FieldKind } from '../catalog/index.js';
import type { WireRecord } from '../store/records.js';
import { LOAN_ID, type AccountFacts } from './account-facts.js';
import { DATASET_AS_OF, type AccountRecords } from './dataset.js';
import { collateralNumberOf } from './numbering.js';
import { addDays, addMonths, laterDate, type Random } from './random.js';
import { trackingValues, type TrackingTemplate } from './tracking.js';

// prettier-ignore
const VEHICLES = [
  'HONDA CIVIC', 'TOYOTA CAMRY', 'FORD F-150', 'CHEVROLET EQUINOX', 'SUBARU OUTBACK',
  'JEEP WRANGLER', 'TOYOTA RAV4', 'HONDA CR-V', 'RAM 1500', 'NISSAN ALTIMA',
] as const;
/** VINs never use I, O or Q. */
const VIN_CHARACTERS = [...'ABCDEFGHJKLMNPRSTUVWXYZ0123456789'];

interface CollateralKind {
  readonly type: number;
  readonly describe: (rng: Random, account: AccountFacts) => string;
  readonly value: readonly [number, number];
  readonly valueSources: readonly string[];
  readonly requiredDocuments: readonly string[];
  readonly userChars: (rng: Random, account: AccountFacts) => string[];
  readonly lifeMonths: number;
}

const COLLATERAL_KINDS: readonly CollateralKind[] = [
  {
    type: 1,
    describe: (rng) => `${rng.int(2012, 2026)} ${rng.pick(VEHICLES)}`,
    value: [4_000, 65_000],
    valueSources: ['NADA', 'KBB', 'DEALER INVOICE'],
    requiredDocuments: ['CERTIFICATE OF TITLE', 'INSURANCE DECLARATION', 'BILL OF SALE'],
    userChars: (rng) => [
      Array.from({ length: 17 }, () => rng.pick(VIN_CHARACTERS)).join(''),
      `${rng.pick(['ABC', 'KFX', 'MNT', 'RPL'])}-${rng.digits(3)}`,
      rng.pick(['WHITE', 'BLACK', 'SILVER', 'BLUE', 'RED', 'GRAY']),
    ],
    lifeMonths: 72,
  },
  {
    type: 2,
    describe: (_rng, account) => `RE ${account.primary.address.street}`.toUpperCase(),
    value: [120_000, 650_000],
    valueSources: ['APPRAISAL', 'COUNTY ASSESSMENT', 'AVM'],
    requiredDocuments: ['DEED OF TRUST', 'APPRAISAL REPORT', 'TITLE INSURANCE POLICY', 'FLOOD CERTIFICATE'],
    userChars: (rng, account) => [
      `PID ${rng.digits(2)}-${rng.digits(3)}-${rng.digits(2)}-${rng.digits(2)}`,
      account.primary.address.city.toUpperCase(),
      rng.pick(['OWNER OCCUPIED', 'SECOND HOME', 'RENTAL']),
    ],
    lifeMonths: 360,
  },
  {
    type: 3,
    describe: () => 'SHARE SECURED - SHARE 0000',
    value: [500, 20_000],
    valueSources: ['SHARE BALANCE'],
    requiredDocuments: ['SHARE PLEDGE AGREEMENT'],
    userChars: () => ['SHARE 0000'],
    lifeMonths: 60,
  },
  {
    type: 4,
    describe: (rng) =>
      `${rng.int(2008, 2026)} ${rng.pick(['LUND 1875 BOAT', 'WINNEBAGO VISTA RV', 'POLARIS RZR', 'HARLEY-DAVIDSON'])}`,
    value: [6_000, 120_000],
    valueSources: ['NADA', 'DEALER INVOICE'],
    requiredDocuments: ['CERTIFICATE OF TITLE', 'INSURANCE DECLARATION'],
    userChars: (rng) => [`HIN ${rng.digits(10)}`],
    lifeMonths: 120,
  },
];

/**
 * Account 1's collateral is revalued again and again: its file-maintenance history has this many rows, so
 * every dataset, however small, has a list long enough to page through (1,000 pages of 5).
 */
export const LONG_HISTORY_RECORDS = 5000;

/** The collateral's own tracking: insurance on file, lien recorded. */
const COLLATERAL_TRACKING_TEMPLATES: readonly TrackingTemplate[] = [
  {
    type: 1,
    trackingCode: 10,
    chars: [['STATE FARM', 'PROGRESSIVE', 'GEICO', 'ALLSTATE', 'AMERICAN FAMILY'], (rng) => `POLICY ${rng.digits(10)}`],
    amounts: [[500, 1000]],
    dates: 1,
    expiresInMonths: 12,
  },
  {
    type: 2,
    trackingCode: 11,
    chars: [['LIEN RECORDED'], ['MN DVS', 'WI DOT', 'HENNEPIN COUNTY RECORDER']],
    numbers: [[100000, 999999]],
    dates: 2,
  },
];

/** A document's tracking: requested from the member, imaged. */
const DOCUMENT_TRACKING_TEMPLATES: readonly TrackingTemplate[] = [
  {
    type: 3,
    trackingCode: 20,
    chars: [['REQUESTED FROM MEMBER', 'SECOND NOTICE SENT', 'RECEIVED - PENDING SCAN']],
    codes: [[1, 2, 3]],
    dates: 1,
  },
  { type: 4, trackingCode: 21, chars: [['IMAGED'], ['BATCH 2026-Q1', 'BATCH 2026-Q2']], dates: 1 },
];

/** Collateral fields a loan officer changes after creation; history rows end at the record's current value. */
const COLLATERAL_HISTORY_FIELDS = ['CollateralAppStatus', 'ValueSource', 'Value', 'ValueDate', 'ExpireDate'] as const;

/** A plausible earlier value of a field, by catalog kind. */
function previousValue(rng: Random, kind: FieldKind, current: unknown, alternatives: readonly string[]): unknown {
  switch (kind) {
    case 'money':
    case 'rate':
      return Math.round(Number(current) * rng.int(80, 115)) / 100;
    case 'date':
      return addDays(String(current), -rng.int(30, 400));
    case 'integer':
      return Number(current) === 0 ? 1 : 0;
    case 'string':
      return alternatives.find((value) => value !== current) ?? '';
  }
}

/**
 * Adds the collateral of the account's loans, if any (account 1 always has one), each with its children.
 * @example addCollateral(out, rng, account) // out.records.Collateral, out.records.CollateralCollHold, …
 */
export function addCollateral(out: AccountRecords, rng: Random, account: AccountFacts): void {
  const collateralCount = account.everyKind
    ? 1
    : rng.weighted([
        [0, 85],
        [1, 13],
        [2, 2],
      ] as const);
  for (let ordinal = 1; ordinal <= collateralCount; ordinal += 1) addOneCollateral(out, rng, account, ordinal);
}

/**
 * Adds collateral number `ordinal` of the account (collateralNumberOf(index, ordinal)), with its holds,
 * documents, document tracking, file-maintenance history and tracking records.
 */
function addOneCollateral(out: AccountRecords, rng: Random, account: AccountFacts, ordinal: number): void {
  const kind = rng.pick(COLLATERAL_KINDS);
  const collateralNumber = collateralNumberOf(account.index, ordinal);
  const collateralKeys = { collateral_number: collateralNumber };
  const scoped = (name: string) => `${collateralNumber}/${name}`;
  const createDate = rng.dateBetween(laterDate(account.openDate, '2016-01-01'), DATASET_AS_OF);
  const userChars = kind.userChars(rng, account);
  // File maintenance after creation, in posting order; the last one is the record's LastFmDate.
  const usualHistory = rng.int(1, COLLATERAL_HISTORY_FIELDS.length);
  const historyCount = account.everyKind ? LONG_HISTORY_RECORDS : usualHistory;
  const historyPostDates = Array.from({ length: historyCount }, () =>
    rng.dateBetween(createDate, DATASET_AS_OF),
  ).sort();
  const lastFmDate = historyPostDates[historyPostDates.length - 1];
  const collateral: WireRecord = {
    Number: collateralNumber,
    Type: kind.type,
    CollateralAppStatus: 1,
    CollateralOwner: `${account.primary.first} ${account.primary.last}`.toUpperCase(),
    Description: kind.describe(rng, account).slice(0, 40),
    RequiredDocumentList: kind.requiredDocuments.join(',').slice(0, 40),
    ValueSource: rng.pick(kind.valueSources),
    Value: Math.round(rng.money(...kind.value)),
    ValueDate: rng.dateBetween(createDate, DATASET_AS_OF),
    CreateDate: createDate,
    ExpireDate: addMonths(createDate, kind.lifeMonths),
    LastFmDate: lastFmDate,
    RecordChangeDate: lastFmDate,
    FmLastPurgeDate: rng.chance(0.3) ? rng.dateBetween(createDate, DATASET_AS_OF) : undefined,
  };
  userChars.forEach((value, position) => (collateral[`UserChar${position + 1}`] = value));
  out.add('Collateral', {}, collateral);

  const holdCount = rng.int(1, 2);
  for (let n = 0; n < holdCount; n += 1) {
    const share = kind.type === 3 ? account.shares[0] : rng.pick(account.shares);
    const effective = rng.dateBetween(createDate, DATASET_AS_OF);
    out.add('CollateralCollHold', collateralKeys, {
      Locator: out.nextLocator(scoped('CollateralCollHold')),
      AccountNumber: account.accountNumber,
      Amount: Math.round(Number(collateral.Value) * rng.int(10, 100)) / 100,
      EffectiveDate: effective,
      ExpirationDate: addMonths(effective, rng.pick([12, 36, 60])),
      Id: share?.id,
      IdType: 0,
      RecordChangeDate: rng.dateBetween(effective, DATASET_AS_OF),
    });
  }

  const documentCount = rng.int(1, kind.requiredDocuments.length);
  kind.requiredDocuments.slice(0, documentCount).forEach((description, position) => {
    const documentLocator = out.nextLocator(scoped('CollateralDocument'));
    const documentDate = rng.dateBetween(createDate, DATASET_AS_OF);
    const outstanding = rng.chance(0.15);
    out.add('CollateralDocument', collateralKeys, {
      Locator: documentLocator,
      AccountNumber: account.accountNumber,
      Description: description,
      Location: rng.pick(['IMAGING', 'VAULT B-14', 'LOAN FILE', 'BRANCH ' + String(account.branch).padStart(2, '0')]),
      Number: `${rng.pick(['T', 'D', 'P'])}${rng.digits(8, true)}`,
      SlId: LOAN_ID,
      SlIdType: 1,
      Branch: account.branch,
      OfficerCode: rng.int(1, 60),
      Status: outstanding ? 1 : 0,
      Type: position + 1,
      DocumentDate: documentDate,
      ReceivedDate: outstanding ? undefined : addDays(documentDate, rng.int(0, 20)),
      StatusDate: documentDate,
      ExcpDays: outstanding ? 30 : 0,
      ExcpNoticeCount: outstanding ? rng.int(1, 3) : 0,
      ExcpNoticeCountCpWork: 0,
      ExcpNoticeOption: outstanding ? 1 : 0,
      ExcpNoticeDate: outstanding ? addDays(documentDate, 30) : undefined,
      ExpireDate: description === 'INSURANCE DECLARATION' ? addMonths(documentDate, 12) : undefined,
      LastFmDate: rng.dateBetween(documentDate, DATASET_AS_OF),
      RecordChangeDate: rng.dateBetween(documentDate, DATASET_AS_OF),
      UserChar1: rng.chance(0.3) ? `SCAN ${rng.digits(6)}` : undefined,
    });
    // The first document always has tracking, so document-tracking operations have a target.
    const trackingCount = position === 0 ? rng.int(1, 2) : rng.int(0, 2);
    for (let n = 0; n < trackingCount; n += 1) {
      out.add(
        'CollateralDocumentTracking',
        { ...collateralKeys, document_locator: documentLocator },
        trackingValues(
          rng,
          rng.pick(DOCUMENT_TRACKING_TEMPLATES),
          out.nextLocator(scoped('CollateralDocumentTracking')),
          documentDate,
        ),
      );
    }
  });

  const collateralDef = recordDef('Collateral');
  historyPostDates.forEach((postDate, position) => {
    const fieldName = COLLATERAL_HISTORY_FIELDS[position] ?? 'Value'; // then revaluations
    const field = fieldOf(collateralDef, fieldName);
    if (!field) throw new Error(`Collateral has no field ${fieldName}`);
    const { dataType, oldField, newField } = FM_DATA_TYPES[field.kind];
    const current = collateral[fieldName];
    out.add('CollateralFmHistory', collateralKeys, {
      SequenceNumber: position + 1,
      AccountNumber: account.accountNumber,
      RecordName: 'Collateral',
      RecordType: 0,
      FieldName: fieldName,
      FieldNumber: collateralDef.fields.indexOf(field) + 1,
      SubFieldNumber: 0,
      DataType: dataType,
      [oldField]: previousValue(rng, field.kind, current, kind.valueSources),
      [newField]: current,
      FmType: 1,
      Id: LOAN_ID,
      IdType: 1,
      Branch: account.branch,
      ConsoleNumber: rng.int(1, 99),
      BatchSequence: rng.int(1, 9999),
      ConfirmationSeq: rng.int(100_000, 999_999),
      PostDate: postDate,
      PostTime: rng.timeOfDay(8, 17),
      ProcessorUser: rng.int(1, 250),
      UserNumber: rng.int(1, 250),
      SecurityLevels: rng.int(1, 10),
      UserOverride: 0,
      LastFmDate: postDate,
    });
  });

  const trackingCount = account.everyKind ? 2 : rng.int(0, 2);
  for (let n = 0; n < trackingCount; n += 1) {
    out.add(
      'CollateralTracking',
      collateralKeys,
      trackingValues(
        rng,
        rng.pick(COLLATERAL_TRACKING_TEMPLATES),
        out.nextLocator(scoped('CollateralTracking')),
        createDate,
      ),
    );
  }
}
