/**
 * Deterministic pseudo-random numbers for the demo dataset. Seeding never uses Math.random: every value
 * comes from a `Random` derived from the seed and what is being generated (account index, person id, …),
 * so one account's content does not depend on how many accounts are generated or in which order.
 */

const DAY_MS = 86_400_000;

/** murmur3's 32-bit finalizer: spreads every input bit over the whole word. */
function mix32(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** mulberry32: a 32-bit state generator, fast and good enough for test data (not for secrets). */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /**
   * A generator for one purpose, keyed by integers (seed, account index, a stream number, …).
   * Integers above 2^32 are folded in by their high and low words.
   * @example const rng = Random.derive(627, STREAM.account, 42)
   */
  static derive(...parts: readonly number[]): Random {
    let h = 0x9e3779b9;
    for (const part of parts) {
      h = mix32(h ^ (part >>> 0));
      h = mix32(h ^ Math.floor(part / 2 ** 32));
    }
    return new Random(h);
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max], both inclusive. @example rng.int(1, 6) */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** true with probability `probability`. */
  chance(probability: number): boolean {
    return this.next() < probability;
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error('cannot pick from an empty list');
    return item;
  }

  /**
   * One choice by weight.
   * @example rng.weighted([[0, 20], [1, 45], [2, 25], [3, 10]]) // a card count
   */
  weighted<T>(choices: readonly (readonly [T, number])[]): T {
    const total = choices.reduce((sum, [, weight]) => sum + weight, 0);
    let point = this.next() * total;
    for (const [choice, weight] of choices) {
      point -= weight;
      if (point < 0) return choice;
    }
    const last = choices[choices.length - 1];
    if (!last) throw new Error('cannot choose from an empty list');
    return last[0];
  }

  /** A string of `length` decimal digits; the first is never 0 when `leadingNonZero`. */
  digits(length: number, leadingNonZero = false): string {
    let text = '';
    while (text.length < length) text += String(this.int(leadingNonZero && text === '' ? 1 : 0, 9));
    return text;
  }

  /** An amount with cents in [min, max]. */
  money(min: number, max: number): number {
    return this.int(Math.round(min * 100), Math.round(max * 100)) / 100;
  }

  /** A rate with three decimals in [min, max]. */
  rate(min: number, max: number): number {
    return this.int(Math.round(min * 1000), Math.round(max * 1000)) / 1000;
  }

  /** A YYYY-MM-DD date in [from, to], both YYYY-MM-DD and inclusive. */
  dateBetween(from: string, to: string): string {
    return formatDay(this.int(dayNumber(from), dayNumber(to)));
  }

  /** A time of day as HHMM (e.g. 1437), as the core stores it. */
  timeOfDay(fromHour = 0, toHour = 23): number {
    return this.int(fromHour, toHour) * 100 + this.int(0, 59);
  }
}

// Generation turns dates to day numbers and back millions of times over a range of a few decades, so both
// directions are memoized: the maps stay bounded by the number of distinct days the dataset uses.
const dayNumbers = new Map<string, number>();
const dayTexts = new Map<number, string>();

/** Days since 1970-01-01 of a YYYY-MM-DD date. */
export function dayNumber(isoDate: string): number {
  let day = dayNumbers.get(isoDate);
  if (day === undefined) {
    day = Math.floor(Date.parse(`${isoDate}T00:00:00Z`) / DAY_MS);
    dayNumbers.set(isoDate, day);
  }
  return day;
}

/** The YYYY-MM-DD date of a day number. */
export function formatDay(day: number): string {
  let text = dayTexts.get(day);
  if (text === undefined) {
    text = new Date(day * DAY_MS).toISOString().slice(0, 10);
    dayTexts.set(day, text);
  }
  return text;
}

/** A date moved by whole days. @example addDays('2024-02-28', 2) // '2024-03-01' */
export function addDays(isoDate: string, days: number): string {
  return formatDay(dayNumber(isoDate) + days);
}

/** A date moved by whole months, clamped to the month's last day. @example addMonths('2024-01-31', 1) // '2024-02-29' */
export function addMonths(isoDate: string, months: number): string {
  const year = Number(isoDate.slice(0, 4));
  const monthIndex = year * 12 + Number(isoDate.slice(5, 7)) - 1 + months;
  const targetYear = Math.floor(monthIndex / 12);
  const targetMonth = monthIndex - targetYear * 12 + 1;
  const lastDay = new Date(Date.UTC(targetYear, targetMonth, 0)).getUTCDate();
  const day = Math.min(Number(isoDate.slice(8, 10)), lastDay);
  return `${targetYear}-${String(targetMonth).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** The earlier of two YYYY-MM-DD dates. */
export function earlierDate(a: string, b: string): string {
  return a < b ? a : b;
}

/** The later of two YYYY-MM-DD dates. */
export function laterDate(a: string, b: string): string {
  return a > b ? a : b;
}

/**
 * A bijection of [0, modulus): distinct inputs give distinct, random-looking outputs. Used for numbers
 * that must be unique across the dataset (card numbers, SSNs, MICR numbers) without a global registry.
 * `multiplier` must be coprime with `modulus`; inputs times the multiplier must stay below 2^53.
 * @example scatter(42, 1e9, 7_368_787, 627)
 */
export function scatter(value: number, modulus: number, multiplier: number, offset: number): number {
  return ((((value % modulus) * multiplier + offset) % modulus) + modulus) % modulus;
}
