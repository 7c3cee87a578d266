/**
 * What the admin API does, and what `coregate token|user|audit|import` do on a data directory no server
 * holds: one code path, so the answer is the same whichever way a command went (docs/decisions.md,
 * "Administering a running coregate"). Each function checks its input as the API's schema would (the CLI
 * calls them without one), refuses with a coded `Problem` and answers in the shapes of contract/admin.ts.
 */
import {
  AUDIT_PAGE_DEFAULT,
  AUDIT_PAGE_MAXIMUM,
  TOKEN_MAX_DAYS,
  TOKEN_NAME_PATTERN,
  type AuditEventInfo,
  type AuditPage,
  type AuditQuery,
  type CreatedToken,
  type Imported,
  type TokenCreateBody,
  type TokenInfo,
  type TokenList,
  type UserAddBody,
  type UserInfo,
  type UserList,
  type UserUnlocked,
  type UserWithPassword,
} from '../contract/admin.js';
import { Problem, validationFailed } from '../contract/problems.js';
import { DEFAULT_SCOPES, SCOPES, type Scope } from '../contract/scopes.js';
import { CONTROL_CHARACTER } from '../catalog/index.js';
import { generatePassword, hashPassword, PASSWORD_MAX_LENGTH } from '../crypto/passwords.js';
import type { Secrets } from '../crypto/secrets.js';
import type { Db } from '../database/database.js';
import { lockouts, tokens, users, type ApiToken, type UserEntry } from '../store/access.js';
import {
  auditEventOf,
  auditEvents,
  positionOf,
  type AuditFilter,
  type AuditPosition,
  type AuditRecord,
} from '../store/audit.js';
import { RecordFileError } from '../store/record-file.js';
import { importRecords, StoreBusyError, StoreNotEmptyError } from '../store/record-transfer.js';

const DAY_MS = 86_400_000;
/** Seconds a caller is told to wait when requests held the store's tables too long. */
const BUSY_RETRY_AFTER_SECONDS = 5;

const invalid = (pointer: string, detail: string) => validationFailed([{ pointer, detail }]);
const notFound = (detail: string) => new Problem(404, 'NOT_FOUND', detail);

function tokenInfo(token: ApiToken, now = Date.now()): TokenInfo {
  const expired = token.expiresAt !== null && new Date(token.expiresAt).getTime() <= now;
  return {
    name: token.name,
    scopes: [...token.scopes],
    createdAt: token.createdAt,
    expiresAt: token.expiresAt,
    revokedAt: token.revokedAt,
    state: token.revokedAt !== null ? 'revoked' : expired ? 'expired' : 'active',
  };
}

/** When a new token expires: `expiresAt`, or `expiresInDays` from now, or never; checked as the API's schema would. */
function expiryOf(input: TokenCreateBody, now: number): Date | undefined {
  const { expiresAt, expiresInDays } = input;
  if (expiresAt !== undefined && expiresInDays !== undefined) {
    throw invalid('/expiresInDays', 'give expiresAt or expiresInDays, not both');
  }
  if (expiresInDays !== undefined) {
    if (!Number.isInteger(expiresInDays) || expiresInDays < 1 || expiresInDays > TOKEN_MAX_DAYS) {
      throw invalid('/expiresInDays', `must be an integer from 1 to ${TOKEN_MAX_DAYS}`);
    }
    return new Date(now + expiresInDays * DAY_MS);
  }
  if (expiresAt === undefined) return undefined;
  const at = new Date(expiresAt);
  if (Number.isNaN(at.getTime())) throw invalid('/expiresAt', 'must be a date and time (2027-01-31T00:00:00Z)');
  if (at.getTime() <= now) throw invalid('/expiresAt', 'must be in the future');
  return at;
}

function scopesOf(requested: readonly string[] | undefined): Scope[] {
  if (requested === undefined) return [...DEFAULT_SCOPES];
  const unknown = requested.filter((scope) => !(SCOPES as readonly string[]).includes(scope));
  if (requested.length === 0 || unknown.length > 0) {
    throw invalid(
      '/scopes',
      `${unknown.length > 0 ? `unknown scope ${unknown.join(', ')}; ` : ''}scopes are ${SCOPES.join(', ')}`,
    );
  }
  if (new Set(requested).size !== requested.length) throw invalid('/scopes', 'names a scope twice');
  return requested as Scope[];
}

