/**
 * Who is calling: the bearer token (401 when missing or not live) and the body `Credentials`, every one
 * of which must verify (403 otherwise, without saying which part failed). Member-level credentials
 * confine the call to the member's account. Passwords are throttled per credential and caller (bearer
 * token and address), with a slow-down per credential across every caller (docs/decisions.md, "Security").
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { isIPv6 } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Type, type TSchema } from 'typebox';
import type { Config } from '../config.js';
import { forbidden, lockedOut, unauthenticated, validationFailed, type Problem } from '../contract/problems.js';
import {
  CREDENTIAL_SCHEMAS,
  CREDENTIAL_SECRET_CHOICES,
  MEMBER_CREDENTIAL_KINDS,
  type CredentialKind,
  type CredentialsBody,
} from '../contract/envelope.js';
import { type Scope } from '../contract/scopes.js';
import {
  lockouts,
  memberSecrets,
  sessions,
  settings,
  SETTING,
  tokens,
  users,
  type SlowdownPolicy,
} from '../store/access.js';
import type { Db } from '../database/database.js';
import { lookups } from '../store/lookups.js';
import { looksLikeJwt, type JwtVerifier } from './jwt.js';
import { hashPassword, verifyPassword as scryptVerify } from '../crypto/passwords.js';
import type { Secrets } from '../crypto/secrets.js';

export interface BearerIdentity {
  readonly tokenName: string;
  readonly scopes: readonly Scope[];
}

export interface CredentialIdentity {
  /** The bearer token the credentials came under (`BearerIdentity.tokenName`): a `logon` session is bound to it. */
  readonly tokenName: string;
  /** The core user number the call acts as: from UserNumber or Token credentials, 0 for administrative calls. */
  readonly userNumber: number;
  readonly kinds: readonly CredentialKind[];
  /** Set when member-level credentials were given: the call may touch only this account. */
  readonly memberAccount?: string;
}

export type AuthenticatorSettings = Pick<
  Config,
  | 'credentialCacheMs'
  | 'tokenCacheMs'
  | 'lockoutThreshold'
  | 'lockoutSeconds'
  | 'lockoutSlowdownThreshold'
  | 'lockoutSlowdownMs'
  | 'sessionIdleSeconds'
  | 'credentialRefusalMs'
>;

/** Who presents credentials, as the lockout counts callers: the bearer token, and the address the call came from. */
export interface Caller {
  readonly tokenName: string;
  /** As `callerAddress` gives it. */
  readonly address: string;
}

/** What one verified credential object says about the caller. */
interface Verified {
  readonly userNumber?: number;
  readonly memberAccount?: string;
}

type Fields = Record<string, unknown>;

/**
 * A check refused without a password check, because the caller is locked out of the credential: the call is
 * answered as a wrong password is, and recorded as a lockout of `who` (the credential's user or account).
 */
class LockedOut extends Error {
  constructor(readonly who: Verified) {
    super('the credential is locked out for this caller');
    this.name = 'LockedOut';
  }
}

export interface AuthenticatorOptions {
  readonly jwt?: JwtVerifier;
  readonly adminPasswordHash?: string;
  /** The scrypt check, replaceable so that tests can count how often a password is really hashed. */
  readonly verifyPassword?: (password: string, stored: string) => Promise<boolean>;
  /**
   * Told when wrong passwords lock a credential for a caller (`locked`) and when a locked one is tried
   * (`refused`), with its kind (`admin`, `user`, `account`, `homebanking`, `lookup`): for the metrics.
   */
  readonly onLockout?: (credential: string, event: 'locked' | 'refused') => void;
  /** Least time between two sweeps of expired lockout rows by this process; default one minute. */
  readonly lockoutSweepMs?: number;
}

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{1,4096})$/;
const ADMIN_HASH_TTL_MS = 5_000;
/** Live API tokens remembered at most; the oldest is forgotten first. */
const TOKEN_CACHE_ENTRIES = 10_000;
/** A session's last use is written at most this often, not on every call. */
const SESSION_TOUCH_SECONDS = 30;
/** Password verifications remembered at most, for each outcome; the oldest is forgotten first. */
const VERIFICATION_CACHE_ENTRIES = 10_000;
/** The administrative password's first lock for one caller; each further one doubles, up to `lockoutSeconds`. */
const ADMIN_FIRST_LOCK_SECONDS = 1;
/** Longest lockout subject (`credential_lockout.subject`). */
const SUBJECT_MAX_LENGTH = 160;
/**
 * The slow-down rows of a kind of credential (the administrative password has its own): a credential's
 * row is chosen by a keyed hash, for known and unknown credentials alike, so that which credentials are
 * slowed says nothing about which exist, and a flood of made-up names fills at most this many rows.
 */
