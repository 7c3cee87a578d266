/**
 * What an operation is: its name and path family, the scope and credential kinds it accepts, its
 * request and response schemas, and the function that answers it. The HTTP layer exposes every
 * operation in `index.ts` the same way.
 */
import type { TSchema } from 'typebox';
import type { Family } from '../catalog/index.js';
import type { Config } from '../config.js';
import type { CredentialIdentity } from '../security/authenticator.js';
import type { Secrets } from '../crypto/secrets.js';
import type { Scope } from '../contract/scopes.js';
import type { Db } from '../store/database.js';
import { MEMBER_CREDENTIAL_KINDS, type CredentialKind } from '../contract/envelope.js';

export type Service = 'findby' | 'corptransfer' | 'account' | 'collateral' | 'usermanagement';

export interface OperationContext {
  readonly db: Db;
  readonly secrets: Secrets;
  readonly config: Config;
  readonly caller: CredentialIdentity;
}

export interface Operation<Body = never> {
  /** The spec's operation name; also the response `MessageId` where the spec shows one. */
  readonly name: string;
  readonly family: Family;
  readonly service: Service;
  readonly summary: string;
  /** The token scope the operation needs; none for session management, which any live token may use. */
  readonly scope?: Scope;
  /** Credential kinds accepted by default; `COREGATE_CREDENTIALS_<SERVICE>` may change them. */
  readonly credentials: readonly CredentialKind[];
  /**
   * The account a request acts on, for member confinement (DESIGN: member-level credentials reach only
   * their own account). Without it, member-level credentials are never accepted.
   */
  readonly accountOf?: (body: Body) => string;
  /** Accounts to name in the audit trail when the request names none (e.g. the accounts a lookup found). */
  readonly auditAccounts?: (result: unknown) => readonly string[];
  /**
   * A write runs in one transaction (context.db is that transaction) and honours `Idempotency-Key`.
   */
  readonly writes?: boolean;
  /** Body properties besides the envelope (`Credentials`, `nxAttributes`). */
  readonly request: Readonly<Record<string, TSchema>>;
  readonly response: TSchema;
  handle(context: OperationContext, body: Body): Promise<unknown>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- operations of every body type in one list
export type AnyOperation = Operation<any>;

export const FAMILY_PATH: Record<Family, string> = { P1: '/gw/627/persistent', P2: '/gw/627/2022.01' };

/** @example operationPath(findByActiveCard) // '/gw/627/persistent/findby/findByActiveCard' */
export function operationPath(operation: Pick<AnyOperation, 'family' | 'service' | 'name'>): string {
  return `${FAMILY_PATH[operation.family]}/${operation.service}/${operation.name}`;
}

/** Credential kinds accepted by default (DESIGN: FindBy takes admin, user or token credentials only). */
export const STAFF_CREDENTIALS: readonly CredentialKind[] = [
  'AdministrativeCredentials',
  'UserNumberCredentials',
  'TokenCredentials',
];

/** Staff credentials plus the member-level ones, for operations that confine a member to an account. */
export const STAFF_AND_MEMBER_CREDENTIALS: readonly CredentialKind[] = [...STAFF_CREDENTIALS, ...MEMBER_CREDENTIAL_KINDS];
