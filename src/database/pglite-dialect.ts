/**
 * A Kysely dialect over an embedded PGlite database. PGlite is a single connection, so the driver hands
 * it out to one user at a time: a transaction holds it until commit or rollback, and everything else waits.
 */
import type { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import {
  bindMessage,
  closeMessage,
  describeMessage,
  executeMessage,
  parseMessage,
  readReply,
  syncMessage,
  type Parsers,
  type WireReply,
} from './pglite-wire.js';
import { traceQuery } from '../telemetry/tracing.js';

/**
 * Query texts kept as named prepared statements, the least recently used closed to make room for a new one.
 * Each one's plan stays in the WebAssembly heap, which never shrinks: a bench run with field selections and
 * search queries of many shapes peaked 35 MB lower with 200 than with 2,000 (docs/performance.md). Closing
 * rather than refusing new ones keeps the hot statements prepared after a first start has run its
 * migrations and seeding, a few hundred texts each run once.
 */
const MAX_PREPARED = 200;

/**
 * The longest the connection passes from one user to the next without letting the event loop turn. PGlite
 * answers inside the process, so queued users would otherwise take it one after the other in a single
 * turn, and Node.js accepts one new connection a turn: under load a new client waited seconds for its first
 * answer while the connected ones were served (docs/performance.md).
 */
const MAX_TURN_MS = 2;

/** How the one connection is used now, for the metrics: held (0 or 1), callers waiting for it, queries running. */
export interface PGliteUsage {
  busy: number;
  waiting: number;
  queriesInFlight: number;
}

interface Prepared {
  readonly name: string;
  /** The parameter types PostgreSQL inferred, which choose each value's serializer. */
  readonly paramTypes: readonly number[];
}

/**
 * A connection that runs each query text as a named prepared statement, parsed and planned once: PGlite's
 * own `query` parses and plans every call, which for the collateral tree's 14 KB of SQL costs three times
 * its execution. One call into the backend per run (bind, describe, execute, sync), its reply read by
 * pglite-wire.ts from the raw bytes.
 */
class PGliteConnection implements DatabaseConnection {
  /** Prepared statements by text, the least recently used first. */
  private readonly prepared = new Map<string, Prepared>();
  private preparedCount = 0;
  /** Close messages of the statements let go, sent with the next call. */
  private closing: Uint8Array[] = [];
  /**
   * A transaction's `begin`, not sent yet: it goes into the backend in the same call as the transaction's
   * first statement (before it, as its own unnamed statement, with no Sync between), one call fewer per
   * transaction. A statement that fails after it leaves the transaction failed, and Kysely rolls it back.
   */
  private pendingBegin: Uint8Array | undefined;

  constructor(
    private readonly pglite: PGlite,
    private readonly usage: PGliteUsage,
  ) {}

  /** Starts a transaction with the next statement. */
  begin(text: string): void {
    this.pendingBegin = Buffer.concat([parseMessage('', text), bindMessage('', []), executeMessage()]);
  }

  /**
   * One call into the backend: the messages, sent together, then its reply. Without `syncToFs`: the filesystems the store
   * opens PGlite on (a directory, or memory) write through, and their sync does nothing but take a lock.
   */
  private async call(...messages: Uint8Array[]): Promise<WireReply> {
    const chunks: Buffer[] = [];
    await this.pglite.execProtocolRawStream(Buffer.concat(messages), {
      syncToFs: false,
      // A chunk is a view of the backend's memory, reused once the callback returns.
      onRawData: (chunk) => void chunks.push(Buffer.from(chunk)),
    });
    const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    return readReply(bytes, this.pglite.parsers as Parsers);
  }

  /** What goes in ahead of the next statement, now sent: the statements let go, then the pending `begin`. */
  private takePending(): Uint8Array[] {
    const pending = this.pendingBegin ? [...this.closing, this.pendingBegin] : this.closing;
    this.closing = [];
    this.pendingBegin = undefined;
    return pending;
  }

  /** The prepared statement of a text, prepared now if it is not kept. */
  private async statement(text: string): Promise<Prepared> {
    const kept = this.prepared.get(text);
    if (!kept) return this.prepare(text);
    this.prepared.delete(text);
    this.prepared.set(text, kept);
    return kept;
  }

  private async prepare(text: string): Promise<Prepared> {
    if (this.prepared.size >= MAX_PREPARED) {
      const [leastUsed, { name }] = this.prepared.entries().next().value!;
      this.prepared.delete(leastUsed);
      this.closing.push(closeMessage(name));
    }
    this.preparedCount += 1;
    const name = `s${this.preparedCount}`;
    const { paramTypes } = await this.call(
      ...this.takePending(),
      parseMessage(name, text),
      describeMessage('S', name),
      syncMessage(),
    );
    const prepared = { name, paramTypes };
    this.prepared.set(text, prepared);
    return prepared;
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    this.usage.queriesInFlight += 1;
    try {
      // A child span of the request in flight, named by the statement (docs/tracing.md; off, a flag read).
      return await traceQuery('pglite', compiledQuery.sql, () => this.run<R>(compiledQuery));
    } finally {
      this.usage.queriesInFlight -= 1;
    }
  }

  private async run<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    const { sql: text, parameters } = compiledQuery;
    const prepared = await this.statement(text);
    const serializers = this.pglite.serializers;
    const values = parameters.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = serializers[prepared.paramTypes[i]!];
      return serializer ? serializer(value) : String(value);
    });
    const { results } = await this.call(
      ...this.takePending(),
      bindMessage(prepared.name, values),
      describeMessage('P'),
      executeMessage(),
      syncMessage(),
    );
    // The statement's result is the last (a `begin` sent with it has its own before it).
    const result = results.at(-1);
    return { rows: (result?.rows ?? []) as R[], numAffectedRows: affected(result?.affectedRows) };
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported on the embedded database');
  }
}

const affected = (rows: number | undefined) => (rows === undefined ? undefined : BigInt(rows));

class PGliteDriver implements Driver {
  private readonly connection: PGliteConnection;
  private queue: Promise<void> = Promise.resolve();
  private release: (() => void) | undefined;
  private turnStarted = performance.now();

  constructor(
    private readonly pglite: PGlite,
    private readonly usage: PGliteUsage,
  ) {
    this.connection = new PGliteConnection(pglite, usage);
  }

  async init(): Promise<void> {
    await this.pglite.waitReady;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((resolve) => (release = resolve));
    this.usage.waiting += 1;
    try {
      await previous;
      if (performance.now() - this.turnStarted > MAX_TURN_MS) {
        await new Promise(setImmediate);
        this.turnStarted = performance.now();
      }
    } finally {
      this.usage.waiting -= 1;
    }
    this.usage.busy = 1;
    this.release = release;
    return this.connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const isolation = settings.isolationLevel ? ` isolation level ${settings.isolationLevel}` : '';
    (connection as PGliteConnection).begin(`begin${isolation}`);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(): Promise<void> {
    const release = this.release;
    this.release = undefined;
    this.usage.busy = 0;
    release?.();
  }

  async destroy(): Promise<void> {
    await this.queue;
    await this.pglite.close();
  }
}

/** @example new Kysely({ dialect: new PGliteDialect(await PGlite.create()) }) */
export class PGliteDialect implements Dialect {
  readonly usage: PGliteUsage = { busy: 0, waiting: 0, queriesInFlight: 0 };

  constructor(private readonly pglite: PGlite) {}

  createAdapter() {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new PGliteDriver(this.pglite, this.usage);
  }

  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }

  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}
