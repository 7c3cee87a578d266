/**
 * Persistence of who may call: API tokens (stored as SHA-256), users (scrypt hashes) and settings such
 * as the administrative password hash. All of it lives in the database so instances stay stateless.
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql, type ExpressionBuilder } from 'kysely';
import type { Scope } from '../contract/scopes.js';
import type { Db } from '../database/database.js';
import { fixedTables, type FixedTables } from '../database/tables.js';
import { isoTime, likeLiteral } from './sql-text.js';

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

/** A user as the admin API and `coregate user list` show it: never its password hash. */
export interface UserEntry {
  readonly userNumber: number;
  readonly name: string;
  readonly createdAt: string;
  /** When it was disabled; null while it is enabled. */
  readonly disabledAt: string | null;
}

const TOKEN_PREFIX = 'cg_';

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** The database's clock: timestamps are compared and written by the database, never by an instance. */
const now = sql<Date>`now()`;

/** An `ApiToken` from an `api_token` row. */
const tokenColumns = (eb: ExpressionBuilder<FixedTables, 'api_token'>) =>
  [
    'id',
    'name',
    'scopes',
    isoTime(eb.ref('created_at')).as('createdAt'),
    isoTime<string | null>(eb.ref('expires_at')).as('expiresAt'),
    isoTime<string | null>(eb.ref('revoked_at')).as('revokedAt'),
  ] as const;

export const tokens = {
  /** Creates a token; the clear value is returned once and never stored. */
  async create(
    db: Db,
    name: string,
    scopes: readonly Scope[],
    expiresAt?: Date,
  ): Promise<{ token: string; record: ApiToken }> {
    const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
    const record = await fixedTables(db)
      .insertInto('api_token')
      .values({
        name,
        token_hash: hashToken(token),
        // The scopes travel as one text parameter, split by the database.
        scopes: sql<Scope[]>`string_to_array(${scopes.join(',')}, ',')`,
        expires_at: expiresAt?.toISOString() ?? null,
      })
      .returning(tokenColumns)
      .executeTakeFirstOrThrow();
    return { token, record };
  },

  /** The live token with this clear value, or undefined if unknown, revoked or expired. */
  async findActive(db: Db, token: string): Promise<ApiToken | undefined> {
    return fixedTables(db)
      .selectFrom('api_token')
      .select(tokenColumns)
      .where('token_hash', '=', hashToken(token))
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .executeTakeFirst();
  },

  async list(db: Db): Promise<ApiToken[]> {
    return fixedTables(db).selectFrom('api_token').select(tokenColumns).orderBy('id').execute();
  },

  /** The token of this name, live or not (a name is never given twice). */
  async named(db: Db, name: string): Promise<ApiToken | undefined> {
    return fixedTables(db).selectFrom('api_token').select(tokenColumns).where('name', '=', name).executeTakeFirst();
  },

  /** Revokes by name; false when no live token has that name. */
  async revoke(db: Db, name: string): Promise<boolean> {
    const result = await fixedTables(db)
      .updateTable('api_token')
      .set({ revoked_at: now })
      .where('name', '=', name)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  },
};

export const users = {
  async add(db: Db, userNumber: number, name: string, passwordHash: string): Promise<void> {
    await fixedTables(db)
      .insertInto('app_user')
      .values({ user_number: userNumber, name, password_hash: passwordHash })
      .execute();
  },

  /** The enabled user of this number, whose credentials may verify; a disabled one is as unknown as a missing one. */
  async find(db: Db, userNumber: number): Promise<AppUser | undefined> {
    return fixedTables(db)
      .selectFrom('app_user')
      .select(['user_number as userNumber', 'name', 'password_hash as passwordHash'])
      .where('user_number', '=', userNumber)
      .where('disabled_at', 'is', null)
      .executeTakeFirst();
  },

  /** The user of this number, enabled or not. */
  async entry(db: Db, userNumber: number): Promise<UserEntry | undefined> {
    return fixedTables(db)
      .selectFrom('app_user')
      .select(userColumns)
      .where('user_number', '=', userNumber)
      .executeTakeFirst();
  },

  async list(db: Db): Promise<UserEntry[]> {
    return fixedTables(db).selectFrom('app_user').select(userColumns).orderBy('user_number').execute();
  },

  /**
   * Disables (refusing its credentials, and ending its logon sessions) or enables a user; the user as it is
   * then, or undefined when there is none. Disabling a disabled user keeps when it was first disabled.
   */
  async setDisabled(db: Db, userNumber: number, disabled: boolean): Promise<UserEntry | undefined> {
    const user = await fixedTables(db)
      .updateTable('app_user')
      .set((eb) => ({ disabled_at: disabled ? eb.fn.coalesce('disabled_at', now) : null }))
      .where('user_number', '=', userNumber)
      .returning(userColumns)
      .executeTakeFirst();
    if (user && disabled) await sessions.endOfUser(db, userNumber);
    return user;
  },

  /** Replaces a user's password hash; false when there is no such user. */
  async setPassword(db: Db, userNumber: number, passwordHash: string): Promise<boolean> {
    const result = await fixedTables(db)
      .updateTable('app_user')
      .set({ password_hash: passwordHash })
      .where('user_number', '=', userNumber)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  },
};

