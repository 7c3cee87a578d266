/**
 * Every record type coregate stores, declared once. Field lists marked "spec" are the spec's own; the
 * rest (the spec says "not shown beyond the fields in this table") follow the Symitar-style records the
 * spec mirrors and are listed in docs/decisions.md.
 */
import {
  code,
  date,
  int,
  money,
  numbered,
  onlyIn,
  rate,
  repeating,
  str,
  type FieldDef,
} from './fields.js';

export type SqlType = 'varchar(4)' | 'varchar(10)' | 'integer' | 'date';

/** A table column that identifies the record but is not one of its wire fields (a parent key). */
export interface KeyColumn {
  readonly column: string;
  readonly sqlType: SqlType;
  readonly nullable?: boolean;
}

export interface IndexDef {
  readonly name: string;
  /** Column names or SQL expressions over them. */
  readonly on: readonly string[];
  readonly unique?: boolean;
}

/** A nested child list of a record (Collateral → CollateralCollHoldList, …). */
export interface ChildList {
  /** Wire name of the list object, e.g. `CollateralCollHoldList`. */
  readonly list: string;
  /** Record name of the entries, e.g. `CollateralCollHold`. */
  readonly record: string;
}

export interface RecordDef {
  /** Wire name of the record (`ShareHold`, `CollateralDocument`). */
  readonly name: string;
  readonly table: string;
  /** Parent key columns not carried as fields, in key order. */
  readonly keyColumns: readonly KeyColumn[];
  /** Primary key columns; the first is the distribution key (AccountNumber or CollateralNumber). */
  readonly primaryKey: readonly string[];
  /** The column that numbers records within their parent, for lists and keyset paging. */
  readonly positionColumn?: string;
  readonly fields: readonly FieldDef[];
  readonly children: readonly ChildList[];
  readonly indexes: readonly IndexDef[];
}

interface RecordInput {
  name: string;
  table: string;
  keyColumns?: KeyColumn[];
  primaryKey: string[];
  positionColumn?: string;
  fields: FieldDef[];
  children?: ChildList[];
  indexes?: IndexDef[];
}

function record(input: RecordInput): RecordDef {
  return { children: [], indexes: [], keyColumns: [], ...input };
}

const ACCOUNT_NUMBER_PATTERN = '^[0-9]{10}$';
const SHARE_ID_PATTERN = '^[0-9A-Za-z]{1,4}$';

const accountKey: KeyColumn = { column: 'account_number', sqlType: 'varchar(10)' };
const shareKey: KeyColumn = { column: 'share_id', sqlType: 'varchar(4)' };
const collateralKey: KeyColumn = { column: 'collateral_number', sqlType: 'varchar(10)' };

const locator = (): FieldDef => int('Locator', { minimum: 1, readOnly: true });

/** The user-defined field families shared by the three tracking records (spec: numbered 1 to 20). */
function trackingFields(): FieldDef[] {
  return [
    date('CreationDate'),
    int('CreationTime', { minimum: 0, maximum: 2359 }),
    date('ExpireDate'),
    date('FmLastDate'),
    str('Id', 4),
    code('IdType'),
    locator(),
    date('RecordChangeDate'),
    code('TrackingCode'),
    code('Type'),
    ...numbered(1, 20, (n) => money(`UserAmount${n}`)),
    ...numbered(1, 20, (n) => str(`UserChar${n}`, 40)),
    ...numbered(1, 20, (n) => code(`UserCode${n}`)),
    ...numbered(1, 20, (n) => date(`UserDate${n}`)),
    int('UserId', { minimum: 0 }),
    ...numbered(1, 20, (n) => int(`UserNumber${n}`)),
    ...numbered(1, 20, (n) => rate(`UserRate${n}`)),
  ];
}

