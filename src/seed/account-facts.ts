/**
 * What every record generator of an account reads: the account's facts (number, opening date, branch,
 * primary owner, business name) and its shares, each an instance of one of the credit union's share
 * products. `generateAccount` draws the facts first; the records follow from them.
 */
import type { Person } from './people.js';
import type { Random } from './random.js';

/** A share product of the credit union: its share id and type, and the ranges its shares are drawn from. */
export interface ShareProduct {
  readonly id: string;
  readonly type: number;
  readonly kind: 'savings' | 'checking' | 'certificate';
  readonly descriptions: readonly string[];
  readonly balance: readonly [number, number];
  readonly divRate: readonly [number, number];
  /** A checking share's MICR draft number: which share a check drawn on the account's MICR number hits. */
  readonly draft?: string;
}

/** The share products; an account has a primary savings share and some of the others. */
export const SHARE_PRODUCTS = {
  primarySavings: {
    id: '0000',
    type: 0,
    kind: 'savings',
    descriptions: ['PRIMARY SAVINGS'],
    balance: [5, 25_000],
    divRate: [0.05, 0.25],
  },
  clubSavings: {
    id: '0001',
    type: 1,
    kind: 'savings',
    descriptions: ['HOLIDAY CLUB', 'VACATION CLUB', 'EMERGENCY SAVINGS'],
    balance: [0, 3_000],
    divRate: [0.1, 0.5],
  },
  checking: {
    id: '0010',
    type: 10,
    kind: 'checking',
    descriptions: ['SHARE DRAFT CHECKING', 'FREE CHECKING'],
    balance: [0, 8_000],
    divRate: [0, 0.05],
    draft: '1',
  },
  premiumChecking: {
    id: '0011',
    type: 11,
    kind: 'checking',
    descriptions: ['PREMIUM CHECKING'],
    balance: [500, 20_000],
    divRate: [0.1, 0.4],
    draft: '2',
  },
  certificate: {
    id: '0050',
    type: 50,
    kind: 'certificate',
    descriptions: [],
    balance: [500, 100_000],
    divRate: [3, 5],
  },
} as const satisfies Record<string, ShareProduct>;

const MAX_SHARES = 4;

/** A loan id used as the target of loan payments and collateral documents (loans are not catalog records). */
export const LOAN_ID = '0101';

/** One share of an account. */
export interface ShareFacts {
  readonly product: ShareProduct;
  readonly id: string;
  readonly openDate: string;
}

/** The facts of one account, drawn before any of its records. */
export interface AccountFacts {
  readonly seed: number;
  readonly index: number;
  readonly accountNumber: string;
  readonly openDate: string;
  readonly branch: number;
  readonly primary: Person;
  readonly shares: readonly ShareFacts[];
  readonly businessName?: string;
  /** Account 1 carries every record kind, so that any dataset, however small, has a target for each operation. */
  readonly everyKind: boolean;
}

/**
 * The share products of a new account, primary savings first; every product when `everyKind`.
 * @example chooseShareProducts(rng, false)[0] === SHARE_PRODUCTS.primarySavings // true
 */
export function chooseShareProducts(rng: Random, everyKind: boolean): ShareProduct[] {
  const products: ShareProduct[] = [SHARE_PRODUCTS.primarySavings];
  if (everyKind || rng.chance(0.6)) {
    products.push(SHARE_PRODUCTS.checking);
    if (rng.chance(0.12)) products.push(SHARE_PRODUCTS.premiumChecking);
  }
  if (everyKind || rng.chance(0.3)) products.push(SHARE_PRODUCTS.clubSavings);
  if (everyKind || rng.chance(0.2)) products.push(SHARE_PRODUCTS.certificate);
  return products.slice(0, MAX_SHARES);
}

/** Whether a share is a checking share (one with a MICR draft number). */
export const isChecking = (share: ShareFacts) => share.product.kind === 'checking';

/** Whether a share is the account's primary savings share (`0000`). */
export const isPrimarySavings = (share: ShareFacts) => share.id === SHARE_PRODUCTS.primarySavings.id;