/** A `UserEntry` from an `app_user` row. */
const userColumns = (eb: ExpressionBuilder<FixedTables, 'app_user'>) =>
  [
    'user_number as userNumber',
    'name',
    isoTime(eb.ref('created_at')).as('createdAt'),
    isoTime<string | null>(eb.ref('disabled_at')).as('disabledAt'),
  ] as const;

export const settings = {
  async get(db: Db, key: string): Promise<string | undefined> {
    const row = await fixedTables(db)
      .selectFrom('coregate_setting')
      .select('value')
      .where('key', '=', key)
      .executeTakeFirst();
    return row?.value;
  },

  async set(db: Db, key: string, value: string): Promise<void> {
    await fixedTables(db)
      .insertInto('coregate_setting')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet((eb) => ({ value: eb.ref('excluded.value') })))
      .execute();
  },
};

/** Setting keys. */
export const SETTING = {
  adminPasswordHash: 'admin_password_hash',
  demoSeeded: 'demo_seeded',
  demoDataset: 'demo_dataset',
  /** The sandbox's fault injection switched on or off (`on`/`off`; store/fault-injection.ts). */
  faultInjection: 'fault_injection',
} as const;

/** The generated demo dataset a store holds: accounts 1..`accounts` of generator seed `seed`. */
export interface DemoDataset {
  readonly seed: number;
  readonly accounts: number;
}

/**
 * Which demo dataset the store was seeded with (or imported from a demo store), so that `coregate reset`
 * and `POST /admin/reset` know what to go back to; none for a store of other records.
 */
