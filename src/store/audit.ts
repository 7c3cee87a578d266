/**
 * The audit trail: who called which operation on which account or collateral, when, and how it ended,
 * denied attempts included.
 *
 * Durability: a write's event is inserted in the write's own transaction (`insertInTransaction`), so an
 * acknowledged update always has its event. Every other event (reads, refusals, failed writes) is
 * buffered for `flushMs` and written in batches off the request path: a crash loses at most that window.
 * A batch the database cannot take now (it is unreachable) stays buffered and is retried, up to
 * `bufferMax` events; a batch it refuses for its content is written row by row, so one bad event never
 * costs the others theirs. Values are made storable first (no NUL, no unpaired surrogate, column widths).
 */
import { CompiledQuery, sql, type ExpressionBuilder } from 'kysely';
import { isConnectionFailure, runStatement, type Db } from '../database/database.js';
import { AUDIT_ACCOUNTS_SQL } from '../database/schema.js';
import { fixedTables, type FixedTables } from '../database/tables.js';
import { isoTime, likeLiteral } from './sql-text.js';

export interface AuditEvent {
  readonly requestId: string;
  readonly tokenName: string | null;
  readonly userNumber: number | null;
  readonly memberAccount: string | null;
  readonly operation: string;
  /** Accounts touched: the request's AccountNumber, or the accounts a lookup returned (at most 20). */
  readonly accountNumbers: readonly string[];
  readonly collateralNumber: string | null;
  readonly status: number;
  readonly code: string | null;
  /**
   * Gateway mode: how long the core took, and how the call ended there: `ok` or a problem code, with the fault
   * rule that made it of a core's fault (`RECORD_NOT_FOUND by default:record-not-found`).
   */
  readonly coreLatencyMs: number | null;
  readonly coreOutcome: string | null;
  /** What an administrative call acted on (`token:ci`, `user:25`); none for the API's operations. */
  readonly target?: string | null;
  /** The trace id of the call's span (32 hex digits) when spans are exported (docs/tracing.md). */
  readonly traceId?: string | null;
}

export interface AuditRow extends Omit<AuditEvent, 'accountNumbers' | 'target'> {
  readonly at: string;
  readonly accountNumbers: string | null;
}

/**
 * Where an event stands in the trail's order, time then id: a page starts after one. `at` is its time to the
 * microsecond (`2026-11-26T10:00:00.123456Z`), as the database keeps it.
 */
export interface AuditPosition {
  readonly at: string;
  readonly id: number;
}

/** An event as read back by the admin API: its position in the trail and what it acted on too. */
export interface AuditRecord extends AuditRow {
  /** Increases with every event written. */
  readonly id: number;
  /** Its time to the microsecond: with `id`, the keyset of a page (`AuditPosition`). */
  readonly positionAt: string;
  readonly target: string | null;
  readonly traceId: string | null;
}

/** The position of an event read back, to start the next page after it. */
export const positionOf = (record: AuditRecord): AuditPosition => ({ at: record.positionAt, id: record.id });

/** An event as the admin API answers it and a retired partition's export keeps it: its accounts as a list. */
export function auditEventOf(record: AuditRecord) {
  const { id: _id, positionAt: _positionAt, accountNumbers, ...event } = record;
  return { ...event, accountNumbers: accountNumbers ? accountNumbers.split(',') : [] };
}

/** Which events to read; every criterion given must hold. */
export interface AuditFilter {
  /** At or after this time. */
  readonly from?: Date;
  /** Before this time. */
  readonly to?: Date;
  /** An operation's audit name (`findBySSN`, `admin:token.create`), or a prefix of names ending in `*` (`admin:*`). */
  readonly operation?: string;
  /** Events that touched this account: named in the event, or its caller's member account. */
  readonly account?: string;
  /** An HTTP status, or a class of them (`4xx`). */
  readonly status?: number | `${1 | 2 | 3 | 4 | 5}xx`;
  /** The bearer token's name. */
  readonly token?: string;
  /** Newest first: a page starts before its position, not after it. */
  readonly newestFirst?: boolean;
}

export interface AuditLogOptions {
  /** False keeps no trail at all (`COREGATE_AUDIT=off`); on by default. */
  readonly enabled?: boolean;
  /** How long events wait in memory before a batch is written (the loss window on a crash). */
  readonly flushMs: number;
  /** Events held at most while the database is unreachable; the oldest are dropped beyond it. */
  readonly bufferMax: number;
  /** Told what could not be written and why: for the log. Never given event contents beyond ids. */
  readonly onError: (error: unknown, message: string) => void;
}

