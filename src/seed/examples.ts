/**
 * Values a newcomer can try against the demo dataset, computed from the generator alone (no database):
 * for every lookup a value that finds something and one that finds nothing, plus targets for share
 * updates, the corporate transfer and the collateral operations. `renderDemoDataDoc` (demo-data-doc.ts)
 * turns them into docs/demo-data.md; test/seed.test.ts checks both against a seeded database.
 */
import { SHARE_SUB_RECORD_NAMES, type ShareSubRecordName } from '../catalog/index.js';
import type { WireRecord } from '../store/records.js';
import { DATASET_AS_OF, type AccountBundle, type SeededRecordName } from './dataset.js';
import { generateAccount } from './generate.js';
import { CARD_STATUS, LOOKUP_KINDS } from './member-access.js';
import { accountNumberOf, luhnCheckDigit } from './numbering.js';

/**
 * The core user of the demo (UserNumberCredentials): the demo set-up creates it with a generated password,
 * kept in demo-credentials.json beside the admin password, and logon's example signs on as it.
 */
export const DEMO_USER = { userNumber: 1, name: 'Demo user' } as const;

/** Examples come from the first accounts where possible, so they exist in any dataset of that size. */
const PREFERRED_ACCOUNTS = 50;
/** File-maintenance history rows of the short collateral example at most. */
const SHORT_HISTORY_RECORDS = 20;
/** Collateral tracking records of the short collateral example at most (its tree is written out in the reference). */
const SHORT_TREE_TRACKINGS = 1;
/** The active-card example expires late, so it stays active for years after this doc is written. */
const ACTIVE_EXAMPLE_EXPIRES_AFTER = '2030-01-01';

/** The lookup result object of findByMICR and findByLookup. */
export interface LookupResult {
  readonly AccountNumber: string;
  readonly IdType: 'SHARE' | 'NONE';
  readonly Id: string | null;
}

export interface CardExample {
  readonly cardNumber: string;
  readonly accountNumber: string;
  readonly status: number;
  readonly expirationDate: string;
}

export interface LookupExample {
  readonly lookupType: number;
  readonly lookupNumber: string;
  readonly label: string;
  readonly result: LookupResult;
}

/** One share sub-record that an update operation can target. */
export interface ShareTarget {
  readonly record: SeededRecordName;
  readonly accountNumber: string;
  readonly shareId: string;
  readonly locator: number;
}

export interface DemoExamples {
  readonly seed: number;
  readonly accounts: number;
  readonly asOf: string;
  /** Status 0, not expired: findByActiveCard and findByAnyCard find it. */
  readonly activeCard: CardExample;
  /** Status 1 (inactive): findByActiveCard returns null, findByAnyCard the account. */
  readonly inactiveCard: CardExample;
  /** Status 0 but expired: findByActiveCard returns null, findByAnyCard the account. */
  readonly expiredCard: CardExample;
  /** One number on two accounts: inactive on one, active on the other. */
  readonly reissuedCard: {
    readonly cardNumber: string;
    readonly activeAccountNumber: string;
    readonly accountNumbers: readonly string[];
  };
  readonly homeBankingUser: { readonly userName: string; readonly accountNumber: string };
  readonly micr: { readonly micrNumber: string; readonly draft: string; readonly result: LookupResult };
  readonly lookupWithShare: LookupExample;
  readonly lookupWithoutShare: LookupExample;
  /** An SSN on the name records of several accounts (a joint owner who is a member too). */
  readonly sharedSsn: { readonly ssn: string; readonly accountNumbers: readonly string[] };
  /** The short name among the first accounts' names that matches the most accounts of the dataset. */
  readonly shortName: { readonly shortName: string; readonly accountNumbers: readonly string[] };
  readonly corpTransfer: {
    readonly globalSequenceDate: string;
    readonly globalSequence: number;
    readonly fromAccount: string;
    readonly amount: number;
  };
  readonly collateral: CollateralExample;
  /**
   * A collateral with every child record, one document with one tracking record, one tracking record and a
   * short file-maintenance history: the whole tree of it is a page, not a book (the API reference's examples
   * read it).
   */
  readonly shortCollateral: CollateralExample;
  /** One record of each share sub-record type (and a share), on the first account that has them all. */
  readonly shareTargets: readonly ShareTarget[];
  readonly noMatch: {
    readonly accountNumber: string;
    readonly cardNumber: string;
    readonly homeBankingUserName: string;
    readonly micrNumber: string;
    readonly draft: string;
    readonly lookupType: number;
    readonly lookupNumber: string;
    readonly ssn: string;
    readonly shortName: string;
    readonly globalSequenceDate: string;
    readonly globalSequence: number;
    readonly collateralNumber: string;
  };
}

