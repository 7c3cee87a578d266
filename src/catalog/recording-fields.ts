/**
 * What a recording of a core keeps of each field (docs/recording.md): the one table saying which fields
 * hold member data and of what kind. A recording writes a pseudonym of the kind in their place, drops
 * secrets, and keeps codes, amounts and the other dates. A name neither this table nor the record catalog
 * knows is dropped: a field the core adds is never written in clear before it is classified here.
 *
 * Strings are classified by name, each one: a string is where member data hides. Integers, rates and
 * dates of the record catalog are codes, counts and dates and are kept as they are; its money fields are
 * amounts (kept, or jittered when asked). test/recording.test.ts checks every field of every record type
 * and every leaf of every operation's request and answer is classified.
 */
import { RECORDS } from './records.js';

/**
 * - `keep`: a code, an identifier of the credit union's own (a share id, a GL account), a flag.
 * - `amount`: money, kept (jittered under COREGATE_RECORD_JITTER_AMOUNTS).
 * - `date`: a date that is not a birth date, kept.
 * - `ssn`, `pan`, `micr`, `draft`, `name`, `street`, `phone`, `email`, `birthDate`, `userName`, `account`:
 *   member data, written as a keyed pseudonym valid in form (recording/pseudonyms.ts).
 * - `identifier`: another member or document number (a licence, a lookup number, a ZIP code), its digits
 *   and letters replaced in place.
 * - `text`: free text a teller may have typed anything into (user fields, memos, references, FM history's
 *   old and new values), replaced by keyed letters of the same length.
 * - `secret`: a password, token, session id, credential or query: never written.
 */
export type FieldSensitivity =
  | 'keep'
  | 'amount'
  | 'date'
  | 'ssn'
  | 'pan'
  | 'micr'
  | 'draft'
  | 'name'
  | 'street'
  | 'phone'
  | 'email'
  | 'birthDate'
  | 'userName'
  | 'account'
  | 'identifier'
  | 'text'
  | 'secret';

const named = (sensitivity: FieldSensitivity, names: string) =>
  names
    .split(/\s+/)
    .filter((name) => name !== '')
    .map((name) => [name, sensitivity] as const);

/** Every string field of the record catalog and every leaf of the operations' envelopes, by name. */
const BY_NAME: ReadonlyMap<string, FieldSensitivity> = new Map([
  ...named('ssn', 'Ssn SSN'),
  ...named('pan', 'CardNumber'),
  ...named('micr', 'MicrNumber MICR MicrAcctNumber MicrLine'),
  ...named('draft', 'Draft'),
  ...named(
    'name',
    `First Last Middle DbaFirst DbaLast DbaMiddle ShortName DbaShortName LongName DbaLongName ExtendedName
     DbaExtendedName MothersMaidenName EmployerName PayeeName CollateralOwner CheckInitials CoverInitials
     NotificationUser`,
  ),
  ...named('street', 'Street ExtraAddress AlternateAddress MailAddress'),
  ...named('phone', 'HomePhone MobilePhone WorkPhone PagerNumber AlternatePhone ImprintPhone PayeePhone'),
  ...named('email', 'Email AltEmail'),
  ...named('birthDate', 'BirthDate'),
  ...named('userName', 'UserName HomeBankingUserName'),
  ...named(
    'account',
    `AccountNumber FromAccount ToAccount MemberNumber MemberNumLink MbrAddrNumber MbrAddrNumLink NonAcctNameNum
     AnalysisGroupPrimaryAcct AnalysisPmtAcct ExtLoanAccount`,
  ),
  ...named(
    'identifier',
    `LookupNumber IdentIdNumber License ForeignTin GIin Lei CertificateNumber CreditReportNumber BusinessSerial
     BusVoucherNumber PoNumber PromoNumber CutNumber EscrowedLoanId ZipCode MailZipCode ImprintZipCode
     CollateralNumber Number`,
  ),
  ...named(
    'text',
    `UserChar1 UserChar2 UserChar3 UserChar4 UserChar5 UserChar6 UserChar7 UserChar8 UserChar9 UserChar10
     UserChar11 UserChar12 UserChar13 UserChar14 UserChar15 UserChar16 UserChar17 UserChar18 UserChar19 UserChar20
     Memo Text Reference Reference1 Reference2 Reference3 Reference4 Comment1 ExtraInfo Occupation Nickname
     PayeeLine OverSigLine SpecialInstr ImprintLine NewCharacter OldCharacter CreditReportComment
     OriginatorStatementDesc ReceiverStatementDesc CompletedReason IdentIdDescription Location ErrorMessage`,
  ),
  ...named('secret', 'Credentials nxAttributes Token TokenId Password Query PagingToken'),
  ...named(
    'keep',
    `Accent Binding CarrierRoute Chapter4StatusCode CheckStyle CountryCode Country CoverStyle
     CreditReportAddrIndicator CreditReportCompliance CreditReportConsumerInfo Description FeeDescription Design
     EnteredValidationMethod FieldName RecordName FromId ToId Id ShareId SlId AnalysisGroupPrimaryId AnalysisPmtSlId
     IrsCountryCode Lob MemberBranch NraExemptionCode OdtAuthFeeSrcCodeList Phantom PreferredContact Sex State
     MailState ImprintState SweepFeeId Suffix DbaSuffix Title DbaTitle City MailCity ImprintCity FromGlAccount
     ToGlAccount HoldCreationTime CheckDigits BusCaptions SigFigure WorkPhoneExtension ValueSource
     RequiredDocumentList MessageId Name ErrorCode Record EntryId hasReachedMaximumListSize isAllFieldsUpdateSuccess
     NumberOfRecordsToReturn NumberOfRecordsToSkip CorpTransferGlobalSequence ShareAnalysisGroupLocator
     ShareAnalysisLocator ShareAnalysisPlanLocator ShareCheckOrderLocator ShareHoldLocator ShareNameLocator
     ShareNoteLocator ShareTrackingLocator ShareTransferLocator CollateralCollHoldLocator CollateralDocumentLocator
     CollateralDocumentTrackingLocator CollateralTrackingLocator LookupType Version_1 _value_1`,
  ),
  ...named('date', 'CorpTransferGlobalSequenceDate StartPostDate EndPostDate'),
]);

/** The record catalog's other fields by their kind: money is an amount, a date a date, the rest codes. */
const BY_KIND: ReadonlyMap<string, FieldSensitivity> = new Map(
  RECORDS.flatMap((record) =>
    record.fields
      .filter((field) => field.kind !== 'string')
      .map(
        (field) => [field.name, field.kind === 'money' ? 'amount' : field.kind === 'date' ? 'date' : 'keep'] as const,
      ),
  ),
);

/**
 * What a recording does with a field of this name; undefined for a name it does not know (dropped).
 * @example recordingSensitivity('Ssn') // 'ssn'
 * @example recordingSensitivity('Balance') // 'amount'
 */
export function recordingSensitivity(name: string): FieldSensitivity | undefined {
  return BY_NAME.get(name) ?? BY_KIND.get(name) ?? (INCLUDE_ALL.test(name) ? 'keep' : undefined);
}

/** A selection's switch for every field of a record (`IncludeAllShareHoldFields`). */
const INCLUDE_ALL = /^IncludeAll[A-Za-z]+Fields$/;

/** The kinds whose values are member data written as pseudonyms. */
export const PSEUDONYMOUS: ReadonlySet<FieldSensitivity> = new Set([
  'ssn',
  'pan',
  'micr',
  'draft',
  'name',
  'street',
  'phone',
  'email',
  'birthDate',
  'userName',
  'account',
  'identifier',
  'text',
]);
