/**
 * Who is calling: the bearer token (401 when missing or not live) and the body `Credentials`, every one
 * of which must verify (403 otherwise, without saying which part failed). Member-level credentials
 * confine the call to the member's account.
 */
import { createHash, createHmac } from 'node:crypto';
import { Type, type TSchema } from 'typebox';
import type { Config } from '../config.js';
import { forbidden, unauthenticated, validationFailed } from '../contract/problems.js';
import {
  CREDENTIAL_SCHEMAS,
  CREDENTIAL_SECRET_CHOICES,
  type CredentialKind,
  type CredentialsBody,
} from '../contract/envelope.js';
import { type Scope } from '../contract/scopes.js';
import { hashToken, lockouts, memberSecrets, sessions, settings, SETTING, tokens, users } from '../store/access.js';
import type { Db } from '../store/database.js';
import { lookups } from '../store/lookups.js';
import { looksLikeJwt, type JwtVerifier } from './jwt.js';
import { verifyPassword as scryptVerify } from '../crypto/passwords.js';
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
  'credentialCacheMs' | 'tokenCacheMs' | 'lockoutThreshold' | 'lockoutSeconds' | 'sessionIdleSeconds'
>;

/** What one verified credential object says about the caller. */
interface Verified {
  readonly userNumber?: number;
  readonly memberAccount?: string;
}

type Fields = Record<string, unknown>;

export interface AuthenticatorOptions {
  readonly jwt?: JwtVerifier;
  readonly adminPasswordHash?: string;
  /** The scrypt check, replaceable so that tests can count how often a password is really hashed. */
  readonly verifyPassword?: (password: string, stored: string) => Promise<boolean>;
  /**
   * Told when wrong passwords lock a credential (`locked`) and when a locked one is tried (`refused`), with
   * its kind (`admin`, `user`, `account`, `homebanking`, `lookup`): for the metrics.
   */
  readonly onLockout?: (credential: string, event: 'locked' | 'refused') => void;
}

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{1,4096})$/;
const ADMIN_HASH_TTL_MS = 5_000;
/** Live API tokens remembered at most; the oldest is forgotten first. */
const TOKEN_CACHE_ENTRIES = 10_000;
/** A session's last use is written at most this often, not on every call. */
const SESSION_TOUCH_SECONDS = 30;
/** Password verifications remembered at most, for each outcome; the oldest is forgotten first. */
const VERIFICATION_CACHE_ENTRIES = 10_000;
/** The administrative password's first lock under one bearer token; each further one doubles, up to `lockoutSeconds`. */
const ADMIN_FIRST_LOCK_SECONDS = 1;
/** Longest lockout subject (`credential_lockout.subject`). */
const SUBJECT_MAX_LENGTH = 160;

/**
 * The lockout subject of the administrative password under one bearer token: guessing under one token
 * never locks the password for the others. A name too long for the column is replaced by its hash.
 */
export function adminLockoutSubject(tokenName: string): string {
  const subject = `admin@token:${tokenName}`;
  return subject.length <= SUBJECT_MAX_LENGTH
    ? subject
    : `admin@token#${createHash('sha256').update(tokenName).digest('base64url')}`;
}