export interface CollateralExample {
  readonly collateralNumber: string;
  readonly accountNumber: string;
  readonly description: string;
  readonly holds: number;
  readonly documents: number;
  readonly fmHistory: number;
  readonly trackings: number;
  /** A document with tracking records, and one of them. */
  readonly documentLocator: number;
  readonly documentTrackings: number;
  readonly documentTrackingLocator: number;
  /** A collateral hold and a tracking record of the collateral. */
  readonly holdLocator: number;
  readonly trackingLocator: number;
}

/**
 * The share sub-records the examples name a target of: the hold and the note first (every primary savings
 * share has them, and the page's update examples use the hold), then the others in the catalog's order.
 */
const LEADING_SHARE_TARGETS: readonly ShareSubRecordName[] = ['ShareHold', 'ShareNote'];
const SHARE_TARGET_RECORDS: readonly ShareSubRecordName[] = [
  ...LEADING_SHARE_TARGETS,
  ...SHARE_SUB_RECORD_NAMES.filter((name) => !LEADING_SHARE_TARGETS.includes(name)),
];

const text = (values: WireRecord, field: string): string => String(values[field]);
const num = (values: WireRecord, field: string): number => Number(values[field]);

/** Every account number that carries a value, in ascending order, from a value → accounts index. */
function accountsOf(index: ReadonlyMap<string, Set<string>>, value: string): string[] {
  return [...(index.get(value) ?? [])].sort();
}

function addTo(index: Map<string, Set<string>>, value: string, accountNumber: string): void {
  const accounts = index.get(value) ?? new Set<string>();
  accounts.add(accountNumber);
  index.set(value, accounts);
}

/** The first value `choose` accepts, in account order; throws when the dataset has none. */
function firstFrom<T>(
  bundles: readonly AccountBundle[],
  what: string,
  choose: (bundle: AccountBundle) => T | undefined,
): T {
  for (const bundle of bundles) {
    const chosen = choose(bundle);
    if (chosen !== undefined) return chosen;
  }
  throw new Error(`the dataset has no ${what}; seed more accounts`);
}

/**
 * Example values for the demo dataset of `accounts` accounts generated from `seed`.
 * @example demoExamples(DEFAULT_SEED, DEFAULT_DEMO_ACCOUNTS).activeCard.cardNumber
 */