export const SLOWDOWN_BUCKETS = 256;
const LOCKOUT_SWEEP_MS = 60_000;

/**
 * The address a caller is counted by: an IPv4 address as it is, the /64 network of an IPv6 one (a
 * subscriber is given a whole /64, so its addresses are one caller).
 * @example callerAddress('2001:db8:1:2:a:b:c:d') // '2001:db8:1:2::/64'
 */
export function callerAddress(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail] = ip.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * The lockout subject of a credential (`admin`, `user:25`, `account:…:password`, …) under one caller:
 * `<credential>@<address>/<token>`, so that one caller's guesses lock it for that caller only. One too
 * long for the column is replaced by its kind and hash.
 * @example lockoutSubject('user:25', { tokenName: 'teller', address: '192.0.2.7' }) // 'user:25@192.0.2.7/teller'
 */
export function lockoutSubject(credential: string, caller: Caller): string {
  const subject = `${credential}@${caller.address}/${encodeURIComponent(caller.tokenName)}`;
  return subject.length <= SUBJECT_MAX_LENGTH
    ? subject
    : `${credentialOf(credential)}#${createHash('sha256').update(subject).digest('base64url')}`;
}

/** The kind of credential a lockout subject belongs to: its prefix (`user:25@…` → `user`, `admin@…` → `admin`). */
const credentialOf = (subject: string) => /^[a-z]+/.exec(subject)?.[0] ?? 'other';

/**
 * A refused credential check is answered this many times one password check's cost after it began: far
 * enough above a check under ordinary load that a wrong password, an unknown credential and a locked one
 * are all answered at the floor, whatever ran before.
 */
const REFUSAL_CHECKS = 4;
/** …and never sooner than this, however fast the hash is here. */
const REFUSAL_MIN_MS = 250;
/** Checks timed at start; the fastest is the hash's cost here (the others may have met start-up work). */
const TIMED_CHECKS = 3;

/** How long a refusal takes at least, given one password check's cost (`checkMs`): 360 ms for 90. */
function refusalFloorMs(checkMs: number): number {
  return Math.max(REFUSAL_MIN_MS, Math.ceil(REFUSAL_CHECKS * checkMs));
}

/**
 * A scrypt hash of a random password, made once per process at start: unknown credentials are checked
 * against it. Making it and checking it twice time the configured hash here once and for all.
 */
interface Decoy {
  readonly hash: string;
  /** The fastest of the timed checks, in milliseconds. */
  readonly checkMs: number;
}
let decoyMade: Promise<Decoy> | undefined;

function decoy(): Promise<Decoy> {
  decoyMade ??= (async () => {
    const password = randomBytes(15).toString('base64url');
    let started = performance.now();
    const hash = await hashPassword(password);
    let checkMs = performance.now() - started;
    for (let i = 1; i < TIMED_CHECKS; i += 1) {
      started = performance.now();
      await scryptVerify(password, hash);
      checkMs = Math.min(checkMs, performance.now() - started);
    }
    return { hash, checkMs };
  })().catch((error: unknown) => {
    decoyMade = undefined;
    throw error;
  });
  return decoyMade;
}

/**
 * One password check: where the caller's failures are counted (the credential's own row for this caller,
 * or for a credential that does not exist, one row for all the caller's unknown credentials of its kind,
 * so that made-up names add no rows), where every caller's failures of it are paced, and what its
 * verification is remembered under.
 */
interface Attempt {
  readonly subject: string;
  readonly slowdown: string;
  readonly verification: string;
  readonly firstLockSeconds: number;
}

/** Keys remembered until an expiry, at most `capacity` of them (the oldest is forgotten first). */
class ExpiringKeys {
  private readonly expiries = new Map<string, number>();

  constructor(private readonly capacity: number) {}

