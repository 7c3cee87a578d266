/**
 * The frame of the demo dataset: its fixed "today", the record types it holds (parents before children),
 * its independent random streams, and the collection one account's records are produced into.
 */
import { SHARE_RECORD_NAMES } from '../catalog/index.js';
import type { Row, WireRecord } from '../store/records.js';

/** "Today" for the dataset: fixed, so generation never depends on the clock. */
export const DATASET_AS_OF = '2026-06-30';

/**
 * Record types the seed writes, parents before children. Account-level names (ShareName rows without a
 * share) come with the account, before its shares.
 * @example SEEDED_RECORD_NAMES[0] // 'Account'
 */
export const SEEDED_RECORD_NAMES = [
  'Account',
  'ShareName',
  ...SHARE_RECORD_NAMES.filter((name) => name !== 'ShareName'),
  'Card',
  'HomeBankingUser',
  'Micr',
  'Lookup',
  'CorpTransfer',
  'Collateral',
  'CollateralCollHold',
  'CollateralDocument',
  'CollateralDocumentTracking',
  'CollateralFmHistory',
  'CollateralTracking',
] as const;

/** A record type the seed writes. */
export type SeededRecordName = (typeof SEEDED_RECORD_NAMES)[number];

/** Catalog record types the seed leaves empty on purpose, with the reason. */
export const UNSEEDED_RECORD_NAMES: Readonly<Record<string, string>> = {
  AccountFmHistory: 'written by share updates, one row per changed field',
};

/** One record to store: its parent key columns and its wire field values (the input of `toRow`). */
export interface SeedRecord {
  readonly keys: Row;
  readonly values: WireRecord;
}

/** Every record of one account, by record type. */
export interface AccountBundle {
  readonly index: number;
  readonly accountNumber: string;
  readonly records: Readonly<Record<SeededRecordName, readonly SeedRecord[]>>;
}

/**
 * Independent random streams, always the second part of `Random.derive(seed, stream, …)`: a new draw in
 * one never shifts the values of another, and two streams never share a generator.
 */
export const STREAM = { account: 1, person: 2, reissue: 3, numbering: 4, cardIssuer: 5 } as const;

/**
 * An account's records as they are produced, with per-scope locator counters.
 * @example out.add('Card', { account_number: '0000000001' }, { Locator: out.nextLocator('Card'), … })
 */
export class AccountRecords {
  readonly records = Object.fromEntries(SEEDED_RECORD_NAMES.map((name) => [name, []])) as unknown as Record<
    SeededRecordName,
    SeedRecord[]
  >;
  private readonly counters = new Map<string, number>();

  /** 1, 2, 3, … per scope: a record type within the account, or within one collateral. */
  nextLocator(scope: string): number {
    const next = (this.counters.get(scope) ?? 0) + 1;
    this.counters.set(scope, next);
    return next;
  }

  add(name: SeededRecordName, keys: Row, values: WireRecord): void {
    this.records[name].push({ keys, values });
  }
}

/**
 * A repeating field's entries: `[{EntryId: 1, <field>: value}, …]`.
 * @example entries('Memo', ['RENT']) // [{ EntryId: 1, Memo: 'RENT' }]
 */
export function entries(field: string, values: readonly unknown[]): { EntryId: number; [field: string]: unknown }[] {
  return values.map((value, position) => ({ EntryId: position + 1, [field]: value }));
}
