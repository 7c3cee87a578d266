/**
 * Persistence of who may call: API tokens (stored as SHA-256), users (scrypt hashes) and settings such
 * as the administrative password hash. All of it lives in the database so instances stay stateless.
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Scope } from '../contract/scopes.js';
import type { Db } from './database.js';


export interface ApiToken {
  readonly id: number;
  readonly name: string;
  readonly scopes: readonly Scope[];
  readonly createdAt: string;
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
}

export interface AppUser {
  readonly userNumber: number;
  readonly name: string;
  readonly passwordHash: string;
}

const TOKEN_PREFIX = 'cg_';

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

const tokenColumns = sql`id, name, scopes, created_at::text as "createdAt", expires_at::text as "expiresAt",
  revoked_at::text as "revokedAt"`;

export const tokens = {
  /** Creates a token; the clear value is returned once and never stored. */
  async create(
    db: Db,
    name: string,
    scopes: readonly Scope[],
    expiresAt?: Date,
  ): Promise<{ token: string; record: ApiToken }> {
    const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const result = await sql<ApiToken>`insert into api_token (name, token_hash, scopes, expires_at)
      values (${name}, ${hashToken(token)}, string_to_array(${scopes.join(',')}, ','),
        ${expiresAt?.toISOString() ?? null})
      returning ${tokenColumns}`.execute(db);
    return { token, record: result.rows[0]! };
  },

  /** The live token with this clear value, or undefined if unknown, revoked or expired. */
  async findActive(db: Db, token: string): Promise<ApiToken | undefined> {
    const result = await sql<ApiToken>`select ${tokenColumns} from api_token
      where token_hash = ${hashToken(token)} and revoked_at is null
        and (expires_at is null or expires_at > now())`.execute(db);
    return result.rows[0];
  },

  async list(db: Db): Promise<ApiToken[]> {
    return (await sql<ApiToken>`select ${tokenColumns} from api_token order by id`.execute(db)).rows;
  },

  /** Revokes by name; false when no live token has that name. */
  async revoke(db: Db, name: string): Promise<boolean> {
    const result = await sql`update api_token set revoked_at = now()
      where name = ${name} and revoked_at is null`.execute(db);
    return Number(result.numAffectedRows ?? 0) > 0;
  },
};

export const users = {
  async add(db: Db, userNumber: number, name: string, passwordHash: string): Promise<void> {
    await sql`insert into app_user (user_number, name, password_hash)
      values (${userNumber}, ${name}, ${passwordHash})`.execute(db);
  },

  async find(db: Db, userNumber: number): Promise<AppUser | undefined> {
    const result = await sql<AppUser>`select user_number as "userNumber", name, password_hash as "passwordHash"
      from app_user where user_number = ${userNumber}`.execute(db);
    return result.rows[0];
  },

  async list(db: Db): Promise<Omit<AppUser, 'passwordHash'>[]> {
    const result = await sql<AppUser>`select user_number as "userNumber", name
      from app_user order by user_number`.execute(db);
    return result.rows;
  },
};

export const settings = {
  async get(db: Db, key: string): Promise<string | undefined> {
    const result = await sql<{ value: string }>`select value from coregate_setting where key = ${key}`.execute(db);
    return result.rows[0]?.value;
  },

  async set(db: Db, key: string, value: string): Promise<void> {
    await sql`insert into coregate_setting (key, value) values (${key}, ${value})
      on conflict (key) do update set value = excluded.value`.execute(db);
  },
};

/** Setting keys. */
export const SETTING = {
  adminPasswordHash: 'admin_password_hash',
  demoSeeded: 'demo_seeded',
} as const;

export interface Session {
  readonly userNumber: number;
  /** Seconds since the session was last used. */
  readonly idleSeconds: number;
}

/**
 * SymXchange-style sessions from `logon`: the TokenId is random, stored only as its SHA-256, and bound to
 * the bearer token that created it: under any other token it is as unknown as a TokenId never issued.
 */