/** A unique violation: another caller created the same name meanwhile. */
const isDuplicate = (error: unknown) => (error as { code?: unknown }).code === '23505';

export const adminTokens = {
  /**
   * Creates an API token; its secret is in the answer and nowhere else. A name is never given twice, a
   * revoked token's included (the audit trail names tokens).
   * @example (await adminTokens.create(db, { name: 'ci-bot', scopes: ['findby'] })).token // 'cg_…'
   */
  async create(db: Db, input: TokenCreateBody): Promise<CreatedToken> {
    if (!new RegExp(TOKEN_NAME_PATTERN).test(input.name)) {
      throw invalid('/name', 'must be 1 to 64 of A-Z a-z 0-9 . _ ~ : @ + -');
    }
    const now = Date.now();
    const scopes = scopesOf(input.scopes);
    const expires = expiryOf(input, now);
    const exists = () => new Problem(409, 'ALREADY_EXISTS', `A token named ${input.name} exists already`);
    if (await tokens.named(db, input.name)) throw exists();
    try {
      const { token, record } = await tokens.create(db, input.name, scopes, expires);
      return { token, ...tokenInfo(record, now) };
    } catch (error) {
      throw isDuplicate(error) ? exists() : error;
    }
  },

  async list(db: Db): Promise<TokenList> {
    const now = Date.now();
    return { tokens: (await tokens.list(db)).map((token) => tokenInfo(token, now)) };
  },

  /** Revokes the live token of this name (a call with it is refused within `COREGATE_TOKEN_CACHE_MS`). */
  async revoke(db: Db, name: string): Promise<TokenInfo> {
    if (!(await tokens.revoke(db, name))) throw notFound(`No live token named ${name}`);
    return tokenInfo((await tokens.named(db, name))!);
  },
};

function userInfo(user: UserEntry): UserInfo {
  return { ...user, state: user.disabledAt === null ? 'enabled' : 'disabled' };
}

function checkUserNumber(userNumber: number, pointer: string): void {
  if (!Number.isInteger(userNumber) || userNumber < 1 || userNumber > 9999) {
    throw invalid(pointer, 'must be a user number from 1 to 9999');
  }
}

/** A password as the core's credentials carry one, or a generated one when none is given. */
function passwordOf(given: string | undefined, pointer: string): { password: string; generated: boolean } {
  if (given === undefined) return { password: generatePassword(), generated: true };
  if (given.length < 1 || given.length > PASSWORD_MAX_LENGTH || CONTROL_CHARACTER.test(given)) {
    throw invalid(pointer, `must be 1 to ${PASSWORD_MAX_LENGTH} printable characters`);
  }
  return { password: given, generated: false };
}

async function existingUser(db: Db, userNumber: number): Promise<UserEntry> {
  checkUserNumber(userNumber, '/number');
  const user = await users.entry(db, userNumber);
  if (!user) throw notFound(`No user ${userNumber}`);
  return user;
}

