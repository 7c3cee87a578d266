/**
 * The dataset's numbers: account and collateral numbers from the account index, and the scattered
 * numberings (card numbers, SSNs, MICR and lookup numbers), each a bijection of a counter, so uniqueness
 * holds across the dataset without a registry. Also how an account refers back to an earlier one.
 */
import { STREAM } from './dataset.js';
import { Random, scatter } from './random.js';

/**
 * The largest dataset whose numbers stay unique: lookup numbers (index × 4 + kind below 10^8) run out
 * first; GlobalSequence (index × 10 + n) and collateral numbers allow more.
 */
export const MAX_ACCOUNTS = 25_000_000;

/**
 * AccountNumber: the 1-based index, zero-padded to 10 digits (DESIGN: Keys and records).
 * @example accountNumberOf(42) // '0000000042'
 */
export function accountNumberOf(index: number): string {
  return String(index).padStart(10, '0');
}

/**
 * Collateral number: '7' then the account index and a per-account ordinal, 10 digits, unique.
 * @example collateralNumberOf(1, 1) // '7000000011'
 */
export function collateralNumberOf(index: number, ordinal: number): string {
  return String(7_000_000_000 + index * 10 + ordinal);
}

/**
 * An account before `index` (which must be above 1), at most `reach` back and uniform over that range,
 * so that the first accounts are not favoured. Cross-account references only look back: the referenced
 * account exists in every dataset that holds the referring one.
 */
export function earlierAccount(rng: Random, index: number, reach: number): number {
  return index - rng.int(1, Math.min(reach, index - 1));
}

// ---------------------------------------------------------------------------------------------------
// Unique numbers: a bijection of a counter, so uniqueness holds across the dataset without a registry.
// ---------------------------------------------------------------------------------------------------

/** SSN areas 001–899 except 666 (never issued), groups 01–99, serials 0001–9999. */
const SSN_AREAS = 898;

/** Each multiplier is coprime with its modulus (checked by a test), which makes `scatter` a bijection. */
export const NUMBERINGS = {
  /** The 9 digits between a card's BIN and its check digit, from index × 4 + card slot. */
  cardBody: { id: 1, modulus: 1e9, multiplier: 7_368_787 },
  /** An SSN in the valid space, from the person id. */
  ssn: { id: 2, modulus: SSN_AREAS * 99 * 9999, multiplier: 4_999_963 },
  /** An account's MICR number (10 digits before its optional prefix), from the index. */
  micr: { id: 3, modulus: 1e10, multiplier: 777_781 },
  /** A lookup number, from index × 4 + lookup kind. */
  lookup: { id: 4, modulus: 1e8, multiplier: 31_415_927 },
} as const;

/**
 * The number `value` maps to in a numbering: distinct values give distinct numbers below its modulus.
 * @example uniqueNumber(627, NUMBERINGS.micr, 42) // the MICR body of account 42
 */
export function uniqueNumber(
  seed: number,
  numbering: (typeof NUMBERINGS)[keyof typeof NUMBERINGS],
  value: number,
): number {
  if (value >= numbering.modulus) throw new Error(`numbering ${numbering.id} exhausted at ${value}`);
  const offset = Random.derive(seed, STREAM.numbering, numbering.id).int(0, numbering.modulus - 1);
  return scatter(value, numbering.modulus, numbering.multiplier, offset);
}

/** The Luhn check digit that completes `partial`. @example luhnCheckDigit('7992739871') // '3' */
export function luhnCheckDigit(partial: string): string {
  let sum = 0;
  for (let position = 0; position < partial.length; position += 1) {
    let digit = Number(partial[partial.length - 1 - position]);
    if (position % 2 === 0) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return String((10 - (sum % 10)) % 10);
}

/** Issuer prefixes of the credit union's Visa debit and Mastercard credit programs (fictional). */
export const CARD_BINS = ['431274', '431275', '525791'] as const;

/**
 * A 16-digit, Luhn-valid card number, unique per (account index, slot 0–3).
 * @example cardNumberOf(627, 1, 0) // a 16-digit number starting with one of CARD_BINS
 */
export function cardNumberOf(seed: number, index: number, slot: number): string {
  const bin = Random.derive(seed, STREAM.cardIssuer, index, slot).pick(CARD_BINS);
  const body = String(uniqueNumber(seed, NUMBERINGS.cardBody, index * 4 + slot)).padStart(9, '0');
  return `${bin}${body}${luhnCheckDigit(bin + body)}`;
}

/**
 * The 9-digit SSN of a person, unique per person id and never in area 666.
 * @example ssnOf(627, 4) // the SSN of account 1's primary owner
 */
export function ssnOf(seed: number, personId: number): string {
  const position = uniqueNumber(seed, NUMBERINGS.ssn, personId);
  const areaIndex = Math.floor(position / (99 * 9999));
  const area = areaIndex + 1 >= 666 ? areaIndex + 2 : areaIndex + 1;
  const group = (Math.floor(position / 9999) % 99) + 1;
  const serial = (position % 9999) + 1;
  return `${String(area).padStart(3, '0')}${String(group).padStart(2, '0')}${String(serial).padStart(4, '0')}`;
}