/** File-maintenance history fields (spec: CollateralFmHistory); account history uses the same set. */
function fmHistoryFields(): FieldDef[] {
  return [
    str('AccountNumber', 10),
    str('FieldName', 40),
    str('Id', 4),
    str('NewCharacter', 255),
    str('OldCharacter', 255),
    str('RecordName', 40),
    int('BatchSequence'),
    code('Branch'),
    int('ConfirmationSeq'),
    code('ConsoleNumber'),
    code('DataType'),
    code('FieldNumber'),
    code('FmType'),
    code('IdType'),
    int('NewNumber'),
    int('OldNumber'),
    int('PostTime', { minimum: 0, maximum: 235959 }),
    int('ProcessorUser'),
    code('RecordType'),
    int('SecurityLevels'),
    int('SequenceNumber', { minimum: 1, readOnly: true }),
    int('SubFieldNumber'),
    int('UserNumber'),
    int('UserOverride'),
    date('LastFmDate'),
    date('NewDate'),
    date('OldDate'),
    date('PostDate'),
    money('NewMoney'),
    rate('NewRate'),
    money('OldMoney'),
    rate('OldRate'),
  ];
}

/** The ShareName field set (spec: "ShareNameFields (persistent path)"), also used by account-level names. */
function nameFields(): FieldDef[] {
  // Spec: the 2022.01 ShareNameUpdatableFields omits these.
  const p1Only = (fields: FieldDef[]) => onlyIn(['P1'], fields);
  return [
    // Date fields
    date('ActiveDutySeparationDate'),
    date('ActiveDutyStartDate'),
    date('ActiveDutyVerificationDate'),
    ...p1Only([
      date('AddrCreateDate'),
      date('AddrDisconnectDate'),
      date('AddrFmLastDate'),
      date('AddrFmLastPurgeDate'),
      date('AddrRecordChangeDate'),
    ]),
    date('AddrExpDate'),
    date('BirthDate'),
    ...p1Only([date('CrAddrChgDate'), date('CrNameChgDate'), date('CrSsnChgDate')]),
    date('CreditReportAddrIndicatorDate'),
    date('CreditReportConsumerInfoDate'),
    ...p1Only([date('CurrMonthPayChgDate')]),
    date('DeathDate'),
    date('EffectiveDate'),
    date('ExpirationDate'),
    ...p1Only([date('FmLastPurgeDate'), date('LastAddrChgDate')]),
    date('LastAddrVerifDate'),
    ...p1Only([
      date('LastFmDate'),
      date('MbrActivityDate'),
      date('MbrAddrNumLinkChgDate'),
      date('MbrCreateDate'),
      date('MbrDisconnectDate'),
    ]),
    date('MbrExpDate'),
    ...p1Only([
      date('MbrFmLastDate'),
      date('MbrFmLastPurgeDate'),
      date('MbrRecordChangeDate'),
      date('MbrStatusFmDate'),
      date('MemberNumLinkChgDate'),
      date('RecordChangeDate'),
    ]),
    date('UserDate1'),
    date('UserDate2'),
    date('W8ExpirationDate'),
    // Integer or numeric fields
    code('ActiveDuty'),
    code('AddressType'),
    code('BeneficialOwner'),
    rate('BeneficialPercent', { minimum: 0, maximum: 100 }),
    rate('BeneficiaryPercent', { minimum: 0, maximum: 100 }),
    code('Confidential'),
    code('CtrExempt'),
    money('CurrGrossMonthPay', { minimum: 0 }),
    money('CurrNetMonthPay', { minimum: 0 }),
    code('DbaNameFormat'),
    code('EcoaCode'),
    code('FormW8OnFile'),
    code('Headquarters'),
    code('Irs1042SAmendNum'),
    code('IrsCorrection'),
    ...p1Only([locator()]),
    code('MailOverride'),
    code('MarketingAddress'),
    ...p1Only([code('MbrAddrFileType'), code('MbrFileType')]),
    code('MbrStatus'),
    code('NameFormat'),
    rate('NraTaxRate', { minimum: 0, maximum: 100 }),
    code('PhoneType'),
    code('PreferredContactMethod'),
    code('Restrict'),
    code('SsnCertification'),
    code('SsnOverride'),
    code('SsnType'),
    code('SubType'),
    code('SubstantialOwner'),
    code('Type'),
    code('UsPersonFlag'),
    money('UserAmount1'),
    money('UserAmount2'),
    // String fields
    str('AltEmail', 64),
    str('CarrierRoute', 4),
    str('Chapter4StatusCode', 2),
    str('City', 40),
    str('Country', 40),
    str('CountryCode', 2),
    str('CreditReportAddrIndicator', 2),
    str('CreditReportConsumerInfo', 2),
    str('DbaExtendedName', 40),
    str('DbaFirst', 20),
    str('DbaLast', 40),
    ...p1Only([str('DbaLongName', 80), str('DbaShortName', 20)]),
    str('DbaMiddle', 20),
    str('DbaSuffix', 10),
    str('DbaTitle', 20),
    str('Email', 64),
    str('EmployerName', 40),
    str('ExtendedName', 40),
    str('ExtraAddress', 40),
    str('ExtraInfo', 40),
    str('First', 20),
    str('ForeignTin', 20),
    str('GIin', 19),
    str('HomePhone', 20),
    str('IrsCountryCode', 2),
    str('Last', 40),
    str('Lei', 20),
    ...p1Only([str('License', 20)]),
    str('Lob', 40),
    ...p1Only([str('LongName', 80)]),
    str('MbrAddrNumLink', 10),
    ...p1Only([str('MbrAddrNumber', 10)]),
    str('MemberNumLink', 10),
    ...p1Only([str('MemberNumber', 10)]),
    str('Middle', 20),
    str('MobilePhone', 20),
    str('MothersMaidenName', 40),
    str('NonAcctNameNum', 10),
    str('NraExemptionCode', 2),
    str('Occupation', 40),
    str('PagerNumber', 20),
    ...p1Only([str('PreferredContact', 40), str('ShortName', 20)]),
    str('Sex', 1),
    str('Ssn', 9, { pattern: '^[0-9]{9}$', protection: 'ssn' }),
    str('State', 10),
    str('Street', 40),
    str('Suffix', 10),
    str('Title', 20),
    ...numbered(1, 4, (n) => str(`UserChar${n}`, 40)),
    str('WorkPhone', 20),
    str('WorkPhoneExtension', 6),
    str('ZipCode', 10),
    // Repeating entries
    repeating(code('IdentDocFlag'), 10),
    repeating(str('IdentIdDescription', 40), 10),
    repeating(date('IdentIdExpireDate'), 10),
    repeating(date('IdentIdIssueDate'), 10),
    repeating(str('IdentIdNumber', 20), 10),
    repeating(code('IdentIdType'), 10),
    repeating(date('IdentIdVerifyDate'), 10),
  ];
}

