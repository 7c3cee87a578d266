/**
 * Who is calling: the bearer token (401 when missing or not live) and the body `Credentials`, every one
 * of which must verify (403 otherwise, without saying which part failed).
 */
import { createHmac } from 'node:crypto';
import { Type, type TSchema } from 'typebox';
import type { Config } from '../config.js';
import { forbidden, unauthenticated, validationFailed } from '../http/problems.js';
import { CREDENTIAL_SCHEMAS, type CredentialKind, type CredentialsBody } from '../operations/envelope.js';
import { settings, SETTING, tokens, users, type Scope } from '../store/access.js';
import type { Db } from '../store/database.js';
import { verifyPassword } from './passwords.js';
import type { Secrets } from './secrets.js';

export interface BearerIdentity {
  readonly tokenName: string;
  readonly scopes: readonly Scope[];
}

export interface CredentialIdentity {
  /** The core user number the call acts as: from UserNumberCredentials, 0 for administrative calls. */
  readonly userNumber: number;
  readonly kinds: readonly CredentialKind[];
}

const BEARER = /^Bearer ([A-Za-z0-9._~+/=-]{1,512})$/;
const ADMIN_HASH_TTL_MS = 5_000;

export class Authenticator {
  /** HMAC(secret ‖ stored hash) → expiry: a password is not re-hashed with scrypt on every call. */
  private readonly verified = new Map<string, number>();
  private readonly cacheKey: Buffer;
  private adminHash: { value: string | undefined; readAt: number } | undefined;

  constructor(
    private readonly db: Db,
    secrets: Secrets,
    private readonly config: Pick<Config, 'credentialCacheMs'>,
    private readonly configuredAdminHash: string | undefined = process.env.COREGATE_ADMIN_PASSWORD_HASH,
  ) {
    this.cacheKey = secrets.key('credential-cache');
  }

  /** The live API token of an `Authorization: Bearer` header; throws 401. */
  async authenticateBearer(header: string | undefined): Promise<BearerIdentity> {
    const match = header ? BEARER.exec(header) : null;
    if (!match) throw unauthenticated();
    const token = await tokens.findActive(this.db, match[1]!);
    if (!token) throw unauthenticated('The bearer token is not valid');
    return { tokenName: token.name, scopes: token.scopes };
  }

  /**
   * Verifies every credential object given; throws 403 when one fails or when a kind is not accepted by
   * the operation, 400 when a non-empty object lacks a required field.
   */
  async verifyCredentials(credentials: CredentialsBody, accepted: readonly CredentialKind[]): Promise<CredentialIdentity> {
    const given = (Object.keys(credentials) as CredentialKind[]).filter(
      (kind) => Object.keys(credentials[kind] ?? {}).length > 0,
    );
    if (given.length === 0) throw forbidden('Credentials must hold at least one credential object');
    for (const kind of given) requireFields(kind, credentials[kind]!);
    if (given.some((kind) => !accepted.includes(kind))) throw forbidden();
    let userNumber = 0;
    for (const kind of given) {
      const fields = credentials[kind]!;
      switch (kind) {
        case 'AdministrativeCredentials':
          if (!(await this.verifyAdmin(String(fields.Password)))) throw forbidden();
          break;
        case 'UserNumberCredentials':
          userNumber = Number(fields.UserNumber);
          if (!(await this.verifyUser(userNumber, String(fields.Password)))) throw forbidden();
          break;
        default:
          // Sessions and member-level credentials have no verifier configured: they cannot verify.
          throw forbidden();
      }
    }
    return { userNumber, kinds: given };
  }

  private async verifyAdmin(password: string): Promise<boolean> {
    const stored = await this.storedAdminHash();
    return stored !== undefined && (await this.verifyCached('admin', password, stored));
  }

  private async verifyUser(userNumber: number, password: string): Promise<boolean> {
    const user = await users.find(this.db, userNumber);
    return user !== undefined && (await this.verifyCached(`user:${userNumber}`, password, user.passwordHash));
  }

  private async verifyCached(subject: string, password: string, stored: string): Promise<boolean> {
    const key = createHmac('sha256', this.cacheKey).update(`${subject}\0${password}\0${stored}`).digest('base64');
    const now = Date.now();
    const expiry = this.verified.get(key);
    if (expiry !== undefined && expiry > now) return true;
    if (!(await verifyPassword(password, stored))) return false;
    if (this.config.credentialCacheMs > 0) {
      if (this.verified.size > 10_000) this.verified.clear();
      this.verified.set(key, now + this.config.credentialCacheMs);
    }
    return true;
  }

  private async storedAdminHash(): Promise<string | undefined> {
    if (this.configuredAdminHash) return this.configuredAdminHash;
    const now = Date.now();
    if (!this.adminHash || now - this.adminHash.readAt > ADMIN_HASH_TTL_MS) {
      this.adminHash = { value: await settings.get(this.db, SETTING.adminPasswordHash), readAt: now };
    }
    return this.adminHash.value;
  }
}

/** Required fields of a non-empty credential object (the schema accepts empty objects, see envelope.ts). */
function requireFields(kind: CredentialKind, fields: Record<string, unknown>): void {
  const schema: Record<string, TSchema> = CREDENTIAL_SCHEMAS[kind];
  const missing = Object.keys(schema).filter((name) => !Type.IsOptional(schema[name]) && fields[name] === undefined);
  if (missing.length > 0) {
    throw validationFailed(
      missing.map((name) => ({ pointer: `/Credentials/${kind}/${name}`, detail: `must have required property '${name}'` })),
    );
  }
}