  has(key: string, now: number): boolean {
    const expiry = this.expiries.get(key);
    if (expiry === undefined) return false;
    if (expiry > now) return true;
    this.expiries.delete(key);
    return false;
  }

  add(key: string, until: number): void {
    this.expiries.delete(key);
    if (this.expiries.size >= this.capacity) this.expiries.delete(this.expiries.keys().next().value!);
    this.expiries.set(key, until);
  }
}

export class Authenticator {
  /**
   * HMAC(subject ‖ secret ‖ stored hash) of recent verifications, one set per outcome: a password, right
   * or wrong, is not re-hashed with scrypt on every call. The stored hash is in the key, so a changed
   * password is verified afresh.
   */
  private readonly verified = new ExpiringKeys(VERIFICATION_CACHE_ENTRIES);
  private readonly refused = new ExpiringKeys(VERIFICATION_CACHE_ENTRIES);
  /**
   * The scrypt checks running, by the same key: calls that arrive while one runs wait for its outcome. Once
   * a remembered verification expires, every call in flight with those credentials misses at once; each
   * running its own scrypt (16 MB and about 80 ms of CPU) made a burst of CPU and memory a minute.
   */
  private readonly checking = new Map<string, Promise<boolean>>();
  private readonly cacheKey: Buffer;
  /** Picks a credential's slow-down row (`SLOWDOWN_BUCKETS`); the same on every instance of the store's secrets. */
  private readonly slowdownKey: Buffer;
  private readonly slowdownPolicy: SlowdownPolicy;
  private lastSweep = 0;
  private readonly verifyPassword: (password: string, stored: string) => Promise<boolean>;
  private adminHash: { value: string | undefined; readAt: number } | undefined;
  /**
   * Token → identity and when to look it up again: one database read per token per `tokenCacheMs`, not per
   * call. Keyed by the token as sent (only tokens found live are kept), so a call costs a map lookup, not a
   * SHA-256; the raw token is in the request's headers anyway.
   */
  private readonly liveTokens = new Map<string, { identity: BearerIdentity; until: number }>();
  private readonly verifiers: Record<CredentialKind, (fields: Fields, caller: Caller) => Promise<Verified | undefined>>;

  constructor(
    private readonly db: Db,
    private readonly secrets: Secrets,
    private readonly policy: AuthenticatorSettings,
    private readonly options: AuthenticatorOptions = {},
  ) {
    this.cacheKey = secrets.key('credential-cache');
    this.slowdownKey = secrets.key('lockout-slowdown');
    this.slowdownPolicy = { threshold: policy.lockoutSlowdownThreshold, windowSeconds: policy.lockoutSeconds };
    this.verifyPassword = options.verifyPassword ?? scryptVerify;
    // Made now, so that the first unknown credential costs one check like any other (a failure is tried again then).
    decoy().catch(() => undefined);
    this.verifiers = {
      AdministrativeCredentials: async ({ Password }, caller) =>
        (await this.verifyAdmin(String(Password), caller)) ? { userNumber: 0 } : undefined,
      UserNumberCredentials: async ({ UserNumber, Password }, caller) => {
        const user = await users.find(db, Number(UserNumber));
        const attempt = this.attempt(`user:${Number(UserNumber)}`, user?.passwordHash, caller);
        const who = { userNumber: Number(UserNumber) };
        const ok = await this.verifyThrottled(attempt, String(Password), user?.passwordHash, who);
        return ok ? { userNumber: Number(UserNumber) } : undefined;
      },
      // A TokenId of another bearer token's session is refused exactly like one never issued.
      TokenCredentials: async ({ TokenId }, { tokenName }) => {
        const session = await sessions.findLive(db, String(TokenId), tokenName, policy.sessionIdleSeconds);
        if (!session) return undefined;
        if (session.idleSeconds > SESSION_TOUCH_SECONDS) await sessions.touch(db, String(TokenId));
        return { userNumber: session.userNumber };
      },
      AccountNumberCredentials: async (fields, caller) => {
        const account = String(fields.AccountNumber);
        const ok = await this.verifyMemberSecret(`account:${account}`, account, fields, caller);
        return ok ? { memberAccount: account } : undefined;
      },
      HomeBankingCredentials: async (fields, caller) => {
        const { UserName, Password } = fields;
        const account = await lookups.homeBankingUser(db, String(UserName));
        const stored = account ? (await memberSecrets.find(db, account))?.homeBankingPasswordHash : undefined;
        const attempt = this.attempt(`homebanking:${String(UserName).toLowerCase()}`, stored, caller);
        const ok =
          (await this.verifyThrottled(attempt, String(Password), stored, account ? { memberAccount: account } : {})) &&
          (await this.verifySecondary(attempt, account, fields.SecondaryVerification));
        return ok ? { memberAccount: account } : undefined;
      },
      CardCredentials: async ({ CardNumber }) => {
        const account = await lookups.activeCard(db, secrets.lookupHash('pan', String(CardNumber)));
        return account ? { memberAccount: account } : undefined;
      },
      MICRCredentials: async ({ MICRNumber }) => {
        const account = await lookups.micrAccount(db, secrets.lookupHash('micr', String(MICRNumber)));
        return account ? { memberAccount: account } : undefined;
      },
      LookupCredentials: async (fields, caller) => {
        const match = await lookups.lookup(db, Number(fields.Type), String(fields.Value));
        const ok = await this.verifyMemberSecret(
          `lookup:${Number(fields.Type)}:${String(fields.Value)}`,
          match?.accountNumber,
          fields,
          caller,
        );
        return ok ? { memberAccount: match?.accountNumber } : undefined;
      },
    };
  }

