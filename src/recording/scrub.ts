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

/**
 * What a recording keeps of a request whose member values are pseudonyms already (a replayed client's):
 * the same leaves, their values as they are. A replay matches it to the recorded requests.
 * @example recordedShape({ Credentials: {…}, AccountNumber: '6809674729' }) // { AccountNumber: '6809674729' }
 */
export const recordedShape: Scrub = (value) =>
  walkWith(value, undefined, 0, (sensitivity, leaf) => (sensitivity === 'secret' ? undefined : leaf));

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

  return (value) => walkWith(value, undefined, 0, leaf);
}

/** Walks a JSON value, each leaf given to `leaf` with its sensitivity; a leaf of a name not known is dropped. */
function walkWith(
  value: unknown,
  sensitivity: FieldSensitivity | undefined,
  depth: number,
  leaf: (sensitivity: FieldSensitivity, value: unknown) => unknown,
): unknown {
  if (depth > MAX_DEPTH) return undefined;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) {
      const scrubbed = walkWith(item, sensitivity, depth + 1, leaf);
      if (scrubbed !== undefined) out.push(scrubbed);
    }
    return out;
  }
  if (value !== null && typeof value === 'object') {
    // A secret's object (Credentials) goes whole; any other is walked, its own keys classified.
    if (sensitivity === 'secret') return undefined;
    const out: Record<string, unknown> = {};
    for (const [name, item] of Object.entries(value)) {
      const scrubbed = walkWith(item, recordingSensitivity(name), depth + 1, leaf);
      if (scrubbed !== undefined) out[name] = scrubbed;
    }
    return out;
  }
  if (sensitivity === undefined) return undefined;
  // Nulls and flags (a selection's `true`) say nothing of a member.
  if (value === null || typeof value === 'boolean') return sensitivity === 'secret' ? undefined : value;
  return leaf(sensitivity, value);
}