export const demoDataset = {
  async get(db: Db): Promise<DemoDataset | undefined> {
    const value = await settings.get(db, SETTING.demoDataset);
    if (value === undefined) return undefined;
    const { seed, accounts } = JSON.parse(value) as DemoDataset;
    return { seed, accounts };
  },

  /** Records the dataset, or forgets it (`undefined`: the store holds other records now). */
  async set(db: Db, dataset: DemoDataset | undefined): Promise<void> {
    if (dataset) {
      await settings.set(db, SETTING.demoDataset, JSON.stringify({ seed: dataset.seed, accounts: dataset.accounts }));
    } else {
      await fixedTables(db).deleteFrom('coregate_setting').where('key', '=', SETTING.demoDataset).execute();
    }
  },
};

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
    await fixedTables(db)
      .insertInto('session')
      .values({ token_hash: hashToken(tokenId), token_name: tokenName, user_number: userNumber })
      .execute();
    return tokenId;
  },

  /** The live session of a TokenId under this bearer token, or undefined when unknown, another token's, ended or idle past `idleSeconds`. */
  async findLive(db: Db, tokenId: string, tokenName: string, idleSeconds: number): Promise<Session | undefined> {
    return fixedTables(db)
      .selectFrom('session')
      .select((eb) => [
        'user_number as userNumber',
        sql<number>`extract(epoch from now() - ${eb.ref('last_used_at')})::float8`.as('idleSeconds'),
      ])
      .where('token_hash', '=', hashToken(tokenId))
      .where('token_name', '=', tokenName)
      .where('ended_at', 'is', null)
      .where('last_used_at', '>', sql<Date>`now() - make_interval(secs => ${idleSeconds})`)
      .executeTakeFirst();
  },

  async touch(db: Db, tokenId: string): Promise<void> {
    await fixedTables(db)
      .updateTable('session')
      .set({ last_used_at: now })
      .where('token_hash', '=', hashToken(tokenId))
      .execute();
  },

  /** Ends every live session of a user (it was disabled). */
  async endOfUser(db: Db, userNumber: number): Promise<void> {
    await fixedTables(db)
      .updateTable('session')
      .set({ ended_at: now })
      .where('user_number', '=', userNumber)
      .where('ended_at', 'is', null)
      .execute();
  },

  /** Ends a session of this bearer token; false when it was not live. */
  async end(db: Db, tokenId: string, tokenName: string): Promise<boolean> {
    const result = await fixedTables(db)
      .updateTable('session')
      .set({ ended_at: now })
      .where('token_hash', '=', hashToken(tokenId))
      .where('token_name', '=', tokenName)
      .where('ended_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  },
};

export interface MemberSecret {
  readonly homeBankingPasswordHash: string | null;
  readonly audioAccessCodeHash: string | null;
}

/** Member-level secrets (home banking password, audio access code) per account, as scrypt hashes. */
export const memberSecrets = {
  async find(db: Db, accountNumber: string): Promise<MemberSecret | undefined> {
    return fixedTables(db)
      .selectFrom('member_secret')
      .select([
        'home_banking_password_hash as homeBankingPasswordHash',
        'audio_access_code_hash as audioAccessCodeHash',
      ])
      .where('account_number', '=', accountNumber)
      .executeTakeFirst();
  },

  async set(db: Db, accountNumber: string, secret: Partial<MemberSecret>): Promise<void> {
    await fixedTables(db)
      .insertInto('member_secret')
      .values({
        account_number: accountNumber,
        home_banking_password_hash: secret.homeBankingPasswordHash ?? null,
        audio_access_code_hash: secret.audioAccessCodeHash ?? null,
      })
      // A secret left out keeps its stored value.
      .onConflict((oc) =>
        oc.column('account_number').doUpdateSet((eb) => ({
          home_banking_password_hash: eb.fn.coalesce(
            'excluded.home_banking_password_hash',
            'member_secret.home_banking_password_hash',
          ),
          audio_access_code_hash: eb.fn.coalesce(
            'excluded.audio_access_code_hash',
            'member_secret.audio_access_code_hash',
          ),
        })),
      )
      .execute();
  },
};

export interface LockoutState {
  /** The caller's failures with the credential since its last lock, success or quiet lockout time. */
  readonly failures: number;
  /** Locks since the last success: the backoff doubles with each. */
  readonly locks: number;
  readonly locked: boolean;
  /** The credential has failed more often, from every caller, than its slow-down allows. */
  readonly slowed: boolean;
}

export interface LockoutPolicy {
  /** Failures in a row that lock the subject. */
  readonly threshold: number;
  /** The longest lock, in seconds; failures older than this are forgotten. */
  readonly lockSeconds: number;
  /** The first lock, in seconds; each further lock before a success doubles it, up to `lockSeconds`. Default: `lockSeconds`. */
  readonly firstLockSeconds?: number;
}

export interface SlowdownPolicy {
  /** Failures of one credential, from every caller, within `windowSeconds` beyond which it is slowed. */
  readonly threshold: number;
  readonly windowSeconds: number;
}

/**
 * Lockout after repeated password failures, kept in the database so every instance sees the same count.
 * Two kinds of row: `credential_lockout`, per subject (a credential under one caller, see
 * security/authenticator.ts), counts failures in a row and locks; `credential_slowdown`, per credential
 * (or a bucket of them), paces the failures from every caller: each adds `windowSeconds / threshold` to
 * `failures_until`, so the credential is slowed while that lies more than a window ahead.
 */
/** A user's password lockouts as the operator sees them (`lockouts.standingOfUsers`). */
export interface UserLockoutStanding {
  /** Until when some caller is locked out of the user's password; null when none is. */
  readonly lockedUntil: string | null;
  /** Wrong passwords counted towards the next lock, from every caller. */
  readonly failures: number;
}

export const lockouts = {
  /** The subject's failures and lock, and whether its credential (`slowdown`, the row of `credential_slowdown`) is slowed. */
  async state(db: Db, subject: string, slowdown: string, policy: SlowdownPolicy): Promise<LockoutState> {
    return fixedTables(db)
      .selectFrom(sql<{ probe: number }>`(select 1 as probe)`.as('probe'))
      .leftJoin('credential_lockout', (join) => join.on('credential_lockout.subject', '=', subject))
      .leftJoin('credential_slowdown', (join) => join.on('credential_slowdown.credential', '=', slowdown))
      .select((eb) => [
        eb.fn.coalesce('credential_lockout.failures', eb.lit(0)).as('failures'),
        eb.fn.coalesce('credential_lockout.locks', eb.lit(0)).as('locks'),
        eb.fn
          .coalesce(eb('credential_lockout.locked_until', '>', now), eb.lit(false))
          .$castTo<boolean>()
          .as('locked'),
        eb.fn
          .coalesce(
            eb(
              'credential_slowdown.failures_until',
              '>',
              sql<Date>`now() + make_interval(secs => ${policy.windowSeconds})`,
            ),
            eb.lit(false),
          )
          .$castTo<boolean>()
          .as('slowed'),
      ])
      .executeTakeFirstOrThrow();
  },

  /**
   * Counts a failure (the first again when the last one is older than `lockSeconds`); when failures
   * reach the threshold, locks the subject for min(firstLockSeconds × 2^locks, lockSeconds) and starts
   * counting again from zero. Says whether this failure locked the subject.
   */
  async fail(db: Db, subject: string, policy: LockoutPolicy): Promise<boolean> {
    const first = policy.firstLockSeconds ?? policy.lockSeconds;
    const lockout = fixedTables(db);
    const stale = sql<boolean>`credential_lockout.failed_at < now() - make_interval(secs => ${policy.lockSeconds})`;
    await lockout
      .insertInto('credential_lockout')
      .values({ subject, failures: 1, locks: 0 })
      .onConflict((oc) =>
        oc.column('subject').doUpdateSet((eb) => ({
          failures: eb
            .case()
            .when(stale)
            .then(1)
            .else(eb('credential_lockout.failures', '+', 1))
            .end(),
          // A stale row is not locked: its last lock began at its last failure and lasted at most lockSeconds.
          locks: eb.case().when(stale).then(0).else(eb.ref('credential_lockout.locks')).end(),
          failed_at: now,
        })),
      )
      .execute();
    // Under READ COMMITTED a concurrent second failure re-reads the row after the first lock and finds failures = 0.
    const locked = await lockout
      .updateTable('credential_lockout')
      .set((eb) => ({
        locked_until: sql<Date>`now() + make_interval(secs => least(${policy.lockSeconds}::float8, ${first}::float8 * power(2, least(${eb.ref('locks')}, 30))))`,
        locks: eb('locks', '+', 1),
        failures: 0,
      }))
      .where('subject', '=', subject)
      .where('failures', '>=', policy.threshold)
      .executeTakeFirst();
    return locked.numUpdatedRows > 0n;
  },

  /**
   * Counts a failure of the credential from any caller towards its slow-down: `failures_until` moves
   * `windowSeconds / threshold` later (from now, if it lies in the past), at most two windows ahead, so a
   * slow-down ends at most a window after the failures stop.
   */
  async slowDown(db: Db, slowdown: string, policy: SlowdownPolicy): Promise<void> {
    const step = policy.windowSeconds / policy.threshold;
    await fixedTables(db)
      .insertInto('credential_slowdown')
      .values({ credential: slowdown, failures_until: sql<Date>`now() + make_interval(secs => ${step}::float8)` })
      .onConflict((oc) =>
        oc.column('credential').doUpdateSet({
          failures_until: sql<Date>`least(greatest(credential_slowdown.failures_until, now()) + make_interval(secs => ${step}::float8), now() + make_interval(secs => ${2 * policy.windowSeconds}::float8))`,
        }),
      )
      .execute();
  },

  /** Forgets the subject's failures and locks (after a success). */
  async clear(db: Db, subject: string): Promise<void> {
    await fixedTables(db).deleteFrom('credential_lockout').where('subject', '=', subject).execute();
  },

  /**
   * Forgets the failures and locks of a credential (`user:25`) under every caller (its subjects are
   * `<credential>@<caller>`, security/authenticator.ts); returns how many callers it was counted for.
   */
  /**
   * Each user's lockout standing, for the operator (`coregate user list`, `GET /admin/users`): until when a
   * caller is locked out of the user's password (the latest lock in force, null when none), and the wrong
   * passwords counted towards the next lock across every caller (failures older than `windowSeconds` are
   * forgotten, as `fail` forgets them). Users with no row are absent.
   */
  async standingOfUsers(db: Db, windowSeconds: number): Promise<Map<number, UserLockoutStanding>> {
    const { rows } = await sql<{ userNumber: number; lockedUntil: string | null; failures: number | string | null }>`
      select substring(subject from '^user:([0-9]+)@')::int as "userNumber",
        ${isoTime<string | null>(sql.raw('max(locked_until) filter (where locked_until > now())'))} as "lockedUntil",
        sum(failures) filter (where failed_at >= now() - make_interval(secs => ${windowSeconds})) as failures
      from credential_lockout
      where subject ~ '^user:[0-9]+@'
      group by 1`.execute(db);
    return new Map(
      rows.map((row) => [
        Number(row.userNumber),
        { lockedUntil: row.lockedUntil, failures: Number(row.failures ?? 0) },
      ]),
    );
  },

  async clearCredential(db: Db, credential: string): Promise<number> {
    const result = await fixedTables(db)
      .deleteFrom('credential_lockout')
      .where('subject', 'like', `${likeLiteral(credential)}@%`)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  },

  /**
   * Deletes what no longer counts: subjects neither locked nor failed within `windowSeconds`, and
   * slow-downs whose failures have all run out. Returns the number of rows deleted.
   */
  async sweep(db: Db, windowSeconds: number): Promise<number> {
    const tables = fixedTables(db);
    const quiet = await tables
      .deleteFrom('credential_lockout')
      .where('failed_at', '<', sql<Date>`now() - make_interval(secs => ${windowSeconds})`)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
      .executeTakeFirst();
    const drained = await tables
      .deleteFrom('credential_slowdown')
      .where('failures_until', '<=', now)
      .executeTakeFirst();
    return Number(quiet.numDeletedRows + drained.numDeletedRows);
  },
};