  /** The live API token (or identity-provider JWT) of an `Authorization: Bearer` header; throws 401. */
  async authenticateBearer(header: string | undefined): Promise<BearerIdentity> {
    const match = header ? BEARER.exec(header) : null;
    if (!match) throw unauthenticated();
    const bearer = match[1]!;
    if (this.options.jwt && looksLikeJwt(bearer)) {
      const identity = await this.options.jwt.verify(bearer);
      if (!identity) throw unauthenticated('The bearer token is not valid');
      return identity;
    }
    return this.liveToken(bearer);
  }

  /** A live API token's identity, remembered for `tokenCacheMs` (never past the token's expiry); unknown ones are not. */
  private async liveToken(bearer: string): Promise<BearerIdentity> {
    const now = Date.now();
    const cached = this.liveTokens.get(bearer);
    if (cached) {
      if (cached.until > now) return cached.identity;
      this.liveTokens.delete(bearer);
    }
    const token = await tokens.findActive(this.db, bearer);
    if (!token) throw unauthenticated('The bearer token is not valid');
    const identity: BearerIdentity = { tokenName: token.name, scopes: token.scopes };
    if (this.policy.tokenCacheMs > 0) {
      const expires = token.expiresAt ? new Date(token.expiresAt).getTime() || now : Infinity;
      if (this.liveTokens.size >= TOKEN_CACHE_ENTRIES)
        this.liveTokens.delete(this.liveTokens.keys().next().value as string);
      this.liveTokens.set(bearer, { identity, until: Math.min(now + this.policy.tokenCacheMs, expires) });
    }
    return identity;
  }

  /**
   * Verifies every credential object given, presented under the bearer token `tokenName` from the address
   * `ip` (the request's); throws 403 when one fails, when a kind is not accepted by the operation or when
   * member credentials name different accounts; 400 when an object lacks a field.
   */
  async verifyCredentials(
    credentials: CredentialsBody,
    accepted: readonly CredentialKind[],
    tokenName: string,
    ip: string,
  ): Promise<CredentialIdentity> {
    const given = givenKinds(credentials);
    if (given.length === 0) throw forbidden('Credentials must hold at least one credential object');
    for (const kind of given) requireFields(kind, credentials[kind]!);
    if (given.some((kind) => !accepted.includes(kind))) throw forbidden();
    const caller: Caller = { tokenName, address: callerAddress(ip) };
    const started = performance.now();
    let userNumber = 0;
    let memberAccount: string | undefined;
    for (const kind of given) {
      const verified = await this.verifiers[kind](credentials[kind]!, caller).catch((error: unknown) => {
        if (error instanceof LockedOut) return error;
        throw error;
      });
      // A lockout is answered as a wrong password (the same problem, at the same time); only the records differ.
      if (verified instanceof LockedOut) throw await this.refusal(started, lockedOut(verified.who));
      if (!verified) throw await this.refusal(started);
      if (verified.userNumber !== undefined) userNumber = verified.userNumber;
      if (verified.memberAccount !== undefined) {
        if (memberAccount !== undefined && memberAccount !== verified.memberAccount) throw await this.refusal(started);
        memberAccount = verified.memberAccount;
      }
    }
    return { tokenName, userNumber, kinds: given, ...(memberAccount ? { memberAccount } : {}) };
  }

