/**
 * What an operation is: its name and path family, the scope and credential kinds it accepts, its
 * request and response schemas, and the function that answers it. The HTTP layer exposes every
 * operation in `index.ts` the same way.
 */
import type { Static, TObject, TProperties, TSchema } from 'typebox';
import type { Family } from '../catalog/index.js';
import { DEFAULT_SYM, type Config } from '../config.js';
import type { CredentialIdentity } from '../security/authenticator.js';
import type { Secrets } from '../crypto/secrets.js';
import type { Scope } from '../contract/scopes.js';
import type { Db } from '../database/database.js';
import type { ReadPlan } from '../store/record-tree.js';
import { MEMBER_CREDENTIAL_KINDS, type CredentialKind, type CredentialsBody } from '../contract/envelope.js';

export type Service = 'findby' | 'corptransfer' | 'account' | 'collateral' | 'usermanagement';

export interface OperationContext {
  readonly db: Db;
  readonly secrets: Secrets;
  readonly config: Config;
  readonly caller: CredentialIdentity;
}

/** The envelope every request body has (spec: "Request envelope (all operations)"). */
export interface Envelope {
  readonly Credentials: CredentialsBody;
  readonly nxAttributes?: { readonly customFields?: Readonly<Record<string, unknown>> };
}

/** A request body as the operation's request schema describes it, plus the envelope. */
export type RequestBody<Request extends TProperties> = Static<TObject<Request>> & Envelope;

/**
 * An operation. Its body type is inferred from `request` and its result is checked against `response`
 * (`defineOperation`); everything the edges need to expose it (scope, credentials, the accounts and
 * collateral it touches, whether it writes) is a field here, so a new service edits no file in http/.
 */
export interface Operation<Request extends TProperties = TProperties, Response extends TSchema = TSchema> {
  /** The spec's operation name; also the response `MessageId` where the spec shows one. */
  readonly name: string;
  readonly family: Family;
  readonly service: Service;
  readonly summary: string;
  /** The token scope the operation needs; none for session management, which any live token may use. */
  readonly scope?: Scope;
  /** Credential kinds accepted by default; `COREGATE_CREDENTIALS_<SERVICE>` may change them unless `fixedCredentials`. */
  readonly credentials: readonly CredentialKind[];
  /** The credential kinds are not configurable (session management: logon takes a user number, logoff a TokenId). */
  readonly fixedCredentials?: boolean;
  /**
   * The account a request acts on, for member confinement (DESIGN: member-level credentials reach only
   * their own account) and the audit trail. Without it, member-level credentials are never accepted.
   */
  accountOf?(body: RequestBody<Request>): string;
  /** The collateral a request reads, for the audit trail. */
  collateralOf?(body: RequestBody<Request>): string;
  /** Accounts to name in the audit trail when the request names none (e.g. the accounts a lookup found). */
  auditAccounts?(result: Static<Response>): readonly string[];
  /** A write runs in one transaction (context.db is that transaction) and honours `Idempotency-Key`. */
  readonly writes?: boolean;
  /**
   * For a read: what its answer holds of each record (the selected fields, the child lists and their own
   * plans), as the store answers it. A gateway shapes a core's answer by it. Checks the request's queries
   * (400 INVALID_QUERY) as the handler would.
   */
  readPlan?(body: RequestBody<Request>): ReadPlan;
  /**
   * For a gateway: what of the request a core's messages can carry, and how the core's answer becomes the
   * operation's. A share update sends only the fields the core's elements can carry and reports the others
   * failed itself (DESIGN, Errors); `request` undefined means nothing is left to send, and `answer` is
   * called without the core's.
   */
  coreRequest?(body: RequestBody<Request>, core: CoreUpdateObject): CoreRequest;
  /** Body properties besides the envelope (`Credentials`, `nxAttributes`). */
  readonly request: Request;
  readonly response: Response;
  handle(context: OperationContext, body: RequestBody<Request>): Promise<Static<Response>>;
}

/**
 * What the core's release takes of an update: the fields its update object holds (2020.00's
 * `<Record>UpdateableFields` lack the read-only ones), and the release's name for messages.
 */
export interface CoreUpdateObject {
  readonly release: string;
  readonly fields: ReadonlySet<string> | undefined;
}

/** What a gateway sends the core for a request, and how it answers from the core's answer (`coreRequest`). */
export interface CoreRequest {
  readonly request: Record<string, unknown> | undefined;
  answer(core: Record<string, unknown> | undefined): Record<string, unknown>;
}

/**
 * Declares an operation: the body its handler receives is typed by `request`, and what it returns must
 * match `response` (the route validates the body against the same schema before `handle` runs).
 *
 * @example
 * defineOperation({
 *   name: 'findBySSN', family: 'P1', service: 'findby', summary: '…', scope: 'findby', credentials: STAFF_CREDENTIALS,
 *   request: { SSN: Type.String() },
 *   response: Type.Object({ AccountNumber: Type.Array(Type.String()) }),
 *   handle: async (context, body) => ({ AccountNumber: await find(body.SSN) }), // body.SSN: string
 * });
 */
export function defineOperation<const Request extends TProperties, const Response extends TSchema>(
  operation: Operation<Request, Response>,
): Operation<Request, Response> {
  return operation;
}

/**
 * Operations of every body type, in one list. The edges hand each operation the body its own request
 * schema validated, which no single static type can describe.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
export type AnyOperation = Operation<any, any>;

/** The path segment of each family (spec: `P1` = `/gw/627/persistent`, `P2` = `/gw/627/2022.01`). */
export const FAMILY_SEGMENT: Record<Family, string> = { P1: 'persistent', P2: '2022.01' };

/**
 * An operation's path on a Sym (the spec's 627 unless told; a gateway may front several Syms).
 * @example operationPath(findByActiveCard) // '/gw/627/persistent/findby/findByActiveCard'
 */
export function operationPath(operation: Pick<AnyOperation, 'family' | 'service' | 'name'>, sym = DEFAULT_SYM): string {
  return `/gw/${sym}/${FAMILY_SEGMENT[operation.family]}/${operation.service}/${operation.name}`;
}

/** Credential kinds accepted by default (DESIGN: FindBy takes admin, user or token credentials only). */
export const STAFF_CREDENTIALS: readonly CredentialKind[] = [
  'AdministrativeCredentials',
  'UserNumberCredentials',
  'TokenCredentials',
];

/** Staff credentials plus the member-level ones, for operations that confine a member to an account. */
export const STAFF_AND_MEMBER_CREDENTIALS: readonly CredentialKind[] = [
  ...STAFF_CREDENTIALS,
  ...MEMBER_CREDENTIAL_KINDS,
];
