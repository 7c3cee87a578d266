/**
 * Turns ranges of generated accounts into COPY text, one string per seeded table. Shared by the seeding
 * thread (small datasets) and the encoder worker threads (large ones), so both write identical data.
 */
import { recordDef } from '../catalog/index.js';
import type { Secrets } from '../crypto/secrets.js';
import { copyPlan, type CopyRecord, type CopyText } from '../store/bulk-load.js';
import { SEEDED_RECORD_NAMES } from './dataset.js';
import { generateAccount } from './generate.js';

/** The COPY plans of the seeded record types, in `SEEDED_RECORD_NAMES` order. */
export const SEEDED_PLANS = SEEDED_RECORD_NAMES.map((name) => copyPlan(recordDef(name)));

/** Accounts [first, last] of one dataset. */
export interface AccountRange {
  readonly first: number;
  readonly last: number;
}

/** A range of accounts as COPY text per seeded table (`SEEDED_PLANS` order). */
export interface EncodedChunk extends AccountRange {
  readonly tables: readonly CopyText[];
}

/** @example encodeChunk(627, { first: 1, last: 2000 }, secrets).tables[0] // the account table's lines */
export function encodeChunk(seed: number, { first, last }: AccountRange, secrets: Secrets): EncodedChunk {
  const batches = SEEDED_PLANS.map((): CopyRecord[] => []);
  for (let index = first; index <= last; index += 1) {
    const { records } = generateAccount(seed, index);
    SEEDED_RECORD_NAMES.forEach((name, position) => batches[position]?.push(...records[name]));
  }
  return { first, last, tables: SEEDED_PLANS.map((plan, position) => plan.encode(batches[position] ?? [], secrets)) };
}