  /**
   * The 403 of refused credentials, once the refusal floor has passed since the check `started`: a wrong
   * password, an unknown credential and a locked one (which runs no hash) are answered alike, at a time
   * fixed at start (`credentialRefusalMs`, or four checks' time measured then) rather than learnt from
   * recent checks, which a burst of guesses would have stretched.
   * Only a check slower than the floor (a slowed credential, a saturated machine) answers later.
   */
  private async refusal(started: number, problem: Problem = forbidden()): Promise<Problem> {
    const floorMs = this.policy.credentialRefusalMs ?? refusalFloorMs((await decoy()).checkMs);
    // A timer may fire up to a millisecond before its time on this clock: it is never let answer early.
    for (let wait = started + floorMs - performance.now(); wait > 0; wait = started + floorMs - performance.now())
      await sleep(Math.ceil(wait));
    return problem;
  }

  /**
   * Who body credentials claim to be, without verifying them: in gateway mode the core verifies them, and
   * coregate checks what it can first. At least one credential object, each with its fields (400), of kinds
   * the operation accepts (403), and exactly one (400: the core's Credentials is an `xsd:choice`).
   * AccountNumberCredentials name the member's account, so the caller confines the call to it; the other
   * member kinds are confined by the core.
   */
  claimCredentials(
    credentials: CredentialsBody,
    accepted: readonly CredentialKind[],
    tokenName: string,
  ): CredentialIdentity {
    const given = givenKinds(credentials);
    if (given.length === 0) throw forbidden('Credentials must hold at least one credential object');
    for (const kind of given) requireFields(kind, credentials[kind]!);
    if (given.some((kind) => !accepted.includes(kind))) throw forbidden();
    if (given.length > 1) {
      throw validationFailed([
        { pointer: '/Credentials', detail: `the core takes one credential kind per call, not ${given.join(' and ')}` },
      ]);
    }
    const [kind] = given as [CredentialKind];
    const fields = credentials[kind]!;
    return {
      tokenName,
      userNumber: kind === 'UserNumberCredentials' ? Number(fields.UserNumber) : 0,
      kinds: given,
      ...(kind === 'AccountNumberCredentials' ? { memberAccount: String(fields.AccountNumber) } : {}),
    };
  }

  /**
   * The administrative password, throttled per caller: `lockoutThreshold` failures in a row lock it for
   * that caller for 1 s, each further lock before a success twice as long, up to `lockoutSeconds`. A
   * password this caller proved within `credentialCacheMs` passes without a database read (the hot path of
   * every administrative call); any other attempt is first checked against the lock and the slow-down.
   */
  private async verifyAdmin(password: string, caller: Caller): Promise<boolean> {
    const stored = await this.storedAdminHash();
    const attempt = this.attempt('admin', stored, caller, ADMIN_FIRST_LOCK_SECONDS);
    if (stored !== undefined && this.verified.has(this.cacheKeyOf(attempt.verification, password, stored), Date.now()))
      return true;
    return this.verifyThrottled(attempt, password, stored, { userNumber: 0 });
  }

  /**
   * Where a check of `credential` by `caller` counts: a credential without a stored hash (an unknown user,
   * account or name) counts in the caller's one row of unknown credentials of its kind. The administrative
   * password has a slow-down row of its own; other credentials share `SLOWDOWN_BUCKETS` per kind.
   */
  private attempt(
    credential: string,
    stored: string | null | undefined,
    caller: Caller,
    firstLockSeconds = this.policy.lockoutSeconds,
  ): Attempt {
    const kind = credentialOf(credential);
    const verification = lockoutSubject(credential, caller);
    if (kind === 'admin') return { subject: verification, slowdown: 'admin', verification, firstLockSeconds };
    const bucket =
      createHmac('sha256', this.slowdownKey).update(credential).digest().readUInt32BE(0) % SLOWDOWN_BUCKETS;
    return {
      subject: stored ? verification : lockoutSubject(`${kind}:?`, caller),
      slowdown: `${kind}#${bucket}`,
      verification,
      firstLockSeconds,
    };
  }

