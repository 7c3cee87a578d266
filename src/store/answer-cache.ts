/**
 * Answers from memory, never older than a committed change, whichever instance made it: FindBy lookups and
 * reads of collateral records, each kind checked against its own generation.
 *
 * Every answer is kept with the generation it was read under (schema.ts `generationDdl`: the sum of
 * counters, one per table the answers read, that statement triggers move in every transaction changing a
 * column they read) and the database's date (an active card is one not yet expired). A read first reads
 * the current generation: the answer kept for its key is served when it was read under that generation,
 * and read from the database (and kept) otherwise.
 *
 * The generation is read once for all the reads waiting for it: a read joins the next read of the
 * generation, never one already sent, so the generation it is checked against was read after it arrived,
 * and any change committed before it arrived, on any instance or by any client of the database, has moved
 * it. An answer read from the database is kept under the generation read before it, so a change committed
 * in between makes it stale at the next check rather than kept as current. A database that cannot be
 * reached fails the read as the read itself would: nothing is answered from memory that could not be
 * checked.
 */
import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../database/database.js';
import { GENERATION_TABLES, type Generation } from '../database/schema.js';

/** A generation and the database's date, as one text (null when the watched tables have no counters). */
function generationQuery(generation: Generation): RawBuilder<{ generation: string | null }> {
  const tables = Object.keys(GENERATION_TABLES[generation]).map((table) => `'${table}'`);
  return sql<{ generation: string | null }>`select sum(generation) || '|' || current_date as generation
  from coregate_lookup_generation where table_name in (${sql.raw(tables.join(', '))})`;
}

interface Entry {
  readonly generation: string;
  readonly value: unknown;
  /** Its share of the capacity (`weigh`). */
  readonly weight: number;
}

/** How much of a cache's capacity an answer takes. */
export type Weigh = (value: unknown) => number;

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

export class AnswerCache {
  /** Answers by key, least recently used first (a Map keeps insertion order; a hit is moved to the end). */
  private readonly entries = new Map<string, Entry>();
  /** The weight of the answers kept. */
  private kept = 0;
  /** Reads waiting for the next read of the generation. */
  private waiting: Waiter[] = [];
  private reading = false;
  private readonly query: RawBuilder<{ generation: string | null }>;

  /** Answers served from memory and read from the database, and reads of the generation, since the start. */
  readonly counts = { hits: 0, misses: 0, generationReads: 0 };

  /**
   * @param generation what the answers are checked against
   * @param capacity the weight of the answers kept at most; the least recently used are dropped to make room
   * @param weigh an answer's weight (1 each: `capacity` counts answers); one heavier than `capacity` is not kept
   */
  constructor(
    private readonly db: Db,
    generation: Generation,
    private readonly capacity: number,
    private readonly weigh: Weigh = () => 1,
  ) {
    this.query = generationQuery(generation);
  }

  /**
   * The answer of `key` (the operation and its inputs: a protected input by its HMAC, never the clear
   * value), from memory when no change it depends on has been committed since it was read, else from `read`.
   * @example await cache.answer(JSON.stringify(['ssn', hmac.toString('base64'), 1000]), () => lookups.bySsn(db, hmac, 1000))
   */
  async answer<T>(key: string, read: () => Promise<T>): Promise<T> {
    const generation = await this.generation();
    const entry = this.entries.get(key);
    if (entry) {
      if (entry.generation === generation) {
        this.entries.delete(key);
        this.entries.set(key, entry);
        this.counts.hits += 1;
        return entry.value as T;
      }
      this.forget(key, entry);
    }
    this.counts.misses += 1;
    const value = frozen(await read());
    const weight = this.weigh(value);
    const replaced = this.entries.get(key);
    if (replaced) this.forget(key, replaced);
    if (weight <= this.capacity) {
      this.entries.set(key, { generation, value, weight });
      this.kept += weight;
      for (const [oldest, dropped] of this.entries) {
        if (this.kept <= this.capacity) break;
        this.forget(oldest, dropped);
      }
    }
    return value;
  }

  private forget(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.kept -= entry.weight;
  }

  /** Answers kept now. */
  get size(): number {
    return this.entries.size;
  }

  /** The weight of the answers kept now. */
  get weight(): number {
    return this.kept;
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
    this.query
      .execute(this.db)
      .then(({ rows }) => {
        const generation = rows[0]?.generation;
        if (typeof generation !== 'string')
          throw new Error('coregate_lookup_generation has no counters of these tables');
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

/** The cache of each generation, per database. */
const caches = new WeakMap<Db, Map<Generation, AnswerCache>>();

/** The cache of a generation on a database, if one was made (for the metrics). */
export function existingAnswerCache(db: Db, generation: Generation): AnswerCache | undefined {
  return caches.get(db)?.get(generation);
}

/**
 * The cache of a generation's answers on a database, made on first use; undefined when `capacity` is 0
 * (every read goes to the database).
 */
export function answerCache(db: Db, generation: Generation, capacity: number, weigh?: Weigh): AnswerCache | undefined {
  if (capacity === 0) return undefined;
  let ofDb = caches.get(db);
  if (!ofDb) caches.set(db, (ofDb = new Map()));
  let cache = ofDb.get(generation);
  if (!cache) ofDb.set(generation, (cache = new AnswerCache(db, generation, capacity, weigh)));
  return cache;
}