const BATCH = 500;
const MAX_ACCOUNTS = 20;
/** Waits before retrying a batch the database could not take: doubling up to the last. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;

/** Text PostgreSQL can store, at most `max` characters: NUL and unpaired surrogates become U+FFFD. */
function storable(value: string | null, max: number): string | null {
  if (value === null) return null;
  // Cut first: a cut can split a surrogate pair, which toWellFormed then replaces.
  return value.slice(0, max).toWellFormed().replaceAll('\u0000', '\uFFFD');
}

/** An event as the `audit_event` row it becomes, every value within its column. */
function auditRow(event: AuditEvent) {
  const accounts = event.accountNumbers.slice(0, MAX_ACCOUNTS).map((account) => storable(account, 20)!);
  return {
    request_id: storable(event.requestId, 64)!,
    token_name: storable(event.tokenName, 160),
    user_number: Number.isSafeInteger(event.userNumber) ? event.userNumber : null,
    member_account: storable(event.memberAccount, 10),
    operation: storable(event.operation, 80)!,
    account_numbers: accounts.length > 0 ? accounts.join(',') : null,
    collateral_number: storable(event.collateralNumber, 64),
    status: event.status,
    code: storable(event.code, 40),
    core_latency_ms: Number.isSafeInteger(event.coreLatencyMs) ? event.coreLatencyMs : null,
    core_outcome: storable(event.coreOutcome, 80),
    target: storable(event.target ?? null, 80),
    trace_id: event.traceId && /^[0-9a-f]{32}$/.test(event.traceId) ? event.traceId : null,
  };
}

type AuditInsert = ReturnType<typeof auditRow>;

const AUDIT_COLUMNS = [
  'request_id',
  'token_name',
  'user_number',
  'member_account',
  'operation',
  'account_numbers',
  'collateral_number',
  'status',
  'code',
  'core_latency_ms',
  'core_outcome',
  'target',
  'trace_id',
] as const satisfies readonly (keyof AuditInsert)[];

/** The columns of an `AuditRow`, as every read of the trail selects them. */
const rowColumns = (eb: ExpressionBuilder<FixedTables, 'audit_event'>) =>
  [
    isoTime(eb.ref('at')).as('at'),
    'request_id as requestId',
    'token_name as tokenName',
    'user_number as userNumber',
    'member_account as memberAccount',
    'operation',
    'account_numbers as accountNumbers',
    'collateral_number as collateralNumber',
    'status',
    'code',
    'core_latency_ms as coreLatencyMs',
    'core_outcome as coreOutcome',
  ] as const;

/** Events that touched an account: named in the event, or its caller's member account (by the GIN index). */
const touches = (account: string) => sql<boolean>`${sql.raw(AUDIT_ACCOUNTS_SQL)} @> array[${account}]::text[]`;

/**
 * A page of `page`, read from the trail or one of its partitions. By account, in a transaction of its own
 * without parallel workers: the planner, which cannot estimate a rare account, would start two workers (tens
 * of milliseconds) to read the few events the GIN index gives. (JIT is off for every connection, database.ts.)
 */
function pageOf(
  db: Db,
  table: 'audit_event',
  filter: AuditFilter,
  after: AuditPosition | undefined,
  limit: number,
): Promise<AuditRecord[]> {
  if (filter.account === undefined) return pageQuery(db, table, filter, after, limit);
  return db.transaction().execute(async (trx) => {
    await sql`set local max_parallel_workers_per_gather = 0`.execute(trx);
    return pageQuery(trx, table, filter, after, limit);
  });
}