  /**
   * A password check under lockout and slow-down. A slowed credential waits `lockoutSlowdownMs` first,
   * right password or not. A caller locked out of it fails without a check (a locked caller costs no CPU);
   * the refusal floor (`refusal`) then answers it when it answers a wrong password, so that the time tells
   * neither a lock from a wrong password nor the one row of unknown credentials from a known one. A
   * credential without a stored hash is checked against the decoy, so that it costs what a wrong password
   * of a known one costs. A failure counts towards the caller's lock and the credential's slow-down; a
   * success clears the caller's count. A locked caller's check throws `LockedOut` naming `who` the
   * credential is, for the records.
   */
  private async verifyThrottled(
    attempt: Attempt,
    password: string,
    stored: string | null | undefined,
    who: Verified,
  ): Promise<boolean> {
    const state = await lockouts.state(this.db, attempt.subject, attempt.slowdown, this.slowdownPolicy);
    if (state.slowed) await sleep(this.policy.lockoutSlowdownMs);
    if (state.locked) {
      this.options.onLockout?.(credentialOf(attempt.subject), 'refused');
      throw new LockedOut(who);
    }
    const against = stored || (await decoy()).hash;
    const key = this.cacheKeyOf(attempt.verification, password, against);
    const ok = (await this.verifyCached(key, password, against)) && !!stored;
    if (!ok) {
      await this.countFailure(attempt);
    } else if (state.failures > 0 || state.locks > 0) {
      await lockouts.clear(this.db, attempt.subject);
    }
    return ok;
  }

  /**
   * A wrong password or second factor: counts towards the caller's lock (telling `onLockout` when it
   * locks) and the credential's slow-down, and now and then sweeps the rows that no longer count.
   */
  private async countFailure(attempt: Attempt): Promise<void> {
    const locked = await lockouts.fail(this.db, attempt.subject, {
      threshold: this.policy.lockoutThreshold,
      lockSeconds: this.policy.lockoutSeconds,
      firstLockSeconds: attempt.firstLockSeconds,
    });
    await lockouts.slowDown(this.db, attempt.slowdown, this.slowdownPolicy);
    if (locked) this.options.onLockout?.(credentialOf(attempt.subject), 'locked');
    const now = Date.now();
    if (now - this.lastSweep >= (this.options.lockoutSweepMs ?? LOCKOUT_SWEEP_MS)) {
      this.lastSweep = now;
      // Rows are added only by failures, so sweeping after them bounds the table. A failed sweep is
      // tried again after the next interval: until then, rows that no longer count are only kept longer.
      await lockouts.sweep(this.db, this.policy.lockoutSeconds).catch(() => undefined);
    }
  }

  private cacheKeyOf(subject: string, password: string, stored: string): string {
    return createHmac('sha256', this.cacheKey).update(`${subject}\0${password}\0${stored}`).digest('base64');
  }

  /**
   * scrypt, unless this outcome is remembered (for `credentialCacheMs`, either outcome) or being checked
   * for another call now (one scrypt serves both). `key` is `cacheKeyOf` the check.
   */
  private async verifyCached(key: string, password: string, stored: string): Promise<boolean> {
    const now = Date.now();
    if (this.verified.has(key, now)) return true;
    if (this.refused.has(key, now)) return false;
    let check = this.checking.get(key);
    if (!check) {
      check = this.verifyPassword(password, stored).then((ok) => {
        if (this.policy.credentialCacheMs > 0)
          (ok ? this.verified : this.refused).add(key, Date.now() + this.policy.credentialCacheMs);
        return ok;
      });
      this.checking.set(key, check);
      void check.then(
        () => this.checking.delete(key),
        () => this.checking.delete(key),
      );
    }
    return check;
  }

