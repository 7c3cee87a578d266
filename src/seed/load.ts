/**
 * Loads the deterministic demo dataset into a migrated database by bulk loading: accounts are
 * generated and encoded to COPY text in chunks, by worker threads when the dataset is large, and each
 * table's lines are streamed with COPY over several connections at once. The whole load is one
 * transaction per connection, committed at the end: an interrupted seed leaves nothing behind.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import type { Secrets } from '../crypto/secrets.js';
import type { BulkSession, Database } from '../database/database.js';
import { SEEDED_PLANS, encodeChunk, type AccountRange, type EncodedChunk } from './encode.js';
import type { EncoderJob } from './encoder-worker.js';
import { MAX_ACCOUNTS } from './numbering.js';
import { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED, defaultEncoderWorkers, PARALLEL_FROM_ACCOUNTS } from './defaults.js';

export { DEFAULT_DEMO_ACCOUNTS, DEFAULT_SEED, defaultEncoderWorkers, PARALLEL_FROM_ACCOUNTS };

/** Accounts per chunk: about 7 MB of COPY text, large enough to amortize each COPY, small enough to bound memory. */
export const DEFAULT_CHUNK_SIZE = 2000;
/**
 * Connections streaming COPY at once on PostgreSQL, each owning some of the tables: two, or one per two
 * cores on a larger host (a table is written by one connection, so the largest table bounds the gain).
 */
const COPY_SESSIONS = Math.max(2, Math.min(8, Math.floor(availableParallelism() / 2)));
/** Sort memory for building an index after the load (per connection; PostgreSQL's default is 64 MB). */
const INDEX_BUILD_MEMORY = '256MB';

export interface SeedOptions {
  readonly accounts: number;
  readonly seed: number;
  readonly chunkSize?: number;
  /** Encoder worker threads; 0 encodes on the calling thread. Default: by dataset size and cores. */
  readonly workers?: number;
  /** Called after each chunk is written (it becomes visible at the end, with the others). */
  readonly onProgress?: (done: number, total: number) => void;
}

export interface SeedSummary {
  readonly seed: number;
  readonly accounts: number;
  /** Rows written per table. */
  readonly rows: Readonly<Record<string, number>>;
  readonly elapsedMs: number;
}

/**
 * Starts an encoder worker thread: the compiled module beside this one (dist/), or, when the project runs
 * as TypeScript, the source through tsx (a loader given on the parent's command line does not reach
 * worker threads, so the worker registers tsx itself).
 */
