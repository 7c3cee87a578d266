/**
 * Keyed pseudonyms of member data (docs/recording.md, "What is scrubbed"): an HMAC-SHA256 of the kind and
 * the value under the recording secret, spent as digits or letters in a form valid for the kind. The same
 * value gives the same pseudonym in every call and every file recorded under the secret; without the secret
 * no pseudonym can be traced back. Lookups that ignore case (short names, home-banking user names) are keyed
 * on one case, so `SMITH` and `Smith` stay one member.
 */
import { createHmac } from 'node:crypto';
import type { FieldSensitivity } from '../catalog/recording-fields.js';

/** A stream of pseudo-random digits and letters drawn from HMAC blocks of one keyed value. */
class Draws {
  private block = 0;
  private bytes = Buffer.alloc(0);
  private at = 0;

  constructor(
    private readonly key: Buffer,
    private readonly seed: string,
  ) {}

  private byte(): number {
    if (this.at === this.bytes.length) {
      this.bytes = createHmac('sha256', this.key).update(`${this.block}\u0000${this.seed}`).digest();
      this.block += 1;
      this.at = 0;
    }
    return this.bytes[this.at++]!;
  }

  /** Uniform below `n` (n ≤ 256), by rejection. */
  below(n: number): number {
    const limit = 256 - (256 % n);
    for (;;) {
      const b = this.byte();
      if (b < limit) return b % n;
    }
  }

  digits(count: number): string {
    let out = '';
    for (let i = 0; i < count; i += 1) out += String(this.below(10));
    return out;
  }
}

const CONSONANTS = 'bcdfghjklmnprstvwz';
const VOWELS = 'aeiou';
const STREET_TYPES = ['St', 'Ave', 'Rd', 'Ln', 'Dr', 'Ct', 'Way', 'Pl'];

/** A pronounceable word of `length` letters. */
function word(draws: Draws, length: number): string {
  let out = '';
  for (let i = 0; i < length; i += 1) {
    const set = i % 2 === 0 ? CONSONANTS : VOWELS;
    out += set[draws.below(set.length)];
  }
  return out;
}

/** `word` in the letter case of `like`: all capitals, all small, or capitalised. */
function inCaseOf(like: string, text: string): string {
  if (like === like.toUpperCase() && like !== like.toLowerCase()) return text.toUpperCase();
  if (like === like.toLowerCase()) return text;
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Each digit replaced by a drawn digit and each letter by a drawn letter (in its case); the rest kept. */
function inPlace(draws: Draws, value: string): string {
  let out = '';
  for (const ch of value) {
    if (ch >= '0' && ch <= '9') out += String(draws.below(10));
    else if (/[A-Za-z]/.test(ch)) {
      const letter = String.fromCharCode(97 + draws.below(26));
      out += ch === ch.toUpperCase() ? letter.toUpperCase() : letter;
    } else out += ch;
  }
  return out;
}

/** The Luhn check digit completing `body`. */
function luhnDigit(body: string): string {
  let sum = 0;
  for (let i = 0; i < body.length; i += 1) {
    let digit = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
    sum += digit;
  }
  return String((10 - (sum % 10)) % 10);
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** A date of the same year, on a drawn day. */
function sameYear(draws: Draws, value: string): string {
  const match = /^(\d{4})-\d{2}-\d{2}/.exec(value);
  if (!match) return inPlace(draws, value);
  const year = Number(match[1]);
  const month = draws.below(12) + 1;
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return `${match[1]}-${pad2(month)}-${pad2(draws.below(days) + 1)}${value.slice(10)}`;
}

/** Names each as one word of letters, clipped to the value's length (at least 3 letters). */
function nameLike(draws: Draws, value: string): string {
  const words = value.trim().split(/\s+/);
  return inCaseOf(value, words.map((w) => word(draws, Math.max(3, Math.min(w.length, 12)))).join(' ')).slice(
    0,
    Math.max(value.length, 3),
  );
}

export type PseudonymKind = Exclude<FieldSensitivity, 'keep' | 'amount' | 'date' | 'secret'>;

/**
 * Writes pseudonyms under one recording secret.
 * @example pseudonyms(secret).of('ssn', '123456789') // '9' and eight digits, the same each time
 */
export function pseudonyms(secret: Buffer): { of(kind: PseudonymKind, value: string): string } {
  const key = createHmac('sha256', secret).update('coregate recording pseudonyms v1').digest();
  const cache = new Map<string, string>();
  const make = (kind: PseudonymKind, value: string): string => {
    const normalised = kind === 'name' || kind === 'userName' || kind === 'email' ? value.toUpperCase() : value;
    const draws = new Draws(key, `${kind}\u0000${normalised}`);
    switch (kind) {
      case 'ssn':
        // Area numbers 900–999 are never issued.
        return `9${draws.digits(8)}`;
      case 'pan': {
        const length = Math.max(value.length, 13);
        const body = `9${draws.digits(length - 2)}`;
        return `${body}${luhnDigit(body)}`;
      }
      case 'account':
        return draws.digits(10);
      case 'micr':
      case 'draft':
      case 'phone':
      case 'identifier':
        return inPlace(draws, value);
      case 'name':
        return nameLike(draws, value);
      case 'userName':
        return inCaseOf(value, `${word(draws, 6)}${draws.digits(4)}`).slice(0, Math.max(value.length, 10));
      case 'email':
        return `${word(draws, 8)}@example.com`;
      case 'street':
        return `${Number(draws.digits(4)) + 1} ${inCaseOf('Ab', word(draws, 7))} ${STREET_TYPES[draws.below(STREET_TYPES.length)]}`.slice(
          0,
          Math.max(value.length, 12),
        );
      case 'birthDate':
        return sameYear(draws, value);
      case 'text':
        return inPlace(draws, value);
    }
  };
  return {
    of(kind, value) {
      if (value === '') return value;
      const cacheKey = `${kind}\u0000${value}`;
      let pseudonym = cache.get(cacheKey);
      if (pseudonym === undefined) {
        pseudonym = make(kind, value);
        if (cache.size >= 100_000) cache.clear();
        cache.set(cacheKey, pseudonym);
      }
      return pseudonym;
    },
  };
}