export function demoExamples(seed: number, accounts: number): DemoExamples {
  // The whole dataset is indexed, so that every "which accounts carry it" answer is exact.
  const bundles: AccountBundle[] = [];
  const cards = new Map<string, { accountNumber: string; values: WireRecord }[]>();
  const ssns = new Map<string, Set<string>>();
  const shortNames = new Map<string, Set<string>>();
  for (let index = 1; index <= accounts; index += 1) {
    const bundle = generateAccount(seed, index);
    bundles.push(bundle);
    const { accountNumber, records } = bundle;
    for (const { values } of records.Card) {
      cards.set(text(values, 'CardNumber'), [
        ...(cards.get(text(values, 'CardNumber')) ?? []),
        { accountNumber, values },
      ]);
    }
    for (const { values } of records.ShareName) {
      addTo(ssns, text(values, 'Ssn'), accountNumber);
      addTo(shortNames, text(values, 'ShortName').toUpperCase(), accountNumber);
    }
  }
  // Lookup examples come from ordinary accounts (2, 3, …), to show lookups reaching across the dataset;
  // account 1, which has every record kind, is the fallback and the target for updates and collateral.
  const ordinary = [...bundles.slice(1), ...bundles.slice(0, 1)];
  const singleCard = (what: string, accepts: (values: WireRecord) => boolean): CardExample =>
    firstFrom(ordinary, what, ({ accountNumber, records }) => {
      const card = records.Card.find(
        ({ values }) => accepts(values) && cards.get(text(values, 'CardNumber'))?.length === 1,
      );
      return card
        ? {
            cardNumber: text(card.values, 'CardNumber'),
            accountNumber,
            status: num(card.values, 'Status'),
            expirationDate: text(card.values, 'ExpirationDate'),
          }
        : undefined;
    });
  const isActive = (values: WireRecord) =>
    num(values, 'Status') === 0 && text(values, 'ExpirationDate') >= DATASET_AS_OF;

  const reissuedCard = firstFrom(ordinary, 'reissued card number', ({ records }) => {
    for (const { values } of records.Card) {
      const holders = cards.get(text(values, 'CardNumber')) ?? [];
      const active = holders.find((holder) => isActive(holder.values));
      if (holders.length < 2 || !active) continue;
      return {
        cardNumber: text(values, 'CardNumber'),
        activeAccountNumber: active.accountNumber,
        accountNumbers: [...new Set(holders.map((holder) => holder.accountNumber))].sort(),
      };
    }
    return undefined;
  });

  const lookupExample = (withShare: boolean): LookupExample =>
    firstFrom(ordinary, withShare ? 'lookup with a share' : 'lookup without a share', ({ accountNumber, records }) => {
      const lookup = records.Lookup.find(({ values }) => (values.ShareId !== undefined) === withShare);
      if (!lookup) return undefined;
      const lookupType = num(lookup.values, 'LookupType');
      return {
        lookupType,
        lookupNumber: text(lookup.values, 'LookupNumber'),
        label: LOOKUP_KINDS.find((kind) => kind.type === lookupType)?.label ?? '',
        result: withShare
          ? { AccountNumber: accountNumber, IdType: 'SHARE', Id: text(lookup.values, 'ShareId') }
          : { AccountNumber: accountNumber, IdType: 'NONE', Id: null },
      };
    });

  const sharedSsn = firstFrom(ordinary, 'SSN on two accounts', ({ records }) => {
    const shared = records.ShareName.find(({ values }) => (ssns.get(text(values, 'Ssn'))?.size ?? 0) >= 2);
    return shared
      ? { ssn: text(shared.values, 'Ssn'), accountNumbers: accountsOf(ssns, text(shared.values, 'Ssn')) }
      : undefined;
  });

  // The most shared short name among the first accounts' names (ties: alphabetical).
  const candidates = bundles
    .slice(0, PREFERRED_ACCOUNTS)
    .flatMap(({ records }) => records.ShareName.map(({ values }) => text(values, 'ShortName').toUpperCase()));
  const sharedBy = (name: string) => shortNames.get(name)?.size ?? 0;
  const [shortName = ''] = [...new Set(candidates)].sort((a, b) => sharedBy(b) - sharedBy(a) || a.localeCompare(b));

  const corpTransfer = firstFrom(ordinary, 'corporate transfer', ({ records }) => {
    const transfer = records.CorpTransfer[0];
    return transfer
      ? {
          globalSequenceDate: text(transfer.values, 'GlobalSequenceDate'),
          globalSequence: num(transfer.values, 'GlobalSequence'),
          fromAccount: text(transfer.values, 'FromAccount'),
          amount: num(transfer.values, 'Amount'),
        }
      : undefined;
  });

  const collateralOf = ({ accountNumber, records }: AccountBundle): CollateralExample | undefined => {
    const tracking = records.CollateralDocumentTracking[0];
    if (!tracking) return undefined;
    const collateralNumber = String(tracking.keys.collateral_number);
    const documentLocator = Number(tracking.keys.document_locator);
    const ofCollateral = (name: SeededRecordName) =>
      records[name].filter(({ keys, values }) => (keys.collateral_number ?? values.Number) === collateralNumber);
    const [root] = ofCollateral('Collateral');
    const [hold] = ofCollateral('CollateralCollHold');
    const [collateralTracking] = ofCollateral('CollateralTracking');
    if (!hold || !collateralTracking) return undefined;
    return {
      collateralNumber,
      accountNumber,
      description: root ? text(root.values, 'Description') : '',
      holds: ofCollateral('CollateralCollHold').length,
      documents: ofCollateral('CollateralDocument').length,
      fmHistory: ofCollateral('CollateralFmHistory').length,
      trackings: ofCollateral('CollateralTracking').length,
      documentLocator,
      documentTrackings: ofCollateral('CollateralDocumentTracking').filter(
        ({ keys }) => Number(keys.document_locator) === documentLocator,
      ).length,
      documentTrackingLocator: num(tracking.values, 'Locator'),
      holdLocator: num(hold.values, 'Locator'),
      trackingLocator: num(collateralTracking.values, 'Locator'),
    };
  };
  const collateral = firstFrom(bundles, 'collateral with every child', collateralOf);
  const shortCollateral = firstFrom(ordinary, 'collateral with every child and a short history', (bundle) => {
    const found = collateralOf(bundle);
    // One document, with one tracking record: the reference writes the whole tree out.
    return found &&
      found.fmHistory <= SHORT_HISTORY_RECORDS &&
      found.documents === 1 &&
      found.documentTrackings <= SHORT_TREE_TRACKINGS &&
      found.trackings <= SHORT_TREE_TRACKINGS
      ? found
      : undefined;
  });

  const shareTargets = firstFrom(bundles, 'account with every share sub-record', ({ accountNumber, records }) => {
    const targets: ShareTarget[] = [];
    for (const record of SHARE_TARGET_RECORDS) {
      const target = records[record].find(({ keys }) => typeof keys.share_id === 'string');
      if (!target) return undefined;
      targets.push({
        record,
        accountNumber,
        shareId: String(target.keys.share_id),
        locator: num(target.values, 'Locator'),
      });
    }
    return targets;
  });

  const micr = firstFrom(ordinary, 'MICR number', ({ accountNumber, records }) => {
    const [first] = records.Micr;
    return first
      ? {
          micrNumber: text(first.values, 'MicrNumber'),
          draft: text(first.values, 'Draft'),
          result: { AccountNumber: accountNumber, IdType: 'SHARE', Id: text(first.values, 'ShareId') } as const,
        }
      : undefined;
  });

  const homeBankingUser = firstFrom(ordinary, 'home banking user', ({ accountNumber, records }) => {
    const [user] = records.HomeBankingUser;
    return user ? { userName: text(user.values, 'UserName'), accountNumber } : undefined;
  });

  // Values no generated record can carry, by the generator's formats: card numbers start with one of
  // CARD_BINS, user names have no dots, MICR numbers have 10–12 digits, lookup types are LOOKUP_KINDS,
  // SSN area 666 is never issued, surnames come from a list, GlobalSequence is at least 11 and
  // collateral numbers start with 7.
  const unknownCardPrefix = '400000123456789';
  const noMatch = {
    accountNumber: accountNumberOf(accounts + 1),
    cardNumber: `${unknownCardPrefix}${luhnCheckDigit(unknownCardPrefix)}`,
    homeBankingUserName: 'no.such.user',
    micrNumber: '1234',
    draft: '9',
    lookupType: 99,
    lookupNumber: 'NOTHING-HERE',
    ssn: '666123456',
    shortName: 'NOBODY X',
    globalSequenceDate: '2000-01-01',
    globalSequence: 1,
    collateralNumber: '0000000000',
  };

  return {
    seed,
    accounts,
    asOf: DATASET_AS_OF,
    activeCard: singleCard(
      'active card',
      (values) => isActive(values) && text(values, 'ExpirationDate') >= ACTIVE_EXAMPLE_EXPIRES_AFTER,
    ),
    inactiveCard: singleCard('inactive card', (values) => num(values, 'Status') === CARD_STATUS.inactive),
    expiredCard: singleCard(
      'expired card',
      (values) => num(values, 'Status') === 0 && text(values, 'ExpirationDate') < DATASET_AS_OF,
    ),
    reissuedCard,
    homeBankingUser,
    micr,
    lookupWithShare: lookupExample(true),
    lookupWithoutShare: lookupExample(false),
    sharedSsn,
    shortName: { shortName, accountNumbers: accountsOf(shortNames, shortName) },
    corpTransfer,
    collateral,
    shortCollateral,
    shareTargets,
    noMatch,
  };
}
