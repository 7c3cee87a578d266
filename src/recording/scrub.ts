/**
 * Scrubbing as a recording is written (docs/recording.md): a request's or answer's JSON walked once, each
 * leaf treated as the catalog's recording table says (catalog/recording-fields.ts). Member data becomes a
 * keyed pseudonym, secrets and names the table does not know are dropped, codes and dates are kept, amounts
 * kept or jittered. Objects and lists are walked whatever their name: only leaves carry values.
 */
import { createHmac } from 'node:crypto';
import { recordingSensitivity, type FieldSensitivity } from '../catalog/recording-fields.js';
import { pseudonyms, type PseudonymKind } from './pseudonyms.js';

export interface ScrubOptions {
  /** The recording secret the pseudonyms are keyed with. */
  readonly secret: Buffer;
  /** Amounts moved by up to ±10%, keyed on the value (the same amount moves the same way). */
  readonly jitterAmounts: boolean;
}

export type Scrub = (value: unknown) => unknown;

/** Deepest nesting walked; an answer is bounded well within it (the gateway's XML depth is 32). */
const MAX_DEPTH = 64;

/**
 * The scrubber of one recording.
 * @example scrubber({ secret, jitterAmounts: false })({ SSN: '123456789', Credentials: { … } }) // { SSN: '9…' }
 */
export function scrubber(options: ScrubOptions): Scrub {
  const names = pseudonyms(options.secret);
  const jitterKey = createHmac('sha256', options.secret).update('coregate recording amounts v1').digest();

  const amount = (value: number): number => {
    if (!options.jitterAmounts || value === 0) return value;
    const draw = createHmac('sha256', jitterKey).update(String(value)).digest().readUInt32BE(0) / 0xffffffff;
    return Math.round(value * (0.9 + draw * 0.2) * 100) / 100;
  };

  const leaf = (sensitivity: FieldSensitivity, value: unknown): unknown => {
    if (value === null || typeof value === 'boolean') return value;
    switch (sensitivity) {
      case 'secret':
        return undefined;
      case 'keep':
      case 'date':
        return typeof value === 'string' || typeof value === 'number' ? value : undefined;
      case 'amount':
        return typeof value === 'number' ? amount(value) : typeof value === 'string' ? value : undefined;
      default:
        return typeof value === 'string' ? names.of(sensitivity as PseudonymKind, value) : undefined;
    }
  };

  const walk = (value: unknown, sensitivity: FieldSensitivity | undefined, depth: number): unknown => {
    if (depth > MAX_DEPTH) return undefined;
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      for (const item of value) {
        const scrubbed = walk(item, sensitivity, depth + 1);
        if (scrubbed !== undefined) out.push(scrubbed);
      }
      return out;
    }
    if (value !== null && typeof value === 'object') {
      // A secret's object (Credentials) goes whole; any other is walked, its own keys classified.
      if (sensitivity === 'secret') return undefined;
      const out: Record<string, unknown> = {};
      for (const [name, item] of Object.entries(value)) {
        const scrubbed = walk(item, recordingSensitivity(name), depth + 1);
        if (scrubbed !== undefined) out[name] = scrubbed;
      }
      return out;
    }
    // A leaf of a name the table does not know is dropped, not kept.
    return sensitivity === undefined ? undefined : leaf(sensitivity, value);
  };

  return (value) => walk(value, undefined, 0);
}