export const adminUsers = {
  /** Adds a core user; a generated password is in the answer, once. */
  async add(db: Db, input: UserAddBody): Promise<UserWithPassword> {
    checkUserNumber(input.userNumber, '/userNumber');
    if (input.name.length < 1 || input.name.length > 64 || CONTROL_CHARACTER.test(input.name)) {
      throw invalid('/name', 'must be 1 to 64 printable characters');
    }
    const { password, generated } = passwordOf(input.password, '/password');
    const exists = () => new Problem(409, 'ALREADY_EXISTS', `User ${input.userNumber} exists already`);
    if (await users.entry(db, input.userNumber)) throw exists();
    try {
      await users.add(db, input.userNumber, input.name, await hashPassword(password));
    } catch (error) {
      throw isDuplicate(error) ? exists() : error;
    }
    const user = userInfo((await users.entry(db, input.userNumber))!);
    return generated ? { ...user, password } : user;
  },

  /** The users, each with its password lockouts (failures older than `lockoutSeconds` are forgotten). */
  async list(db: Db, lockoutSeconds: number): Promise<UserList> {
    const [entries, standing] = await Promise.all([users.list(db), lockouts.standingOfUsers(db, lockoutSeconds)]);
    return {
      users: entries.map((user) => ({
        ...userInfo(user),
        ...(standing.get(user.userNumber) ?? { lockedUntil: null, failures: 0 }),
      })),
    };
  },

  /** Disables a user (its credentials are refused and its logon sessions end) or enables it again. */
  async setDisabled(db: Db, userNumber: number, disabled: boolean): Promise<UserInfo> {
    await existingUser(db, userNumber);
    const user = await users.setDisabled(db, userNumber, disabled);
    if (!user) throw notFound(`No user ${userNumber}`);
    return userInfo(user);
  },

  /** Clears the user's password lockouts, for every caller they were counted for. */
  async unlock(db: Db, userNumber: number): Promise<UserUnlocked> {
    const user = await existingUser(db, userNumber);
    const cleared = await lockouts.clearCredential(db, `user:${userNumber}`);
    return { ...userInfo(user), cleared };
  },

  /** Sets a user's password: the one given, or a generated one (in the answer, once). */
  async setPassword(db: Db, userNumber: number, given: string | undefined): Promise<UserWithPassword> {
    const user = await existingUser(db, userNumber);
    const { password, generated } = passwordOf(given, '/password');
    if (!(await users.setPassword(db, userNumber, await hashPassword(password)))) {
      throw notFound(`No user ${userNumber}`);
    }
    return generated ? { ...userInfo(user), password } : userInfo(user);
  },
};

/** The cursor of the page after an event: opaque to callers, the event's id to us. */
/** The cursor of the page after an event: its position in the trail, opaque to the caller. */
const cursorAfter = (record: AuditRecord) => {
  const { at, id } = positionOf(record);
  return Buffer.from(`after:${at}|${id}`).toString('base64url');
};

/** The position a cursor names; a cursor no page gave (or of an earlier release, by id alone) is a 400. */
function positionOfCursor(cursor: string | undefined): AuditPosition | undefined {
  if (cursor === undefined) return undefined;
  const match = /^after:(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{6}Z)\|([0-9]{1,15})$/.exec(
    Buffer.from(cursor, 'base64url').toString('latin1'),
  );
  // A real time: the database would refuse February 30th as a 500.
  const real = match && new Date(`${match[1]}Z`).toISOString().startsWith(match[1]!);
  if (!match || !real) {
    throw new Problem(400, 'INVALID_PAGING_TOKEN', 'The cursor is not one a page of /admin/audit gave', [
      { pointer: '/cursor', detail: "must be a page's nextCursor" },
    ]);
  }
  return { at: `${match[1]}${match[2]}`, id: Number(match[3]) };
}

function timeOf(value: string | undefined, pointer: string): Date | undefined {
  if (value === undefined) return undefined;
  const time = new Date(value);
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}/.test(value) || Number.isNaN(time.getTime())) {
    throw invalid(pointer, 'must be an ISO 8601 date or date and time (2026-11-21, 2026-11-21T10:00:00Z)');
  }
  return time;
}

/** The filter a query names, checked as the API's schema would. */
export function auditFilterOf(query: AuditQuery): AuditFilter {
  const { operation, account, status, token } = query;
  if (account !== undefined && !/^[0-9]{10}$/.test(account)) throw invalid('/account', 'must be 10 digits');
  if (status !== undefined && !/^[1-5]([0-9]{2}|xx)$/.test(status)) {
    throw invalid('/status', 'must be an HTTP status (403) or a class of them (4xx)');
  }
  if (query.order !== undefined && query.order !== 'oldest' && query.order !== 'newest') {
    throw invalid('/order', 'must be oldest or newest');
  }
  const filter: AuditFilter = {
    from: timeOf(query.from, '/from'),
    to: timeOf(query.to, '/to'),
    operation,
    account,
    status:
      status === undefined ? undefined : status.endsWith('xx') ? (status as AuditFilter['status']) : Number(status),
    token,
    newestFirst: query.order === 'newest' ? true : undefined,
  };
  return Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== undefined)) as AuditFilter;
}

