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
