/**
 * Persistence of who may call: API tokens (stored as SHA-256), users (scrypt hashes) and settings such
 * as the administrative password hash. All of it lives in the database so instances stay stateless.
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from './database.js';

export const SCOPES = ['findby', 'corptransfer:read', 'share:write', 'collateral:read'] as const;
export type Scope = (typeof SCOPES)[number];

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

/** SymXchange-style sessions from `logon`: the TokenId is random, stored only as its SHA-256. */
export const sessions = {
  async create(db: Db, userNumber: number): Promise<string> {
    const tokenId = randomBytes(32).toString('base64url');
    await sql`insert into session (token_hash, user_number) values (${hashToken(tokenId)}, ${userNumber})`.execute(db);
    return tokenId;
  },

  /** The live session of a TokenId, or undefined when unknown, ended or idle past `idleSeconds`. */
  async findLive(db: Db, tokenId: string, idleSeconds: number): Promise<Session | undefined> {
    const result = await sql<Session>`select user_number as "userNumber",
        extract(epoch from now() - last_used_at)::float8 as "idleSeconds"
      from session where token_hash = ${hashToken(tokenId)} and ended_at is null
        and last_used_at > now() - make_interval(secs => ${idleSeconds})`.execute(db);
    return result.rows[0];
  },

  async touch(db: Db, tokenId: string): Promise<void> {
    await sql`update session set last_used_at = now() where token_hash = ${hashToken(tokenId)}`.execute(db);
  },

  /** Ends a session; false when it was not live. */
  async end(db: Db, tokenId: string): Promise<boolean> {
    const result = await sql`update session set ended_at = now()
      where token_hash = ${hashToken(tokenId)} and ended_at is null`.execute(db);
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

/**
 * Lockout after repeated password failures, per subject (a user number, an account, a home-banking
 * user name, a lookup credential). Kept in the database so every instance sees the same count.
 */
export const lockouts = {
  async isLocked(db: Db, subject: string): Promise<boolean> {
    const result = await sql`select 1 from credential_lockout
      where subject = ${subject} and locked_until > now()`.execute(db);
    return result.rows.length > 0;
  },

  /** Counts a failure; locks the subject for `lockSeconds` when it reaches `threshold`. */
  async fail(db: Db, subject: string, threshold: number, lockSeconds: number): Promise<void> {
    await sql`insert into credential_lockout (subject, failures) values (${subject}, 1)
      on conflict (subject) do update set
        failures = case when credential_lockout.locked_until <= now() then 1 else credential_lockout.failures + 1 end,
        locked_until = case when credential_lockout.locked_until <= now() then null else credential_lockout.locked_until end`.execute(
      db,
    );
    await sql`update credential_lockout set locked_until = now() + make_interval(secs => ${lockSeconds}), failures = 0
      where subject = ${subject} and failures >= ${threshold}`.execute(db);
  },

  async clear(db: Db, subject: string): Promise<void> {
    await sql`delete from credential_lockout where subject = ${subject}`.execute(db);
  },
};
