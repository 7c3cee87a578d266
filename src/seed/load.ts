/**
 * Loads the deterministic demo dataset into a migrated database: accounts are generated in chunks and
 * each chunk is written in one transaction, so memory stays bounded however many accounts are seeded.
 */
import { recordDef } from '../catalog/index.js';
import type { Db } from '../store/database.js';
import { insertRows, toRow, type Row } from '../store/records.js';
import type { Secrets } from '../security/secrets.js';
import { MAX_ACCOUNTS, SEEDED_RECORD_NAMES, generateAccount } from './generate.js';

/** The seed of the demo dataset (the gateway's path segment, 627). */
export const DEFAULT_SEED = 627;
/** How many accounts the first run of `npm start` seeds. */
export const DEFAULT_DEMO_ACCOUNTS = 1000;
/** Accounts per transaction: large enough to amortize round trips, small enough to bound memory. */
export const DEFAULT_CHUNK_SIZE = 500;

export interface SeedOptions {
  readonly accounts: number;
  readonly seed: number;
  readonly chunkSize?: number;
  /** Called after each committed chunk. */
  readonly onProgress?: (done: number, total: number) => void;
}

export interface SeedSummary {
  readonly seed: number;
  readonly accounts: number;
  /** Rows written per table. */
  readonly rows: Readonly<Record<string, number>>;
  readonly elapsedMs: number;
}

const SEEDED_RECORDS = SEEDED_RECORD_NAMES.map((name) => ({ name, def: recordDef(name) }));

/** Accounts generated between two yields to the event loop while a chunk is built. */
const ACCOUNTS_PER_YIELD = 50;

/**
 * The table rows of accounts [first, last], protected fields already hashed and encrypted. Yields to
 * the event loop now and then, so that the previous chunk's statements keep flowing to the database
 * while this one is built.
 */
async function chunkRows(seed: number, first: number, last: number, secrets: Secrets): Promise<Row[][]> {
  const rowsByRecord = SEEDED_RECORDS.map((): Row[] => []);
  for (let index = first; index <= last; index += 1) {
    if ((index - first) % ACCOUNTS_PER_YIELD === ACCOUNTS_PER_YIELD - 1) await new Promise(setImmediate);
    const { records } = generateAccount(seed, index);
    SEEDED_RECORDS.forEach(({ name, def }, position) => {
      const rows = rowsByRecord[position];
      for (const { keys, values } of records[name]) rows?.push(toRow(def, values, keys, secrets));
    });
  }
  return rowsByRecord;
}

/** Writes one chunk in one transaction; returns the rows written per table. */
async function writeChunk(db: Db, rowsByRecord: readonly Row[][]): Promise<Map<string, number>> {
  const written = new Map<string, number>();
  await db.transaction().execute(async (trx) => {
    for (const [position, { def }] of SEEDED_RECORDS.entries()) {
      const rows = rowsByRecord[position] ?? [];
      if (rows.length === 0) continue;
      await insertRows(trx, def, rows);
      written.set(def.table, rows.length);
    }
  });
  return written;
}

/**
 * Seeds accounts 1..`accounts` of dataset `seed`. Expects migrated, empty tables. Each chunk commits
 * as a whole, so an interrupted run leaves whole accounts only; the next chunk is generated while the
 * previous one is being written.
 * @example await seedDatabase(db, secrets, { accounts: DEFAULT_DEMO_ACCOUNTS, seed: DEFAULT_SEED })
 */
export async function seedDatabase(db: Db, secrets: Secrets, options: SeedOptions): Promise<SeedSummary> {
  const { accounts, seed, chunkSize = DEFAULT_CHUNK_SIZE, onProgress } = options;
  if (!Number.isInteger(accounts) || accounts < 0 || accounts > MAX_ACCOUNTS) {
    throw new Error(`accounts must be an integer from 0 to ${MAX_ACCOUNTS}, got ${accounts}`);
  }
  if (!Number.isInteger(chunkSize) || chunkSize < 1) {
    throw new Error(`chunkSize must be a positive integer, got ${chunkSize}`);
  }
  const started = performance.now();
  const rowCounts: Record<string, number> = Object.fromEntries(SEEDED_RECORDS.map(({ def }) => [def.table, 0]));

  let writing: Promise<void> = Promise.resolve();
  for (let first = 1; first <= accounts; first += chunkSize) {
    const last = Math.min(accounts, first + chunkSize - 1);
    const rowsByRecord = await chunkRows(seed, first, last, secrets);
    await writing;
    writing = writeChunk(db, rowsByRecord).then((written) => {
      for (const [table, count] of written) rowCounts[table] = (rowCounts[table] ?? 0) + count;
      onProgress?.(last, accounts);
    });
    // Handled here and rethrown by the next await: a failed write must not surface as an unhandled rejection.
    writing.catch(() => undefined);
  }
  await writing;
  return { seed, accounts, rows: rowCounts, elapsedMs: Math.round(performance.now() - started) };
}