/** A share sub-record: keyed by (AccountNumber, ShareId, Locator), the locator unique within the account. */
function shareChild(name: string, table: string, fields: FieldDef[], indexes: IndexDef[] = []): RecordDef {
  return record({
    name,
    table,
    keyColumns: [accountKey, { ...shareKey, nullable: name === 'ShareName' }],
    primaryKey: ['account_number', 'locator'],
    positionColumn: 'locator',
    fields: name === 'ShareName' ? fields : [locator(), ...fields],
    indexes: [{ name: `${table}_share`, on: ['account_number', 'share_id', 'locator'] }, ...indexes],
  });
}

export const RECORDS: readonly RecordDef[] = [
  // ---- Accounts and the lookup sources (DESIGN: lookup sources are records too) ----
  record({
    name: 'Account',
    table: 'account',
    primaryKey: ['account_number'],
    fields: [
      str('AccountNumber', 10, { pattern: ACCOUNT_NUMBER_PATTERN, readOnly: true }),
      code('Type'),
      code('Branch'),
      date('OpenDate'),
      date('CloseDate'),
    ],
  }),
  record({
    name: 'Card',
    table: 'card',
    keyColumns: [accountKey],
    primaryKey: ['account_number', 'locator'],
    positionColumn: 'locator',
    fields: [
      locator(),
      str('CardNumber', 19, { pattern: '^[0-9]{12,19}$', protection: 'pan' }),
      code('Status'),
      date('IssueDate'),
      date('ExpirationDate'),
    ],
    indexes: [{ name: 'card_number', on: ['card_number_hmac'] }],
  }),
  record({
    name: 'HomeBankingUser',
    table: 'home_banking_user',
    keyColumns: [accountKey],
    primaryKey: ['account_number', 'locator'],
    positionColumn: 'locator',
    fields: [locator(), str('UserName', 64), code('Status'), date('CreateDate')],
    indexes: [{ name: 'home_banking_user_name', on: ['lower(user_name)'], unique: true }],
  }),
  record({
    name: 'Micr',
    table: 'micr',
    keyColumns: [accountKey],
    primaryKey: ['account_number', 'locator'],
    positionColumn: 'locator',
    fields: [
      locator(),
      str('MicrNumber', 20, { pattern: '^[0-9]{4,20}$', protection: 'micr' }),
      str('Draft', 10, { pattern: '^[0-9]{1,10}$' }),
      str('ShareId', 4, { pattern: SHARE_ID_PATTERN }),
    ],
    indexes: [{ name: 'micr_number_draft', on: ['micr_number_hmac', 'draft'] }],
  }),
  record({
    name: 'Lookup',
    table: 'lookup',
    keyColumns: [accountKey],
    primaryKey: ['account_number', 'locator'],
    positionColumn: 'locator',
    fields: [
      locator(),
      int('LookupType', { minimum: 0, maximum: 99 }),
      str('LookupNumber', 20),
      str('ShareId', 4, { pattern: SHARE_ID_PATTERN }),
    ],
    indexes: [{ name: 'lookup_type_number', on: ['lookup_type', 'lookup_number'] }],
  }),
  shareChild('ShareName', 'share_name', nameFields(), [
    { name: 'share_name_ssn', on: ['ssn_hmac'] },
    { name: 'share_name_short_name', on: ['upper(short_name)'] },
  ]),

  // ---- Shares and their sub-records ----
  record({
    name: 'Share',
    table: 'share',
    keyColumns: [accountKey],
    primaryKey: ['account_number', 'share_id'],
    fields: [
      str('Id', 4, { column: 'share_id', pattern: SHARE_ID_PATTERN, readOnly: true }),
      code('Type'),
      str('Description', 40),
      str('Nickname', 40),
      date('OpenDate'),
      date('CloseDate'),
      money('Balance', { readOnly: true }),
      money('AvailableBalance', { readOnly: true }),
      rate('DivRate', { minimum: 0, maximum: 100 }),
      code('DivType'),
      date('MaturityDate'),
      date('LastFmDate', { readOnly: true }),
      ...numbered(1, 4, (n) => str(`UserChar${n}`, 40)),
      ...numbered(1, 2, (n) => money(`UserAmount${n}`)),
      ...numbered(1, 2, (n) => date(`UserDate${n}`)),
    ],
  }),
  shareChild('ShareAnalysis', 'share_analysis', [
    code('Type'),
    money('CashAmtTotal'),
    money('CheckAmtTotal'),
    int('ItemCount', { minimum: 0 }),
    code('StatementGroup'),
    date('EffectiveDate'),
    date('ExpireDate'),
  ]),
  shareChild('ShareAnalysisGroup', 'share_analysis_group', [
    code('GroupCode'),
    str('Comment1', 40),
    str('Comment2', 40),
    date('EffectiveDate'),
    date('ExpireDate'),
  ]),
  shareChild('ShareAnalysisPlan', 'share_analysis_plan', [
    str('Description', 40),
    code('DefinedCode'),
    money('Charge', { minimum: 0 }),
    date('EffectiveDate'),
    date('ExpireDate'),
  ]),
  shareChild('ShareCheckOrder', 'share_check_order', [
    int('Quantity', { minimum: 0, maximum: 9999 }),
    code('Status'),
    date('OrderDate'),
    int('StartingCheckNumber', { minimum: 0 }),
    str('Style', 10),
    code('DeliveryMethod'),
    date('ShipDate'),
  ]),
  shareChild('ShareHold', 'share_hold', [
    code('Type'),
    money('Amount'),
    date('EffectiveDate'),
    date('ExpirationDate'),
    ...numbered(1, 3, (n) => str(`Reference${n}`, 40)),
  ]),
  shareChild('ShareNote', 'share_note', [
    code('Code'),
    date('ExpirationDate'),
    repeating(str('Text', 40), 20),
  ]),
  shareChild('ShareTransfer', 'share_transfer', [
    code('Type'),
    str('Description', 40),
    str('ToAccount', 10, { pattern: ACCOUNT_NUMBER_PATTERN }),
    code('ToIdType'),
    str('ToId', 4),
    money('Amount', { minimum: 0 }),
    code('Frequency'),
    code('Day1', { maximum: 31 }),
    date('EffectiveDate'),
    date('NextDate'),
    date('ExpirationDate'),
    code('PaymentType'),
    code('RegE'),
  ]),
  record({
    name: 'ShareTracking',
    table: 'share_tracking',
    keyColumns: [accountKey, shareKey],
    primaryKey: ['account_number', 'locator'],
    positionColumn: 'locator',
    // Spec: the 2022.01 ShareTrackingUpdatableFields omits FmLastDate, Id, IdType, Locator, RecordChangeDate.
    fields: trackingFields().map((f) =>
      ['FmLastDate', 'Id', 'IdType', 'Locator', 'RecordChangeDate'].includes(f.name) ? { ...f, families: ['P1'] } : f,
    ),
    indexes: [{ name: 'share_tracking_share', on: ['account_number', 'share_id', 'locator'] }],
  }),
  record({
    name: 'AccountFmHistory',
    table: 'account_fm_history',
    keyColumns: [
      { column: 'share_id', sqlType: 'varchar(4)', nullable: true },
      { column: 'record_locator', sqlType: 'integer', nullable: true },
    ],
    primaryKey: ['account_number', 'sequence_number'],
    positionColumn: 'sequence_number',
    fields: fmHistoryFields(),
  }),

  // ---- Corporate transfers ----
  record({
    name: 'CorpTransfer',
    table: 'corp_transfer',
    primaryKey: ['global_sequence_date', 'global_sequence'],
    fields: [
      money('Amount'),
      money('InterestAmount'),
      money('PrincipalAmount'),
      int('CompletedByUser', { minimum: 0 }),
      int('EnteredByCorporateUser', { minimum: 0 }),
      int('EnteredByMemberUser', { minimum: 0 }),
      int('CompletedTime', { minimum: 0, maximum: 2359 }),
      int('EnteredTime', { minimum: 0, maximum: 2359 }),
      int('NotificationTime', { minimum: 0, maximum: 2359 }),
      code('FromIdType'),
      code('ToIdType'),
      int('GlobalSequence', { minimum: 1, readOnly: true }),
      code('NotificationMethod'),
      code('NotificationStatus'),
      int('OriginatorTransactionSeq', { minimum: 0 }),
      int('ReceiverTransactionSeq', { minimum: 0 }),
      code('Status'),
      code('Type'),
      date('CompletedDate'),
      date('EffectiveDate'),
      date('EnteredDate'),
      date('GlobalSequenceDate', { readOnly: true }),
      date('NoticeDate'),
      date('NotificationDate'),
      date('PostDate'),
      str('CompletedReason', 40),
      str('EnteredValidationMethod', 20),
      str('FromAccount', 10),
      str('FromGlAccount', 20),
      str('FromId', 4),
      str('NotificationUser', 40),
      str('OriginatorStatementDesc', 40),
      str('ReceiverStatementDesc', 40),
      str('ToAccount', 10),
      str('ToGlAccount', 20),
      str('ToId', 4),
      repeating(str('Memo', 40), 10),
    ],
    indexes: [{ name: 'corp_transfer_from_account', on: ['from_account'] }],
  }),

  // ---- Collateral and its children (spec document 2) ----
  record({
    name: 'Collateral',
    table: 'collateral',
    primaryKey: ['collateral_number'],
    fields: [
      code('CollateralAppStatus'),
      code('Type'),
      str('CollateralOwner', 40),
      str('Description', 40),
      str('Number', 10, { column: 'collateral_number', readOnly: true }),
      str('RequiredDocumentList', 40),
      str('ValueSource', 40),
      ...numbered(1, 6, (n) => str(`UserChar${n}`, 40)),
      date('CreateDate'),
      date('ExpireDate'),
      date('FmLastPurgeDate'),
      date('LastFmDate'),
      date('RecordChangeDate'),
      date('ValueDate'),
      money('Value', { minimum: 0 }),
    ],
    children: [
      { list: 'CollateralCollHoldList', record: 'CollateralCollHold' },
      { list: 'CollateralDocumentList', record: 'CollateralDocument' },
      { list: 'CollateralFmHistoryList', record: 'CollateralFmHistory' },
      { list: 'CollateralTrackingList', record: 'CollateralTracking' },
    ],
  }),
  record({
    name: 'CollateralCollHold',
    table: 'collateral_coll_hold',
    keyColumns: [collateralKey],
    primaryKey: ['collateral_number', 'locator'],
    positionColumn: 'locator',
    fields: [
      str('AccountNumber', 10),
      money('Amount'),
      date('EffectiveDate'),
      date('ExpirationDate'),
      str('Id', 4),
      code('IdType'),
      locator(),
      date('RecordChangeDate'),
    ],
  }),
  record({
    name: 'CollateralDocument',
    table: 'collateral_document',
    keyColumns: [collateralKey],
    primaryKey: ['collateral_number', 'locator'],
    positionColumn: 'locator',
    fields: [
      str('AccountNumber', 10),
      str('Description', 40),
      str('Location', 40),
      str('Number', 20),
      str('SlId', 4),
      ...numbered(1, 6, (n) => str(`UserChar${n}`, 40)),
      code('Branch'),
      int('ExcpDays', { minimum: 0 }),
      int('ExcpNoticeCount', { minimum: 0 }),
      int('ExcpNoticeCountCpWork', { minimum: 0 }),
      code('ExcpNoticeOption'),
      locator(),
      code('OfficerCode'),
      code('SlIdType'),
      code('Status'),
      code('Type'),
      date('DocumentDate'),
      date('ExcpNoticeDate'),
      date('ExpireDate'),
      date('LastFmDate'),
      date('ReceivedDate'),
      date('RecordChangeDate'),
      date('StatusDate'),
    ],
    children: [{ list: 'CollateralDocumentTrackingList', record: 'CollateralDocumentTracking' }],
  }),
  record({
    name: 'CollateralDocumentTracking',
    table: 'collateral_document_tracking',
    keyColumns: [collateralKey, { column: 'document_locator', sqlType: 'integer' }],
    primaryKey: ['collateral_number', 'document_locator', 'locator'],
    positionColumn: 'locator',
    fields: trackingFields(),
  }),
  record({
    name: 'CollateralFmHistory',
    table: 'collateral_fm_history',
    keyColumns: [collateralKey],
    primaryKey: ['collateral_number', 'sequence_number'],
    positionColumn: 'sequence_number',
    fields: fmHistoryFields(),
  }),
  record({
    name: 'CollateralTracking',
    table: 'collateral_tracking',
    keyColumns: [collateralKey],
    primaryKey: ['collateral_number', 'locator'],
    positionColumn: 'locator',
    fields: trackingFields(),
  }),
];