/** The kind of credential a lockout subject belongs to: its prefix (`user:25` → `user`, `admin@token:x` → `admin`). */
const credentialOf = (subject: string) => /^[a-z]+/.exec(subject)?.[0] ?? 'other';

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
  private readonly verifyPassword: (password: string, stored: string) => Promise<boolean>;
  private adminHash: { value: string | undefined; readAt: number } | undefined;
  /** Token hash → identity and when to look it up again: one database read per token per `tokenCacheMs`, not per call. */
  private readonly liveTokens = new Map<string, { identity: BearerIdentity; until: number }>();
  private readonly verifiers: Record<
    CredentialKind,
    (fields: Fields, tokenName: string) => Promise<Verified | undefined>
  >;

  constructor(
    private readonly db: Db,
    private readonly secrets: Secrets,
    private readonly policy: AuthenticatorSettings,
    private readonly options: AuthenticatorOptions = {},
  ) {
    this.cacheKey = secrets.key('credential-cache');
    this.verifyPassword = options.verifyPassword ?? scryptVerify;
    this.verifiers = {
      AdministrativeCredentials: async ({ Password }, tokenName) =>
        (await this.verifyAdmin(String(Password), tokenName)) ? { userNumber: 0 } : undefined,
      UserNumberCredentials: async ({ UserNumber, Password }) => {
        const user = await users.find(db, Number(UserNumber));
        const ok = await this.verifyLocked(`user:${UserNumber}`, String(Password), user?.passwordHash);
        return ok ? { userNumber: Number(UserNumber) } : undefined;
      },
      // A TokenId of another bearer token's session is refused exactly like one never issued.
      TokenCredentials: async ({ TokenId }, tokenName) => {
        const session = await sessions.findLive(db, String(TokenId), tokenName, policy.sessionIdleSeconds);
        if (!session) return undefined;
        if (session.idleSeconds > SESSION_TOUCH_SECONDS) await sessions.touch(db, String(TokenId));
        return { userNumber: session.userNumber };
      },
      AccountNumberCredentials: async (fields) => {
        const account = String(fields.AccountNumber);
        const ok = await this.verifyMemberSecret(`account:${account}`, account, fields);
        return ok ? { memberAccount: account } : undefined;
      },
      HomeBankingCredentials: async (fields) => {
        const { UserName, Password } = fields;
        const account = await lookups.homeBankingUser(db, String(UserName));
        const secret = account ? await memberSecrets.find(db, account) : undefined;
        const subject = `homebanking:${String(UserName).toLowerCase()}`;
        const ok =
          (await this.verifyLocked(subject, String(Password), secret?.homeBankingPasswordHash)) &&
          (await this.verifySecondary(subject, account, fields.SecondaryVerification));
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
      LookupCredentials: async (fields) => {
        const match = await lookups.lookup(db, Number(fields.Type), String(fields.Value));
        const ok = await this.verifyMemberSecret(
          `lookup:${fields.Type}:${String(fields.Value)}`,
          match?.accountNumber,
          fields,
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
    const key = hashToken(bearer).toString('base64');
    const now = Date.now();
    const cached = this.liveTokens.get(key);
    if (cached && cached.until > now) return cached.identity;
    this.liveTokens.delete(key);
    const token = await tokens.findActive(this.db, bearer);
    if (!token) throw unauthenticated('The bearer token is not valid');
    const identity: BearerIdentity = { tokenName: token.name, scopes: token.scopes };
    if (this.policy.tokenCacheMs > 0) {
      const expires = token.expiresAt ? new Date(token.expiresAt).getTime() || now : Infinity;
      if (this.liveTokens.size >= TOKEN_CACHE_ENTRIES)
        this.liveTokens.delete(this.liveTokens.keys().next().value as string);
      this.liveTokens.set(key, { identity, until: Math.min(now + this.policy.tokenCacheMs, expires) });
    }
    return identity;
  }

  /**
   * Verifies every credential object given, presented under the bearer token `tokenName`; throws 403 when
   * one fails, when a kind is not accepted by the operation or when member credentials name different
   * accounts; 400 when an object lacks a field.
   */
  async verifyCredentials(
    credentials: CredentialsBody,
    accepted: readonly CredentialKind[],
    tokenName: string,
  ): Promise<CredentialIdentity> {
    const given = (Object.keys(credentials) as CredentialKind[]).filter(
      (kind) => Object.keys(credentials[kind] ?? {}).length > 0,
    );
    if (given.length === 0) throw forbidden('Credentials must hold at least one credential object');
    for (const kind of given) requireFields(kind, credentials[kind]!);
    if (given.some((kind) => !accepted.includes(kind))) throw forbidden();
    let userNumber = 0;
    let memberAccount: string | undefined;
    for (const kind of given) {
      const verified = await this.verifiers[kind](credentials[kind]!, tokenName);
      if (!verified) throw forbidden();
      if (verified.userNumber !== undefined) userNumber = verified.userNumber;
      if (verified.memberAccount !== undefined) {
        if (memberAccount !== undefined && memberAccount !== verified.memberAccount) throw forbidden();
        memberAccount = verified.memberAccount;
      }
    }
    return { tokenName, userNumber, kinds: given, ...(memberAccount ? { memberAccount } : {}) };
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
    const given = (Object.keys(credentials) as CredentialKind[]).filter(
      (kind) => Object.keys(credentials[kind] ?? {}).length > 0,
    );
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
   * The administrative password, throttled per bearer token: `lockoutThreshold` failures in a row lock it
   * under that token for 1 s, each further lock before a success twice as long, up to `lockoutSeconds`.
   * A password this token proved within `credentialCacheMs` passes without a database read (the hot path
   * of every administrative call); any other attempt is first checked against the lock.
   */
  private async verifyAdmin(password: string, tokenName: string): Promise<boolean> {
    const subject = adminLockoutSubject(tokenName);
    const stored = await this.storedAdminHash();
    if (stored !== undefined && this.verified.has(this.cacheKeyOf(subject, password, stored), Date.now())) return true;
    return this.verifyLocked(subject, password, stored, ADMIN_FIRST_LOCK_SECONDS);
  }

  /**
   * A password check under lockout: a locked subject fails without a check; a failure counts towards the
   * lock and a success clears the count; an unknown subject (no stored hash) fails and counts like a
   * wrong password.
   */
  private async verifyLocked(
    subject: string,
    password: string,
    stored: string | null | undefined,
    firstLockSeconds = this.policy.lockoutSeconds,
  ): Promise<boolean> {
    const lockout = await lockouts.state(this.db, subject);
    if (lockout?.locked) {
      this.options.onLockout?.(credentialOf(subject), 'refused');
      return false;
    }
    const ok = stored ? await this.verifyCached(subject, password, stored) : false;
    if (!ok) {
      await this.countFailure(subject, firstLockSeconds);
    } else if (lockout) {
      await lockouts.clear(this.db, subject);
    }
    return ok;
  }

  /** A wrong password or second factor: counts towards the subject's lock (and tells `onLockout` when it locks). */
  private async countFailure(subject: string, firstLockSeconds: number): Promise<void> {
    const locked = await lockouts.fail(this.db, subject, {
      threshold: this.policy.lockoutThreshold,
      lockSeconds: this.policy.lockoutSeconds,
      firstLockSeconds,
    });
    if (locked) this.options.onLockout?.(credentialOf(subject), 'locked');
  }

  private cacheKeyOf(subject: string, password: string, stored: string): string {
    return createHmac('sha256', this.cacheKey).update(`${subject}\0${password}\0${stored}`).digest('base64');
  }

  /**
   * scrypt, unless this outcome is remembered (for `credentialCacheMs`, either outcome) or being checked
   * for another call now (one scrypt serves both).
   */
  private async verifyCached(subject: string, password: string, stored: string): Promise<boolean> {
    const key = this.cacheKeyOf(subject, password, stored);
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
   * carries: the core takes one) and its second factor, under the lockout of `subject`. An unknown account
   * fails like a wrong secret. `OptionalUserCode` names one of the member's home-banking users; the store
   * keeps one per account, so it is not checked.
   */
  private async verifyMemberSecret(subject: string, account: string | undefined, fields: Fields): Promise<boolean> {
    const secret = account ? await memberSecrets.find(this.db, account) : undefined;
    const [given, stored, what] =
      fields.AudioAccessCode !== undefined
        ? [fields.AudioAccessCode, secret?.audioAccessCodeHash, 'audio']
        : [fields.HomeBankingPassword, secret?.homeBankingPasswordHash, 'password'];
    const lockSubject = `${subject}:${what}`;
    return (
      (await this.verifyLocked(lockSubject, String(given), stored)) &&
      (await this.verifySecondary(lockSubject, account, fields.SecondaryVerification))
    );
  }

  /**
   * The core's SecondaryVerification: the SSN or its last four digits must be on one of the member's name
   * records. The store keeps no second password or audio code, so one that is given cannot verify: it is
   * refused rather than ignored. A failure counts towards the subject's lockout like a wrong secret.
   */
  private async verifySecondary(subject: string, account: string | undefined, given: unknown): Promise<boolean> {
    if (given === undefined) return true;
    const factors = given as Fields;
    const ssns = account ? await lookups.accountSsns(this.db, this.secrets, account) : [];
    const ok =
      factors.SecondaryHomeBankingPassword === undefined &&
      factors.SecondaryAudioAccessCode === undefined &&
      (factors.SocialSecurityNumber === undefined || ssns.includes(String(factors.SocialSecurityNumber))) &&
      (factors.SSNLastFourDigits === undefined || ssns.some((ssn) => ssn.endsWith(String(factors.SSNLastFourDigits))));
    if (!ok) await this.countFailure(subject, this.policy.lockoutSeconds);
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
 * Required fields of a non-empty credential object (the schema accepts empty objects, see envelope.ts), and
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
