/**
 * FindBy answers from memory, never older than a committed change, whichever instance made it.
 *
 * Every answer is kept with the lookup generation it was read under (schema.ts `lookupGenerationDdl`: the
 * sum of counters, one per lookup table, that statement triggers move in every transaction changing a
 * column a lookup reads) and the database's date (an active card is one not yet expired). A lookup first
 * reads the current generation: the answer kept for its key is served when it was read under that
 * generation, and read from the database (and kept) otherwise.
 *
 * The generation is read once for all the lookups waiting for it: a lookup joins the next read, never one
 * already sent, so the generation it is checked against was read after it arrived, and any change
 * committed before it arrived, on any instance or by any client of the database, has moved it. An answer
 * read from the database is kept under the generation read before it, so a change committed in between
 * makes it stale at the next check rather than kept as current. A database that cannot be reached fails
 * the lookup as the lookup itself would: nothing is answered from memory that could not be checked.
 */
import { sql } from 'kysely';
import type { Db } from './database.js';

/** The lookup generation and the database's date, as one text (null when the table has no rows). */
const GENERATION = sql<{ generation: string | null }>`select sum(generation) || '|' || current_date as generation
  from coregate_lookup_generation`;

interface Entry {
  readonly generation: string;
  readonly value: unknown;
}

interface Waiter {
  resolve(generation: string): void;
  reject(error: unknown): void;
}

/** Deeply frozen: an answer kept is shared by every request that reads it. */
function frozen<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const member of Object.values(value)) frozen(member);
    Object.freeze(value);
  }
  return value;
}

export class LookupCache {
  /** Answers by key, least recently used first (a Map keeps insertion order; a hit is moved to the end). */
  private readonly entries = new Map<string, Entry>();
  /** Lookups waiting for the next read of the generation. */
  private waiting: Waiter[] = [];
  private reading = false;

  /** Answers served from memory and read from the database, and reads of the generation, since the start. */
  readonly counts = { hits: 0, misses: 0, generationReads: 0 };

  /** @param maxEntries answers kept at most; the least recently used is dropped to make room. */
  constructor(
    private readonly db: Db,
    private readonly maxEntries: number,
  ) {}

  /**
   * The answer of the lookup `key` (its operation and inputs: matching an HMAC, never the clear value),
   * from memory when no change it depends on has been committed since it was read, else from `read`.
   * @example await cache.answer(JSON.stringify(['ssn', hmac.toString('base64'), 1000]), () => lookups.bySsn(db, hmac, 1000))
   */
  async answer<T>(key: string, read: () => Promise<T>): Promise<T> {
    const generation = await this.generation();
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      if (entry.generation === generation) {
        this.entries.set(key, entry);
        this.counts.hits += 1;
        return entry.value as T;
      }
    }
    this.counts.misses += 1;
    const value = frozen(await read());
    this.entries.delete(key);
    this.entries.set(key, { generation, value });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }

  /** Answers kept now. */
  get size(): number {
    return this.entries.size;
  }

  /** The generation and date, from a read sent after this call. */
  private generation(): Promise<string> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if (!this.reading) this.readGeneration();
    });
  }

  private readGeneration(): void {
    const batch = this.waiting;
    this.waiting = [];
    this.reading = true;
    this.counts.generationReads += 1;
    GENERATION.execute(this.db)
      .then(({ rows }) => {
        const generation = rows[0]?.generation;
        if (typeof generation !== 'string') throw new Error('coregate_lookup_generation has no rows');
        for (const waiter of batch) waiter.resolve(generation);
      })
      .catch((error: unknown) => {
        for (const waiter of batch) waiter.reject(error);
      })
      .finally(() => {
        this.reading = false;
        if (this.waiting.length > 0) this.readGeneration();
      });
  }
}

const caches = new WeakMap<Db, LookupCache>();

/** The lookup cache of a database, if one was made (for the metrics). */
export function existingLookupCache(db: Db): LookupCache | undefined {
  return caches.get(db);
}

/**
 * The lookup cache of a database, made on first use; undefined when `maxEntries` is 0 (every lookup reads
 * the database).
 */
export function lookupCache(db: Db, maxEntries: number): LookupCache | undefined {
  if (maxEntries === 0) return undefined;
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new LookupCache(db, maxEntries)));
  return cache;
}
