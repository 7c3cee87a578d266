/**
 * The audit trail: who called which operation on which account or collateral, when, and how it ended,
 * denied attempts included. Events are buffered briefly and written in batches, off the request path.
 */
import { sql } from 'kysely';
import type { Db } from './database.js';

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
}

export interface AuditRow extends Omit<AuditEvent, 'accountNumbers'> {
  readonly at: string;
  readonly accountNumbers: string | null;
}

const FLUSH_MS = 200;
const BATCH = 500;

export class AuditLog {
  private pending: AuditEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly onError: (error: unknown) => void,
  ) {}

  record(event: AuditEvent): void {
    this.pending.push(event);
    if (this.pending.length >= BATCH) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
      this.timer.unref();
    }
  }

  /** Writes everything recorded so far (also called on shutdown). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    this.flushing = this.flushing.then(() => (batch.length > 0 ? this.write(batch) : undefined));
    return this.flushing;
  }

  private async write(batch: readonly AuditEvent[]): Promise<void> {
    const rows = batch.map((e) => ({
      request_id: e.requestId,
      token_name: e.tokenName,
      user_number: e.userNumber,
      member_account: e.memberAccount,
      operation: e.operation,
      account_numbers: e.accountNumbers.length > 0 ? e.accountNumbers.slice(0, 20).join(',') : null,
      collateral_number: e.collateralNumber,
      status: e.status,
      code: e.code,
    }));
    try {
      await sql`insert into audit_event (request_id, token_name, user_number, member_account, operation,
          account_numbers, collateral_number, status, code)
        select request_id, token_name, user_number, member_account, operation, account_numbers, collateral_number,
          status, code
        from json_populate_recordset(null::audit_event, ${JSON.stringify(rows)}::json)`.execute(this.db);
    } catch (error) {
      this.onError(error);
    }
  }
}

/** Audit events since a time, optionally of one account, oldest first. */
export async function readAudit(
  db: Db,
  since: Date,
  options: { accountNumber?: string; limit?: number } = {},
): Promise<AuditRow[]> {
  const account = options.accountNumber
    ? sql`and (account_numbers like ${`%${options.accountNumber}%`} or member_account = ${options.accountNumber})`
    : sql``;
  const result = await sql<AuditRow>`select to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at,
      request_id as "requestId", token_name as "tokenName", user_number as "userNumber",
      member_account as "memberAccount", operation, account_numbers as "accountNumbers",
      collateral_number as "collateralNumber", status, code
    from audit_event where at >= ${since.toISOString()}::timestamptz ${account}
    order by id limit ${options.limit ?? 1000}`.execute(db);
  return result.rows;
}
