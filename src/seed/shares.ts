/**
 * An account's shares and their sub-records (holds, notes, analyses, check orders, transfers, tracking,
 * share-level names): which shares carry which sub-records, and the values of each.
 */
import type { ShareSubRecordName } from '../catalog/index.js';
import type { WireRecord } from '../store/records.js';
import { LOAN_ID, isChecking, isPrimarySavings, type AccountFacts, type ShareFacts } from './account-facts.js';
import { DATASET_AS_OF, entries, type AccountRecords } from './dataset.js';
import { accountNumberOf, earlierAccount } from './numbering.js';
import { NAME_TYPE, PERSONS_PER_ACCOUNT, PERSON_SLOT, nameValues, personOf } from './people.js';
import { addDays, addMonths, laterDate, type Random } from './random.js';
import { trackingValues, type TrackingTemplate } from './tracking.js';

const CERTIFICATE_TERMS_MONTHS = [6, 12, 24, 36, 60] as const;

/** A balance skewed towards small amounts, as real share balances are. */
function skewedMoney(rng: Random, [min, max]: readonly [number, number]): number {
  return Math.round((min + (max - min) * rng.next() ** 3) * 100) / 100;
}

function shareValues(rng: Random, share: ShareFacts): WireRecord {
  const { product } = share;
  const balance = skewedMoney(rng, product.balance);
  const term = rng.pick(CERTIFICATE_TERMS_MONTHS);
  const isCertificate = product.kind === 'certificate';
  return {
    Id: share.id,
    Type: product.type,
    Description: isCertificate ? `${term} MONTH CERTIFICATE` : rng.pick(product.descriptions),
    Nickname: rng.chance(0.15) ? rng.pick(['RAINY DAY', 'CAR FUND', 'BILLS', 'GROCERIES', 'COLLEGE']) : undefined,
    OpenDate: share.openDate,
    Balance: isCertificate ? Math.round(balance / 100) * 100 : balance,
    AvailableBalance: isCertificate ? 0 : balance,
    DivRate: rng.rate(...product.divRate),
    DivType: isCertificate ? 2 : 0,
    MaturityDate: isCertificate ? addMonths(share.openDate, term) : undefined,
    LastFmDate: rng.dateBetween(share.openDate, DATASET_AS_OF),
    UserChar1: rng.chance(0.1) ? rng.pick(['ROUND-UP ENROLLED', 'ESTATEMENTS', 'PAPER STATEMENTS']) : undefined,
  };
}

const SHARE_TRACKING_TEMPLATES: readonly TrackingTemplate[] = [
  {
    type: 5,
    trackingCode: 1,
    chars: [['OVERDRAFT PRIVILEGE'], ['OPT-IN', 'OPT-OUT'], ['REG E CONSENT ON FILE']],
    amounts: [[250, 1500]],
    codes: [[0, 1]],
    dates: 1,
  },
  {
    type: 12,
    trackingCode: 2,
    chars: [
      ['DIRECT DEPOSIT'],
      ['ACME MANUFACTURING', 'STATE OF MINNESOTA', 'REGIONAL MEDICAL CENTER', 'ISD 281 PAYROLL'],
    ],
    amounts: [[800, 4200]],
    numbers: [[1, 2]],
    dates: 1,
  },
  {
    type: 30,
    trackingCode: 3,
    chars: [['SPRING CERTIFICATE PROMO', 'REFER A FRIEND', 'HOLIDAY SKIP-A-PAY']],
    rates: [[0.25, 1.5]],
    dates: 2,
    expiresInMonths: 12,
  },
];

// ---- Share sub-records ----

interface ShareChildContext {
  readonly rng: Random;
  readonly account: AccountFacts;
  readonly share: ShareFacts;
  readonly locator: number;
}

interface ShareChildPlan {
  readonly record: ShareSubRecordName;
  /** Probability that a share carries one; 0 where the kind makes no sense (check orders on savings). */
  readonly chance: (share: ShareFacts) => number;
  /** undefined when this share cannot have one after all (a transfer with nowhere to go). */
  readonly build: (context: ShareChildContext) => WireRecord | undefined;
}

interface HoldKind {
  readonly type: number;
  readonly reference: string;
  /** Days until the hold releases. */
  readonly days: readonly [number, number];
  readonly amount: readonly [number, number];
}