  /**
   * A member's secret (the home-banking password or the audio response code, whichever the credential
   * carries: the core takes one) and its second factor, under the lockout of `credential` for `caller`. An
   * unknown account fails like a wrong secret. `OptionalUserCode` names one of the member's home-banking
   * users; the store keeps one per account, so it is not checked.
   */
  private async verifyMemberSecret(
    credential: string,
    account: string | undefined,
    fields: Fields,
    caller: Caller,
  ): Promise<boolean> {
    const secret = account ? await memberSecrets.find(this.db, account) : undefined;
    const [given, stored, what] =
      fields.AudioAccessCode !== undefined
        ? [fields.AudioAccessCode, secret?.audioAccessCodeHash, 'audio']
        : [fields.HomeBankingPassword, secret?.homeBankingPasswordHash, 'password'];
    const attempt = this.attempt(`${credential}:${what}`, stored, caller);
    return (
      (await this.verifyThrottled(attempt, String(given), stored, account ? { memberAccount: account } : {})) &&
      (await this.verifySecondary(attempt, account, fields.SecondaryVerification))
    );
  }

  /**
   * The core's SecondaryVerification: the SSN or its last four digits must be on one of the member's name
   * records. The store keeps no second password or audio code, so one that is given cannot verify: it is
   * refused rather than ignored. A failure counts towards the caller's lockout like a wrong secret.
   */
  private async verifySecondary(attempt: Attempt, account: string | undefined, given: unknown): Promise<boolean> {
    if (given === undefined) return true;
    const factors = given as Fields;
    const ssns = account ? await lookups.accountSsns(this.db, this.secrets, account) : [];
    const ok =
      factors.SecondaryHomeBankingPassword === undefined &&
      factors.SecondaryAudioAccessCode === undefined &&
      (factors.SocialSecurityNumber === undefined || ssns.includes(String(factors.SocialSecurityNumber))) &&
      (factors.SSNLastFourDigits === undefined || ssns.some((ssn) => ssn.endsWith(String(factors.SSNLastFourDigits))));
    if (!ok) await this.countFailure(attempt);
    return ok;
  }

  /** Whether `password` is the administrative password in force; no lockout counts it (a check of the service's own). */
  async isAdminPassword(password: string): Promise<boolean> {
    const stored = await this.storedAdminHash();
    return stored !== undefined && (await this.verifyPassword(password, stored));
  }

  private async storedAdminHash(): Promise<string | undefined> {
    if (this.options.adminPasswordHash) return this.options.adminPasswordHash;
    const now = Date.now();
    if (!this.adminHash || now - this.adminHash.readAt > ADMIN_HASH_TTL_MS) {
      this.adminHash = { value: await settings.get(this.db, SETTING.adminPasswordHash), readAt: now };
    }
    return this.adminHash.value;
  }
}

/**
 * The credential kinds a body gives. The spec shows the member-level objects empty, so an empty one counts as
 * absent; it never shows an empty AdministrativeCredentials, UserNumberCredentials or TokenCredentials, so an
 * empty one is given, and `requireFields` names what it lacks (400, not the 403 of no credential at all).
 */
function givenKinds(credentials: CredentialsBody): CredentialKind[] {
  return (Object.keys(credentials) as CredentialKind[]).filter(
    (kind) => Object.keys(credentials[kind] ?? {}).length > 0 || !MEMBER_CREDENTIAL_KINDS.includes(kind),
  );
}

/**
 * Required fields of a given credential object (the schema accepts empty objects, see envelope.ts), and
 * exactly one of each secret choice (the core's `xsd:choice`: a password or an audio code, never both).
 */
function requireFields(kind: CredentialKind, fields: Fields): void {
  const schema: Record<string, TSchema> = CREDENTIAL_SCHEMAS[kind];
  const missing = Object.keys(schema)
    .filter((name) => !Type.IsOptional(schema[name]) && fields[name] === undefined)
    .map((name) => ({ pointer: `/Credentials/${kind}/${name}`, detail: `must have required property '${name}'` }));
  const choice = CREDENTIAL_SECRET_CHOICES[kind];
  if (choice) {
    const given = choice.filter((name) => fields[name] !== undefined);
    if (given.length !== 1) {
      missing.push({
        pointer: `/Credentials/${kind}/${given[1] ?? choice[0]}`,
        detail: `${choice.join(' or ')} is required, and only one of them (the core takes one)`,
      });
    }
  }
  if (missing.length > 0) throw validationFailed(missing);
}