function pageSizeOf(limit: string | undefined): number {
  if (limit === undefined) return AUDIT_PAGE_DEFAULT;
  const size = Number(limit);
  if (!/^[0-9]{1,4}$/.test(limit) || size < 1 || size > AUDIT_PAGE_MAXIMUM) {
    throw invalid('/limit', `must be from 1 to ${AUDIT_PAGE_MAXIMUM}`);
  }
  return size;
}

const auditEventInfo = (record: AuditRecord): AuditEventInfo => auditEventOf(record);

export const adminAudit = {
  /**
   * One page of the events a query selects, oldest first (newest first with `order=newest`), with the cursor
   * and the path of the next.
   * @example (await adminAudit.page(db, { operation: 'admin:*', limit: '50' })).nextCursor
   */
  async page(db: Db, query: AuditQuery): Promise<AuditPage> {
    const filter = auditFilterOf(query);
    const size = pageSizeOf(query.limit);
    const rows = await auditEvents.page(db, filter, positionOfCursor(query.cursor), size + 1);
    const events = rows.slice(0, size);
    const nextCursor = rows.length > size ? cursorAfter(events.at(-1)!) : null;
    const rest = Object.entries(query).filter(([key, value]) => key !== 'cursor' && value !== undefined);
    const next =
      nextCursor === null
        ? null
        : `/admin/audit?${new URLSearchParams([...(rest as [string, string][]), ['cursor', nextCursor]])}`;
    return { events: events.map(auditEventInfo), nextCursor, next };
  },

  /**
   * Every event a query selects, in the query's order, read a page at a time as the consumer asks for them: memory
   * stays one page however many there are (the query's limit and cursor are not used).
   */
  async *all(db: Db, query: AuditQuery): AsyncGenerator<AuditEventInfo> {
    const filter = auditFilterOf(query);
    for (let after = positionOfCursor(query.cursor); ;) {
      const rows = await auditEvents.page(db, filter, after, AUDIT_PAGE_MAXIMUM);
      for (const row of rows) yield auditEventInfo(row);
      if (rows.length < AUDIT_PAGE_MAXIMUM) return;
      after = positionOf(rows.at(-1)!);
    }
  },
};

/**
 * Loads a records file (`coregate import`'s lines) in one transaction, as `importRecords` does, with its
 * refusals as problems: a bad line is 400 naming it, a store that holds records 409 unless `replace`.
 */
export async function importRecordFile(
  db: Db,
  secrets: Secrets,
  lines: AsyncIterable<string>,
  options: { readonly replace: boolean; readonly onProgress?: (records: number) => void },
): Promise<Imported> {
  const started = performance.now();
  try {
    const { header, counts } = await importRecords(db, secrets, lines, options);
    return {
      status: 'imported',
      records: counts,
      demoDataset: header.demoDataset ?? null,
      elapsedMs: Math.round(performance.now() - started),
    };
  } catch (error) {
    throw importProblem(error) ?? error;
  }
}

/** The problem an import's failure is answered with, or undefined for a failure of the service itself. */
export function importProblem(error: unknown): Problem | undefined {
  if (error instanceof Problem) return error;
  if (error instanceof RecordFileError) {
    return new Problem(400, 'INVALID_RECORD_FILE', `${error.message}; nothing was imported`, [
      { pointer: `/line/${error.line}`, detail: error.message.replace(/^line [0-9]+: /, '') },
    ]);
  }
  if (error instanceof StoreNotEmptyError) {
    return new Problem(
      409,
      'STORE_NOT_EMPTY',
      'The store already holds records; replace them explicitly (replace=true, coregate import --replace)',
    );
  }
  if (error instanceof StoreBusyError) return storeBusy(error);
  // A row the database refused for its value (a data exception or a broken constraint): the file's fault.
  const code = String((error as { cause?: { code?: unknown } }).cause?.code ?? '');
  if (/^2[23]/.test(code)) {
    return new Problem(400, 'INVALID_RECORD_FILE', `${(error as Error).message}; nothing was imported`);
  }
  return undefined;
}

/** 503 with Retry-After: requests held the store's tables past the replacement's lock timeout. */
export function storeBusy(error: StoreBusyError): Problem {
  return new Problem(503, 'UNAVAILABLE', error.message, undefined, { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) });
}
