/**
 * The deterministic demo dataset of a US credit union. `generateAccount(seed, index)` returns every record
 * of one account (names, shares and their sub-records, cards, home-banking user, MICR, lookups, corporate
 * transfers, collateral) from the seed and the account index alone, so account 42 is the same whether 50
 * or 1,000,000 accounts are seeded, and any account can be regenerated without the others.
 *
 * Deliberate overlaps across accounts are also decided from one side only, looking backwards:
 * - a joint owner of account k may be the primary owner of an earlier account (same person, same SSN),
 *   so findBySSN returns several accounts;
 * - an earlier account may hand a closed card number to a later one (member-access.ts), so findByAnyCard
 *   returns two accounts while findByActiveCard returns one;
 * - last names come from 60 common surnames, so a short name ("SMITH J") matches several accounts.
 *
 * This module assembles an account from the themed generators beside it (people.ts, shares.ts,
 * member-access.ts, corp-transfers.ts, collateral.ts, over dataset.ts, numbering.ts and account-facts.ts)
 * and is the generator's public face: it re-exports what callers outside src/seed use.
 */
import { chooseShareProducts, type AccountFacts } from './account-facts.js';
import { AccountRecords, DATASET_AS_OF, STREAM, type AccountBundle } from './dataset.js';
import { addCollateral } from './collateral.js';
import { addCorpTransfers } from './corp-transfers.js';
import { addCards, addHomeBanking, addLookups, addMicr } from './member-access.js';
import { MAX_ACCOUNTS, accountNumberOf } from './numbering.js';
import { NAME_TYPE, PERSONS_PER_ACCOUNT, PERSON_SLOT, jointOwnerOf, nameValues, personOf } from './people.js';
import { Random, addDays, laterDate } from './random.js';
import { addShares } from './shares.js';

export {
  DATASET_AS_OF,
  SEEDED_RECORD_NAMES,
  UNSEEDED_RECORD_NAMES,
  type AccountBundle,
  type SeedRecord,
  type SeededRecordName,
} from './dataset.js';
export {
  CARD_BINS,
  MAX_ACCOUNTS,
  NUMBERINGS,
  accountNumberOf,
  collateralNumberOf,
  luhnCheckDigit,
} from './numbering.js';
export { personOf, type Address, type Person } from './people.js';
export { CARD_STATUS, LOOKUP_KINDS } from './member-access.js';
export { LONG_HISTORY_RECORDS } from './collateral.js';

const BUSINESS_TRADES = [
  'PLUMBING',
  'LANDSCAPING',
  'DENTAL',
  'AUTO REPAIR',
  'BAKERY',
  'CONSULTING',
  'ELECTRIC',
] as const;
const ACCOUNT_TYPE = { individual: 0, joint: 1, business: 20 } as const;

/**
 * Every record of account `index` (1-based) of the dataset `seed`.
 * @example generateAccount(627, 42).records.Card // the cards of account 0000000042
 */
export function generateAccount(seed: number, index: number): AccountBundle {
  if (!Number.isInteger(index) || index < 1 || index > MAX_ACCOUNTS) {
    throw new Error(`account index must be an integer from 1 to ${MAX_ACCOUNTS}, got ${index}`);
  }
  const rng = Random.derive(seed, STREAM.account, index);
  const accountNumber = accountNumberOf(index);
  const everyKind = index === 1;
  const out = new AccountRecords();
  const keys = { account_number: accountNumber };

  const primary = personOf(seed, index * PERSONS_PER_ACCOUNT + PERSON_SLOT.primary);
  const openDate = rng.dateBetween(
    laterDate('1985-01-01', addDays(primary.birthDate, 18 * 366)),
    addDays(DATASET_AS_OF, -30),
  );
  const branch = rng.int(1, 8);
  const isBusiness = everyKind || rng.chance(0.08);
  const jointOwner = jointOwnerOf(rng, index);
  const shares = chooseShareProducts(rng, everyKind).map((product, position) => ({
    product,
    id: product.id,
    openDate: position === 0 ? openDate : rng.dateBetween(openDate, DATASET_AS_OF),
  }));
  const account: AccountFacts = {
    seed,
    index,
    accountNumber,
    openDate,
    branch,
    primary,
    shares,
    everyKind,
    ...(isBusiness ? { businessName: `${primary.last} ${rng.pick(BUSINESS_TRADES)}`.toUpperCase() } : {}),
  };

  out.add(
    'Account',
    {},
    {
      AccountNumber: accountNumber,
      Type: isBusiness ? ACCOUNT_TYPE.business : jointOwner ? ACCOUNT_TYPE.joint : ACCOUNT_TYPE.individual,
      Branch: branch,
      OpenDate: openDate,
    },
  );

  // Account-level names: share_id null.
  const accountNameKeys = { ...keys, share_id: null };
  out.add('ShareName', accountNameKeys, nameValues(primary, NAME_TYPE.primary, out.nextLocator('ShareName'), openDate));
  if (jointOwner) {
    const joint = personOf(seed, jointOwner.personId);
    // A new joint owner lives with the primary owner; an existing member keeps their own address.
    const household = jointOwner.isMember ? joint : { ...joint, address: primary.address };
    const since = rng.dateBetween(openDate, DATASET_AS_OF);
    out.add('ShareName', accountNameKeys, nameValues(household, NAME_TYPE.joint, out.nextLocator('ShareName'), since));
  }

  addShares(out, rng, account);
  addCards(out, rng, account);
  addHomeBanking(out, rng, account);
  addMicr(out, rng, account);
  addLookups(out, rng, account);
  addCorpTransfers(out, rng, account);
  addCollateral(out, rng, account);

  return { index, accountNumber, records: out.records };
}