const HOLD_KINDS: readonly HoldKind[] = [
  { type: 1, reference: 'CHECK DEPOSIT', days: [2, 7], amount: [50, 2500] },
  { type: 2, reference: 'MOBILE DEPOSIT', days: [1, 5], amount: [20, 1500] },
  { type: 3, reference: 'ACH DEBIT PENDING', days: [1, 3], amount: [10, 900] },
  { type: 7, reference: 'PLEDGED FOR LOAN', days: [365, 1825], amount: [500, 10_000] },
  { type: 9, reference: 'LEGAL ORDER', days: [30, 180], amount: [100, 5000] },
];

const NOTE_TEXTS = [
  'MEMBER PREFERS EMAIL CONTACT',
  'VERIFIED ADDRESS BY PHONE',
  'DO NOT WAIVE NSF FEES',
  'TRAVEL NOTICE: EUROPE TWO WEEKS',
  'POA ON FILE - SEE IMAGING',
  'ROUND-UP SAVINGS ENROLLED',
  'DIRECT DEPOSIT FROM EMPLOYER',
  'CALL BEFORE RETURNING ITEMS',
  'ADDRESS CHANGE REQUESTED ONLINE',
  'MEMBER ASKED ABOUT HELOC RATES',
] as const;

/** Which shares carry which sub-records. Every primary savings share has a hold and a note (update targets). */
const SHARE_CHILD_PLANS: readonly ShareChildPlan[] = [
  {
    record: 'ShareHold',
    chance: (share) => (isPrimarySavings(share) ? 1 : 0.25),
    build: ({ rng, account, locator }) => {
      const kind = rng.pick(HOLD_KINDS);
      const effective = rng.dateBetween(addDays(DATASET_AS_OF, -20), DATASET_AS_OF);
      return {
        Locator: locator,
        Type: kind.type,
        Amount: rng.money(...kind.amount),
        EffectiveDate: effective,
        ExpirationDate: addDays(effective, rng.int(...kind.days)),
        Reference1: kind.type === 1 ? `${kind.reference} #${rng.int(1001, 9999)}` : kind.reference,
        Reference2: `BRANCH ${String(account.branch).padStart(2, '0')} TELLER ${rng.int(1, 40)}`,
        Reference3: rng.chance(0.3) ? `CASE ${rng.digits(6, true)}` : undefined,
      };
    },
  },
  {
    record: 'ShareNote',
    chance: (share) => (isPrimarySavings(share) ? 1 : 0.2),
    build: ({ rng, locator }) => {
      const count = rng.int(1, 3);
      const texts = new Set<string>();
      while (texts.size < count) texts.add(rng.pick(NOTE_TEXTS));
      return {
        Locator: locator,
        Code: rng.int(0, 5),
        ExpirationDate: rng.chance(0.3) ? rng.dateBetween(DATASET_AS_OF, '2027-12-31') : undefined,
        Text: entries('Text', [...texts]),
      };
    },
  },
  {
    record: 'ShareAnalysis',
    chance: (share) => (isChecking(share) ? 0.35 : 0),
    build: ({ rng, locator }) => {
      const month = addMonths(DATASET_AS_OF.slice(0, 8) + '01', -rng.int(1, 12));
      return {
        Locator: locator,
        CashAmtTotal: rng.money(0, 12_000),
        Counter: entries('Counter', [rng.int(5, 400), rng.int(0, 40)]),
        Plan: rng.int(1, 4),
        StatementGroup: rng.int(1, 4),
        StatementDate: addDays(addMonths(month, 1), -1),
        StatementPrevDate: addDays(month, -1),
      };
    },
  },
  {
    record: 'ShareAnalysisGroup',
    chance: (share) => (isChecking(share) ? 0.2 : 0),
    build: ({ rng, account, share, locator }) => ({
      Locator: locator,
      AccountNumber: account.accountNumber,
      Comment1: rng.pick(['SMALL BUSINESS TIER 1', 'SMALL BUSINESS TIER 2', 'NONPROFIT', 'SOLE PROPRIETOR']),
      Id: share.id,
    }),
  },
  {
    record: 'ShareAnalysisPlan',
    chance: (share) => (isChecking(share) ? 0.2 : 0),
    build: ({ rng, share, locator }) => {
      const [description, definedCode, charge] = rng.pick([
        ['BASIC BUSINESS PLAN', 1, 5],
        ['ANALYSIS PLUS PLAN', 2, 15],
        ['NONPROFIT PLAN', 3, 0],
        ['HIGH VOLUME PLAN', 4, 25],
      ] as const);
      return {
        Locator: locator,
        Description: description,
        DefinedCode: definedCode,
        Plan: definedCode,
        Charge: entries('Charge', [charge]),
        EffectiveDate: rng.dateBetween(share.openDate, DATASET_AS_OF),
        ExpirationDate: rng.chance(0.3) ? rng.dateBetween(DATASET_AS_OF, '2027-12-31') : undefined,
      };
    },
  },
  {
    record: 'ShareCheckOrder',
    chance: (share) => (isChecking(share) ? 0.5 : 0),
    build: ({ rng, share, locator }) => {
      const orderDate = rng.dateBetween(laterDate(share.openDate, '2020-01-01'), DATASET_AS_OF);
      const status = rng.pick([0, 1, 2]);
      return {
        Locator: locator,
        Quantity: rng.pick([100, 150, 200, 300]),
        Status: status,
        LastOrderDate: orderDate,
        StartNumber: 1001 + rng.int(0, 40) * 50,
        CheckStyle: rng.pick(['WALLET', 'DUPLICATE', 'DESK', 'BUSINESS']),
        ShipMethod: rng.pick([0, 1, 2]),
        StatusDate: status > 0 ? addDays(orderDate, rng.int(2, 7)) : undefined,
      };
    },
  },
  {
    record: 'ShareTransfer',
    chance: () => 0.25,
    build: ({ rng, account, share, locator }) => {
      const ownTargets = account.shares.filter((other) => other.id !== share.id);
      const toOtherMember = account.index > 1 && (ownTargets.length === 0 || rng.chance(0.2));
      if (!toOtherMember && ownTargets.length === 0) return undefined;
      const toLoan = !toOtherMember && rng.chance(0.25);
      const toAccount = toOtherMember ? accountNumberOf(earlierAccount(rng, account.index, 50)) : account.accountNumber;
      const toId = toOtherMember ? '0000' : toLoan ? LOAN_ID : rng.pick(ownTargets).id;
      const effective = rng.dateBetween(laterDate(share.openDate, '2022-01-01'), DATASET_AS_OF);
      return {
        Locator: locator,
        Type: toLoan ? 1 : 0,
        AccountNumber: toAccount,
        IdType: toLoan ? 1 : 0,
        Id: toId,
        Amount: rng.money(25, 600),
        Frequency: rng.pick([1, 2, 3]),
        Day1: rng.int(1, 28),
        EffectiveDate: effective,
        NextDate: rng.dateBetween(addDays(DATASET_AS_OF, 1), addDays(DATASET_AS_OF, 31)),
        ExpirationDate: rng.chance(0.3) ? addMonths(effective, 36) : undefined,
        PaymentType: rng.int(0, 2),
        RegE: rng.int(0, 1),
      };
    },
  },
  {
    record: 'ShareTracking',
    chance: () => 0.2,
    build: ({ rng, share, locator }) => ({
      ...trackingValues(rng, rng.pick(SHARE_TRACKING_TEMPLATES), locator, share.openDate),
      Id: share.id,
      IdType: 0,
    }),
  },
  {
    record: 'ShareName',
    chance: (share) => (share.product.kind === 'certificate' ? 0.6 : isPrimarySavings(share) ? 0.05 : 0.15),
    build: ({ rng, account, share, locator }) => {
      const slot = PERSON_SLOT.shareName + rng.int(0, 1);
      const person = personOf(account.seed, account.index * PERSONS_PER_ACCOUNT + slot);
      const type = isChecking(share) ? NAME_TYPE.joint : NAME_TYPE.beneficiary;
      return {
        ...nameValues(person, type, locator, share.openDate),
        BeneficiaryPercent: type === NAME_TYPE.beneficiary ? rng.pick([100, 50]) : undefined,
      };
    },
  },
];

/**
 * Adds the account's shares, each followed by its sub-records; account 1 (`everyKind`) gets every
 * sub-record its shares can carry.
 * @example addShares(out, rng, account) // out.records.Share, out.records.ShareHold, …
 */
export function addShares(out: AccountRecords, rng: Random, account: AccountFacts): void {
  const keys = { account_number: account.accountNumber };
  for (const share of account.shares) {
    const shareKeys = { ...keys, share_id: share.id };
    out.add('Share', keys, shareValues(rng, share));
    for (const plan of SHARE_CHILD_PLANS) {
      const chance = plan.chance(share);
      if (chance === 0 || !(account.everyKind || rng.chance(chance))) continue;
      const values = plan.build({ rng, account, share, locator: out.nextLocator(plan.record) });
      if (values) out.add(plan.record, shareKeys, values);
    }
  }
}
