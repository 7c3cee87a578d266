/**
 * The ways a member reaches an account, which the FindBy lookups search: cards (active, expired, closed,
 * lost, and card numbers reissued from one account to a later one), the home banking user, the MICR
 * number of the checks and the credit union's own lookup numbers.
 */
import type { WireRecord } from '../store/records.js';
import type { AccountFacts } from './account-facts.js';
import { DATASET_AS_OF, STREAM, type AccountRecords } from './dataset.js';
import { NUMBERINGS, cardNumberOf, uniqueNumber } from './numbering.js';
import { Random, addDays, addMonths, earlierDate, laterDate } from './random.js';

/** Active cards expire in this window (after any plausible run date); expired ones in 2019–2023. */
const ACTIVE_CARD_EXPIRY = { from: '2028-01-01', to: '2031-12-31' } as const;
const EXPIRED_CARD_EXPIRY = { from: '2019-01-01', to: '2023-12-31' } as const;

/** Card slots 0–2 are an account's own cards; slot 3 is the number it later hands to another account. */
const REISSUED_CARD_SLOT = 3;
/** How far back a reissued card may reach (keeps the pairs close in small datasets). */
const REISSUE_REACH = 12;

/**
 * The later account that receives a closed card number of account `index`, if any: decided by the
 * earlier account alone, so the later one can find it by looking back `REISSUE_REACH` accounts.
 */
function reissueTarget(seed: number, index: number): number | undefined {
  const rng = Random.derive(seed, STREAM.reissue, index);
  return rng.chance(0.04) ? index + rng.int(1, REISSUE_REACH) : undefined;
}

/** Card Status codes: 0 active, 1 inactive (closed), 2 lost or stolen. */
export const CARD_STATUS = { active: 0, inactive: 1, lost: 2 } as const;

/** Card expirations are the last day of a month. */
function monthEnd(rng: Random, window: { readonly from: string; readonly to: string }): string {
  const someDay = rng.dateBetween(window.from, window.to);
  return addDays(addMonths(someDay.slice(0, 8) + '01', 1), -1);
}

function cardValues(
  rng: Random,
  locator: number,
  cardNumber: string,
  state: 'active' | 'expired' | 'inactive' | 'lost',
): WireRecord {
  const expirationDate = monthEnd(rng, state === 'active' ? ACTIVE_CARD_EXPIRY : EXPIRED_CARD_EXPIRY);
  return {
    Locator: locator,
    CardNumber: cardNumber,
    Status: state === 'expired' ? CARD_STATUS.active : CARD_STATUS[state],
    // Valid three or four years; a card expiring late in the window was issued recently, never after "today".
    IssueDate: earlierDate(
      addDays(addMonths(expirationDate, -rng.pick([36, 48])), 1),
      rng.dateBetween(addDays(DATASET_AS_OF, -180), DATASET_AS_OF),
    ),
    ExpirationDate: expirationDate,
  };
}

/**
 * Adds the account's cards: its own, then the closed card whose number a later account received, then
 * the numbers it received from earlier accounts (at most three cards in all).
 */
export function addCards(out: AccountRecords, rng: Random, account: AccountFacts): void {
  const { seed, index } = account;
  const keys = { account_number: account.accountNumber };
  const incoming: number[] = [];
  for (let back = 1; back <= REISSUE_REACH && index - back >= 1; back += 1) {
    if (reissueTarget(seed, index - back) === index) incoming.push(index - back);
  }
  const outgoing = reissueTarget(seed, index) !== undefined;
  const states = account.everyKind
    ? (['active', 'inactive', 'expired'] as const)
    : Array.from(
        {
          length: rng.weighted([
            [0, 20],
            [1, 45],
            [2, 25],
            [3, 10],
          ] as const),
        },
        () =>
          rng.weighted([
            ['active', 75],
            ['expired', 10],
            ['inactive', 10],
            ['lost', 5],
          ] as const),
      );
  const own = states.slice(0, Math.max(0, 3 - incoming.length - (outgoing ? 1 : 0)));
  own.forEach((state, slot) => {
    out.add('Card', keys, cardValues(rng, out.nextLocator('Card'), cardNumberOf(seed, index, slot), state));
  });
  // The closed card whose number a later account received, then the numbers received from earlier accounts.
  if (outgoing) {
    out.add(
      'Card',
      keys,
      cardValues(rng, out.nextLocator('Card'), cardNumberOf(seed, index, REISSUED_CARD_SLOT), 'inactive'),
    );
  }
  for (const origin of incoming) {
    out.add(
      'Card',
      keys,
      cardValues(rng, out.nextLocator('Card'), cardNumberOf(seed, origin, REISSUED_CARD_SLOT), 'active'),
    );
  }
}

/** Adds the account's home banking user, which most accounts have. */
export function addHomeBanking(out: AccountRecords, rng: Random, account: AccountFacts): void {
  if (!account.everyKind && !rng.chance(0.7)) return;
  const { primary } = account;
  out.add(
    'HomeBankingUser',
    { account_number: account.accountNumber },
    {
      Locator: out.nextLocator('HomeBankingUser'),
      // Unique by construction: the account index ends the name.
      UserName: `${primary.first.charAt(0)}${primary.last}${account.index}`.toLowerCase(),
      Status: rng.weighted([
        [0, 90],
        [1, 7],
        [2, 3],
      ] as const),
      CreateDate: rng.dateBetween(laterDate(account.openDate, '2005-01-01'), DATASET_AS_OF),
    },
  );
}

/** One MICR number per account with checking; each checking share is reached by its draft number. */
export function addMicr(out: AccountRecords, rng: Random, account: AccountFacts): void {
  const checking = account.shares.filter((share) => share.product.draft !== undefined);
  if (checking.length === 0) return;
  const body = String(uniqueNumber(account.seed, NUMBERINGS.micr, account.index)).padStart(10, '0');
  // An optional 1–2 digit prefix gives 10–12 digits; numbers of different lengths never collide.
  const micrNumber = rng.digits(rng.int(0, 2), true) + body;
  for (const share of checking) {
    out.add(
      'Micr',
      { account_number: account.accountNumber },
      { Locator: out.nextLocator('Micr'), MicrNumber: micrNumber, Draft: share.product.draft, ShareId: share.id },
    );
  }
}

/** Lookup kinds (types are the credit union's configuration, 0–99): some point at a share, some not. */
export const LOOKUP_KINDS = [
  { type: 3, label: 'Payroll employee id', prefix: 'EMP', withShare: false },
  { type: 12, label: 'Account number before the core conversion', prefix: '', withShare: true },
  { type: 25, label: 'ACH company id', prefix: '1', withShare: true },
  { type: 40, label: 'Bill-pay subscriber id', prefix: 'BP', withShare: false },
] as const;

/** Adds the account's lookup numbers, unique per (account, lookup kind). */
export function addLookups(out: AccountRecords, rng: Random, account: AccountFacts): void {
  const kinds = LOOKUP_KINDS.map((kind, slot) => ({ kind, slot })).filter(
    ({ slot }) => (account.everyKind && slot < 2) || rng.chance(0.12),
  );
  for (const { kind, slot } of kinds) {
    const number = uniqueNumber(account.seed, NUMBERINGS.lookup, account.index * LOOKUP_KINDS.length + slot);
    out.add(
      'Lookup',
      { account_number: account.accountNumber },
      {
        Locator: out.nextLocator('Lookup'),
        LookupType: kind.type,
        LookupNumber: `${kind.prefix}${String(number).padStart(8, '0')}`,
        ShareId: kind.withShare ? rng.pick(account.shares).id : undefined,
      },
    );
  }
}