function startEncoder(workerData: Uint8Array): Worker {
  if (!import.meta.url.endsWith('.ts'))
    return new Worker(new URL('./encoder-worker.js', import.meta.url), { workerData });
  const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))})
    .then(({ register }) => { register(); return import(${JSON.stringify(new URL('./encoder-worker.ts', import.meta.url).href)}); });`;
  return new Worker(boot, { eval: true, workerData });
}

/** Encodes chunks on worker threads; results come back in the order jobs were given to each worker. */
class EncoderPool {
  private readonly workers: { worker: Worker; waiting: ((chunk: EncodedChunk | Error) => void)[] }[];
  private next = 0;

  constructor(count: number, secrets: Secrets) {
    this.workers = Array.from({ length: count }, () => {
      const worker = startEncoder(secrets.master());
      const entry = { worker, waiting: [] as ((chunk: EncodedChunk | Error) => void)[] };
      worker.on('message', (chunk: EncodedChunk) => entry.waiting.shift()?.(chunk));
      worker.on('error', (error) => entry.waiting.splice(0).forEach((settle) => settle(error)));
      return entry;
    });
  }

  encode(seed: number, range: AccountRange): Promise<EncodedChunk> {
    const entry = this.workers[this.next++ % this.workers.length];
    if (!entry) return Promise.reject(new Error('the encoder pool has no workers'));
    return new Promise((resolve, reject) => {
      entry.waiting.push((chunk) => (chunk instanceof Error ? reject(chunk) : resolve(chunk)));
      entry.worker.postMessage({ seed, range } satisfies EncoderJob);
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map(({ worker }) => worker.terminate()));
  }
}

/** The chunks in order, at most `lookahead` encoded ahead of the writer (bounded memory). */
async function* encodedChunks(
  ranges: readonly AccountRange[],
  encode: (range: AccountRange) => Promise<EncodedChunk>,
  lookahead: number,
): AsyncGenerator<EncodedChunk> {
  const pending: Promise<EncodedChunk>[] = [];
  let next = 0;
  while (next < ranges.length || pending.length > 0) {
    while (next < ranges.length && pending.length < lookahead) {
      const encoding = encode(ranges[next++] as AccountRange);
      // Awaited in order below; a failure of a later chunk must not surface as an unhandled rejection meanwhile.
      encoding.catch(() => undefined);
      pending.push(encoding);
    }
    yield await (pending.shift() as Promise<EncodedChunk>);
  }
}

/** Tables for each session, balanced by the size of their text in the first chunk (largest first). */
function assignTables(sample: EncodedChunk, sessions: number): number[][] {
  const load = Array.from({ length: sessions }, () => 0);
  const tables = Array.from({ length: sessions }, (): number[] => []);
  const bySize = SEEDED_PLANS.map((_, position) => position).sort(
    (a, b) => (sample.tables[b]?.text.length ?? 0) - (sample.tables[a]?.text.length ?? 0),
  );
  for (const position of bySize) {
    const lightest = load.indexOf(Math.min(...load));
    tables[lightest]?.push(position);
    load[lightest] = (load[lightest] ?? 0) + (sample.tables[position]?.text.length ?? 0);
  }
  return tables;
}

/** A secondary index of a seeded table, as `pg_get_indexdef` gives it. */
interface SecondaryIndex {
  readonly table: string;
  readonly name: string;
  readonly definition: string;
}

/**
 * The seeded tables' indexes other than primary keys and constraints' indexes: the load drops them and
 * builds them again once the rows are in, which costs far less than updating them row by row.
 */
async function secondaryIndexes(database: Database): Promise<SecondaryIndex[]> {
  const tables = SEEDED_PLANS.map((plan) => plan.table);
  const { rows } = await sql<SecondaryIndex>`
    select c.relname as "table", i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition
    from pg_index i join pg_class c on c.oid = i.indrelid
    where c.relname in (${sql.join(tables)}) and c.relnamespace = current_schema()::regnamespace
      and not i.indisprimary
      and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
    order by i.indexrelid`.execute(database.db);
  return rows;
}

/**
 * Empties each session's tables in its own transaction, which lets COPY write the rows frozen: visible
 * to all and marked so in the visibility map, so index-only scans work at once and no vacuum pass follows.
 * Their secondary indexes are dropped in the same transaction, to be built again by `restoreIndexes`.
 */
async function claimTables(
  sessions: readonly BulkSession[],
  tables: readonly number[][],
  indexes: readonly SecondaryIndex[],
) {
  await Promise.all(
    sessions.map(async (session, s) => {
      const names = tablesOf(tables, s);
      if (names.length === 0) return;
      await session.execute(`truncate ${names.join(', ')}`);
      const dropped = indexesOf(tables, s, indexes);
      if (dropped.length > 0) await session.execute(`drop index ${dropped.map((index) => index.name).join(', ')}`);
    }),
  );
}

/** Builds each session's dropped indexes again, before its transaction commits. */
async function restoreIndexes(
  sessions: readonly BulkSession[],
  tables: readonly number[][],
  indexes: readonly SecondaryIndex[],
) {
  await Promise.all(
    sessions.map(async (session, s) => {
      const dropped = indexesOf(tables, s, indexes);
      if (dropped.length === 0) return;
      await session.execute(`set local maintenance_work_mem = '${INDEX_BUILD_MEMORY}'`);
      for (const index of dropped) await session.execute(index.definition);
    }),
  );
}

const tablesOf = (tables: readonly number[][], session: number): string[] =>
  (tables[session] ?? []).flatMap((position) => SEEDED_PLANS[position]?.table ?? []);

/** The secondary indexes of one session's tables: dropped by `claimTables`, built again by `restoreIndexes`. */
function indexesOf(tables: readonly number[][], session: number, indexes: readonly SecondaryIndex[]): SecondaryIndex[] {
  const names = tablesOf(tables, session);
  return indexes.filter((index) => names.includes(index.table));
}

/** Writes one chunk's tables on their sessions; each session writes its chunks in order. */
function writeChunk(
  chunk: EncodedChunk,
  sessions: readonly BulkSession[],
  tables: readonly number[][],
  tails: Promise<void>[],
) {
  const parts = sessions.map((session, s) => {
    const tail = (tails[s] ?? Promise.resolve()).then(async () => {
      for (const position of tables[s] ?? []) {
        const plan = SEEDED_PLANS[position];
        const encoded = chunk.tables[position];
        if (plan && encoded && encoded.rows > 0) await session.copy(plan.table, encoded.columns, encoded.text, true);
      }
    });
    tails[s] = tail;
    return tail;
  });
  return Promise.all(parts).then(() => undefined);
}

/**
 * Seeds accounts 1..`accounts` of dataset `seed`, replacing whatever the seeded tables held.
 * @example await seedDatabase(database, secrets, { accounts: DEFAULT_DEMO_ACCOUNTS, seed: DEFAULT_SEED })
 */
export async function seedDatabase(database: Database, secrets: Secrets, options: SeedOptions): Promise<SeedSummary> {
  const { accounts, seed, chunkSize = DEFAULT_CHUNK_SIZE, onProgress } = options;
  if (!Number.isInteger(accounts) || accounts < 0 || accounts > MAX_ACCOUNTS) {
    throw new Error(`accounts must be an integer from 0 to ${MAX_ACCOUNTS}, got ${accounts}`);
  }
  if (!Number.isInteger(chunkSize) || chunkSize < 1) {
    throw new Error(`chunkSize must be a positive integer, got ${chunkSize}`);
  }
  const started = performance.now();
  const ranges: AccountRange[] = [];
  for (let first = 1; first <= accounts; first += chunkSize) {
    ranges.push({ first, last: Math.min(accounts, first + chunkSize - 1) });
  }
  const workers = options.workers ?? defaultEncoderWorkers(accounts);
  const pool = workers > 0 ? new EncoderPool(workers, secrets) : undefined;
  const encode = pool
    ? (range: AccountRange) => pool.encode(seed, range)
    : async (range: AccountRange) => {
        await new Promise(setImmediate); // let the previous chunk's COPY stream out meanwhile
        return encodeChunk(seed, range, secrets);
      };
  const rows = SEEDED_PLANS.map(() => 0);
  const indexes = await secondaryIndexes(database);
  try {
    await database.bulkLoad(COPY_SESSIONS, async (sessions) => {
      const tails: Promise<void>[] = sessions.map(() => Promise.resolve());
      let tables: number[][] | undefined;
      let written: Promise<void> = Promise.resolve();
      for await (const chunk of encodedChunks(ranges, encode, Math.max(2, workers * 2))) {
        if (!tables) {
          tables = assignTables(chunk, sessions.length);
          await claimTables(sessions, tables, indexes);
        }
        chunk.tables.forEach((encoded, position) => (rows[position] = (rows[position] ?? 0) + encoded.rows));
        // One chunk in flight while the next is encoded; both awaits rethrow a failed COPY.
        await written;
        written = writeChunk(chunk, sessions, tables, tails).then(() => onProgress?.(chunk.last, accounts));
        written.catch(() => undefined);
      }
      await written;
      if (tables) await restoreIndexes(sessions, tables, indexes);
    });
  } finally {
    await pool?.close();
  }
  // Fresh statistics, so that the planner knows the tables' sizes from the first query on.
  await sql.raw(`analyze ${SEEDED_PLANS.map((plan) => plan.table).join(', ')}`).execute(database.db);
  return {
    seed,
    accounts,
    rows: Object.fromEntries(SEEDED_PLANS.map((plan, position) => [plan.table, rows[position] ?? 0])),
    elapsedMs: Math.round(performance.now() - started),
  };
}