export const sessions = {
  async create(db: Db, userNumber: number, tokenName: string): Promise<string> {
    const tokenId = randomBytes(32).toString('base64url');
    await sql`insert into session (token_hash, token_name, user_number)
      values (${hashToken(tokenId)}, ${tokenName}, ${userNumber})`.execute(db);
    return tokenId;
  },

  /** The live session of a TokenId under this bearer token, or undefined when unknown, another token's, ended or idle past `idleSeconds`. */
  async findLive(db: Db, tokenId: string, tokenName: string, idleSeconds: number): Promise<Session | undefined> {
    const result = await sql<Session>`select user_number as "userNumber",
        extract(epoch from now() - last_used_at)::float8 as "idleSeconds"
      from session where token_hash = ${hashToken(tokenId)} and token_name = ${tokenName} and ended_at is null
        and last_used_at > now() - make_interval(secs => ${idleSeconds})`.execute(db);
    return result.rows[0];
  },

  async touch(db: Db, tokenId: string): Promise<void> {
    await sql`update session set last_used_at = now() where token_hash = ${hashToken(tokenId)}`.execute(db);
  },

  /** Ends a session of this bearer token; false when it was not live. */
  async end(db: Db, tokenId: string, tokenName: string): Promise<boolean> {
    const result = await sql`update session set ended_at = now()
      where token_hash = ${hashToken(tokenId)} and token_name = ${tokenName} and ended_at is null`.execute(db);
    return Number(result.numAffectedRows ?? 0) > 0;
  },
};

export interface MemberSecret {
  readonly homeBankingPasswordHash: string | null;
  readonly audioAccessCodeHash: string | null;
}

/** Member-level secrets (home banking password, audio access code) per account, as scrypt hashes. */
export const memberSecrets = {
  async find(db: Db, accountNumber: string): Promise<MemberSecret | undefined> {
    const result = await sql<MemberSecret>`select home_banking_password_hash as "homeBankingPasswordHash",
        audio_access_code_hash as "audioAccessCodeHash"
      from member_secret where account_number = ${accountNumber}`.execute(db);
    return result.rows[0];
  },

  async set(db: Db, accountNumber: string, secret: Partial<MemberSecret>): Promise<void> {
    await sql`insert into member_secret (account_number, home_banking_password_hash, audio_access_code_hash)
      values (${accountNumber}, ${secret.homeBankingPasswordHash ?? null}, ${secret.audioAccessCodeHash ?? null})
      on conflict (account_number) do update set
        home_banking_password_hash = coalesce(excluded.home_banking_password_hash, member_secret.home_banking_password_hash),
        audio_access_code_hash = coalesce(excluded.audio_access_code_hash, member_secret.audio_access_code_hash)`.execute(db);
  },
};

export interface LockoutState {
  /** Failures since the last lock (or since the row was created). */
  readonly failures: number;
  /** Locks since the last success: the backoff doubles with each. */
  readonly locks: number;
  readonly locked: boolean;
}

export interface LockoutPolicy {
  /** Failures in a row that lock the subject. */
  readonly threshold: number;
  /** The longest lock, in seconds. */
  readonly lockSeconds: number;
  /** The first lock, in seconds; each further lock before a success doubles it, up to `lockSeconds`. Default: `lockSeconds`. */
  readonly firstLockSeconds?: number;
}

/**
 * Lockout after repeated password failures, per subject (a user number, an account, a home-banking
 * user name, a lookup credential, the administrative password under one bearer token). Kept in the
 * database so every instance sees the same count.
 */
export const lockouts = {
  /** The subject's failures and locks; undefined when it has none. */
  async state(db: Db, subject: string): Promise<LockoutState | undefined> {
    const result = await sql<LockoutState>`select failures, locks, coalesce(locked_until > now(), false) as locked
      from credential_lockout where subject = ${subject}`.execute(db);
    return result.rows[0];
  },

  async isLocked(db: Db, subject: string): Promise<boolean> {
    return (await lockouts.state(db, subject))?.locked ?? false;
  },

  /**
   * Counts a failure; when failures reach the threshold, locks the subject for
   * min(firstLockSeconds × 2^locks, lockSeconds) and starts counting again from zero.
   */
  async fail(db: Db, subject: string, policy: LockoutPolicy): Promise<void> {
    const first = policy.firstLockSeconds ?? policy.lockSeconds;
    await sql`insert into credential_lockout (subject, failures, locks) values (${subject}, 1, 0)
      on conflict (subject) do update set failures = credential_lockout.failures + 1`.execute(db);
    // Under READ COMMITTED a concurrent second failure re-reads the row after the first lock and finds failures = 0.
    await sql`update credential_lockout
      set locked_until = now() + make_interval(secs => least(${policy.lockSeconds}::float8, ${first}::float8 * power(2, least(locks, 30)))),
        locks = locks + 1, failures = 0
      where subject = ${subject} and failures >= ${policy.threshold}`.execute(db);
  },

  /** Forgets the subject's failures and locks (after a success). */
  async clear(db: Db, subject: string): Promise<void> {
    await sql`delete from credential_lockout where subject = ${subject}`.execute(db);
  },
};