function pageQuery(
  db: Db,
  table: 'audit_event',
  filter: AuditFilter,
  after: AuditPosition | undefined,
  limit: number,
): Promise<AuditRecord[]> {
  const { from, to, operation, account, status, token, newestFirst } = filter;
  const direction = newestFirst ? 'desc' : 'asc';
  const statusClass = typeof status === 'string' ? Number(status[0]) * 100 : undefined;
  return (
    fixedTables(db)
      .selectFrom(table)
      .select((eb) => [
        ...rowColumns(eb),
        'id',
        sql<string>`to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('positionAt'),
        'target',
        'trace_id as traceId',
      ])
      // The position's time also prunes the partitions before it.
      .$if(after !== undefined && !newestFirst, (query) =>
        query
          .where(sql<boolean>`(at, id) > (${after!.at}::timestamptz, ${after!.id})`)
          .where('at', '>=', sql<Date>`${after!.at}::timestamptz`),
      )
      .$if(after !== undefined && newestFirst === true, (query) =>
        query
          .where(sql<boolean>`(at, id) < (${after!.at}::timestamptz, ${after!.id})`)
          .where('at', '<=', sql<Date>`${after!.at}::timestamptz`),
      )
      .$if(from !== undefined, (query) => query.where('at', '>=', sql<Date>`${from!.toISOString()}::timestamptz`))
      .$if(to !== undefined, (query) => query.where('at', '<', sql<Date>`${to!.toISOString()}::timestamptz`))
      .$if(operation !== undefined, (query) =>
        operation!.endsWith('*')
          ? query.where('operation', 'like', `${likeLiteral(operation!.slice(0, -1))}%`)
          : query.where('operation', '=', operation!),
      )
      .$if(account !== undefined, (query) => query.where(touches(account!)))
      .$if(typeof status === 'number', (query) => query.where('status', '=', status as number))
      .$if(statusClass !== undefined, (query) =>
        query.where('status', '>=', statusClass!).where('status', '<', statusClass! + 100),
      )
      .$if(token !== undefined, (query) => query.where('token_name', '=', token!))
      // In the trail's order, by its key (at, id): a time window is a range of each day's key index. By
      // account, the planner guesses a containment matches far more events than it does (it keeps no
      // statistics of a million rare accounts), and would walk every partition's key index filtering (seconds
      // at tens of millions of events). Ordered by expressions, it takes the GIN index's few matches and sorts
      // them: the time stays that of the account's events, however long the trail.
      // Qualified: a bare `at` in ORDER BY would be the answer's text column of that name, sorted by hand.
      .orderBy(
        account === undefined ? sql.ref(`${table}.at`) : sql`${sql.ref(`${table}.at`)} + interval '0 s'`,
        direction,
      )
      .orderBy(account === undefined ? sql`id` : sql`id + 0`, direction)
      .limit(limit)
      .execute()
  );
}

let insertText: string | undefined;
/** Where the events' JSON goes in the insert's text. */
const EVENTS_PARAMETER = '$1::json';

/** The insert's text, the same for every batch (its one parameter is the JSON): built by Kysely once. */
function insertTextOf(db: Db): string {
  insertText ??= fixedTables(db)
    .insertInto('audit_event')
    .columns(AUDIT_COLUMNS)
    .expression((eb) =>
      eb
        .selectFrom(sql<AuditInsert>`json_populate_recordset(null::audit_event, ${'[]'}::json)`.as('r'))
        .select(AUDIT_COLUMNS),
    )
    .compile().sql;
  if (!insertText.includes(EVENTS_PARAMETER)) throw new Error(`the audit insert has no ${EVENTS_PARAMETER}`);
  return insertText;
}

/**
 * The queries of the audit trail. Events are inserted as one JSON parameter expanded by
 * json_populate_recordset: a batch of any size is one statement with one parameter.
 */
export const auditEvents = {
  async insert(db: Db, events: readonly AuditEvent[]): Promise<void> {
    await db.executeQuery(CompiledQuery.raw(insertTextOf(db), [JSON.stringify(events.map(auditRow))]));
  },

  /**
   * Runs `prior` (a data-modifying statement) and inserts the events in one statement, `prior` as its
   * common table expression: both commit together, in one round trip instead of a transaction's four.
   */
  async insertAfter(db: Db, events: readonly AuditEvent[], prior: CompiledQuery): Promise<void> {
    const parameters = [...prior.parameters, JSON.stringify(events.map(auditRow))];
    const insert = insertTextOf(db).replace(EVENTS_PARAMETER, `$${parameters.length}::json`);
    await runStatement(db, CompiledQuery.raw(`with prior as (${prior.sql}) ${insert}`, parameters));
  },

  /**
   * A page of the events a filter selects, oldest first (by time, then id; newest first with `newestFirst`):
   * those after the position `after` in that order (none: from the first), at most `limit`. The cost of a page does not grow with how many came before it
   * (keyset paging on the trail's key, `(at, id)`).
   */
  page(db: Db, filter: AuditFilter, after: AuditPosition | undefined, limit: number): Promise<AuditRecord[]> {
    return pageOf(db, 'audit_event', filter, after, limit);
  },

  /**
   * A page as `page` reads it, from `table`: the trail, or one of its partitions (PostgreSQL), as what is
   * exported before it is retired (store/audit-retention.ts).
   */
  pageFrom(db: Db, table: string, filter: AuditFilter, after: AuditPosition | undefined, limit: number) {
    return pageOf(db, table as 'audit_event', filter, after, limit);
  },

  /** Events since a time, optionally of one account (named in the event or its member), oldest first. */
  read(db: Db, since: Date, options: { accountNumber?: string; limit?: number } = {}): Promise<AuditRow[]> {
    const { accountNumber } = options;
    return fixedTables(db)
      .selectFrom('audit_event')
      .select(rowColumns)
      .where('at', '>=', sql<Date>`${since.toISOString()}::timestamptz`)
      .$if(Boolean(accountNumber), (query) => query.where(touches(accountNumber!)))
      .orderBy('id')
      .limit(options.limit ?? 1000)
      .execute();
  },
};

export class AuditLog {
  private pending: AuditEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private retryMs = RETRY_FIRST_MS;
  private dropped = 0;

  constructor(
    private readonly db: Db,
    private readonly options: AuditLogOptions,
  ) {}

  /** Buffers an event; it is written within `flushMs` (or retried while the database is away). */
  record(event: AuditEvent): void {
    if (this.options.enabled === false) return;
    this.pending.push(event);
    if (this.pending.length > this.options.bufferMax) {
      this.pending.shift();
      this.dropped += 1;
    }
    if (this.pending.length >= BATCH) void this.flush();
    else this.schedule(this.options.flushMs);
  }

  /**
   * Writes an event with a caller's change, so that both commit or neither: inside the caller's transaction
   * `trx`, or, given the change as a statement (`prior`), in one statement with it.
   */
  async insertInTransaction(trx: Db, event: AuditEvent, prior?: CompiledQuery): Promise<void> {
    if (this.options.enabled === false) {
      if (prior) await runStatement(trx, prior);
      return;
    }
    await (prior ? auditEvents.insertAfter(trx, [event], prior) : auditEvents.insert(trx, [event]));
  }

  /** Writes everything recorded so far (also called on shutdown); resolves when written or put back for a retry. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending.splice(0, BATCH);
    this.flushing = this.flushing.then(() => (batch.length > 0 ? this.write(batch) : undefined));
    if (this.pending.length > 0) this.schedule(0);
    return this.flushing;
  }

  /** Events waiting to be written. */
  get backlog(): number {
    return this.pending.length;
  }

  private schedule(ms: number): void {
    if (this.timer) return;
    this.timer = setTimeout(() => void this.flush(), ms);
    this.timer.unref();
  }

  private async write(batch: readonly AuditEvent[]): Promise<void> {
    try {
      await auditEvents.insert(this.db, batch);
      this.retryMs = RETRY_FIRST_MS;
      this.reportDropped();
    } catch (error) {
      if (isConnectionFailure(error)) {
        // Keep the batch, oldest first, and try again later; the buffer bound still holds.
        this.pending = [...batch, ...this.pending];
        const excess = this.pending.length - this.options.bufferMax;
        if (excess > 0) {
          this.pending.splice(0, excess);
          this.dropped += excess;
        }
        if (this.retryMs === RETRY_FIRST_MS)
          this.options.onError(
            error,
            `audit events kept in memory until the database is back (${this.pending.length} waiting)`,
          );
        if (this.timer) clearTimeout(this.timer);
        this.timer = undefined;
        this.schedule(this.retryMs);
        this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
        return;
      }
      await this.writeOneByOne(batch, error);
    }
  }

  /** A batch refused for its content: each event on its own, so only a bad one is lost, and it is named. */
  private async writeOneByOne(batch: readonly AuditEvent[], batchError: unknown): Promise<void> {
    for (const [index, event] of batch.entries()) {
      try {
        await auditEvents.insert(this.db, [event]);
      } catch (error) {
        if (isConnectionFailure(error)) {
          this.pending = [...batch.slice(index), ...this.pending];
          this.schedule(this.retryMs);
          return;
        }
        this.options.onError(
          error ?? batchError,
          `audit event of request ${event.requestId} (${event.operation}) could not be written`,
        );
      }
    }
  }

  private reportDropped(): void {
    if (this.dropped === 0) return;
    this.options.onError(
      undefined,
      `${this.dropped} audit events were dropped while the database was unreachable (COREGATE_AUDIT_BUFFER_MAX)`,
    );
    this.dropped = 0;
  }
}

/** Audit events since a time, optionally of one account, oldest first (`auditEvents.read`). */
export function readAudit(
  db: Db,
  since: Date,
  options: { accountNumber?: string; limit?: number } = {},
): Promise<AuditRow[]> {
  return auditEvents.read(db, since, options);
}
