/**
 * The admin API's messages (`/admin/*`, scope `admin`): what each call takes and answers, as TypeBox
 * schemas with their types. The HTTP routes validate and serialize with them, the OpenAPI document shows
 * them, and the CLI's remote mode reads the answers by their types, so the three cannot drift apart.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { AUDIT_PAGE_DEFAULT, AUDIT_PAGE_MAXIMUM } from './audit-pages.js';
import { SCOPES } from './scopes.js';

export { AUDIT_PAGE_DEFAULT, AUDIT_PAGE_MAXIMUM };

const strict = { additionalProperties: false } as const;
const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A token's name: it is also a path segment (`DELETE /admin/tokens/{name}`), so no `/`, space or `%`. */
export const TOKEN_NAME_PATTERN = '^[A-Za-z0-9._~:@+-]{1,64}$';
/** Names and passwords hold printable characters only (no C0 controls, no DEL). */
const PRINTABLE = '^[^\\u0000-\\u001f\\u007f]*$';
/** A user password's longest: the core's credentials carry at most 20 characters (as crypto/passwords.ts). */
export const USER_PASSWORD_MAX_LENGTH = 20;
/** The longest a token may be given to live when created, in days (a hundred years). */
export const TOKEN_MAX_DAYS = 36_500;
/** A reset over HTTP generates at most this many accounts. */
export const RESET_MAX_ACCOUNTS = 1_000_000;
/** `2026-11-21`, `2026-11-21T10:00Z`, `2026-11-21T10:00:00.000+01:00`: an ISO 8601 date or date and time. */
export const ISO_TIME_PATTERN =
  '^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$';

export const ScopeSchema = Type.Unsafe<(typeof SCOPES)[number]>({ type: 'string', enum: [...SCOPES] });

export const TokenName = Type.String({ pattern: TOKEN_NAME_PATTERN, examples: ['ci-bot'] });

const TokenProperties = {
  name: TokenName,
  scopes: Type.Array(ScopeSchema),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: nullable(Type.String({ format: 'date-time' })),
  revokedAt: nullable(Type.String({ format: 'date-time' })),
  /** `expired` once past `expiresAt`; `revoked` wins over it. */
  state: Type.Union([Type.Literal('active'), Type.Literal('expired'), Type.Literal('revoked')]),
};

export const TokenInfo = Type.Object(TokenProperties, {
  ...strict,
  description: 'An API token, never its secret (only its SHA-256 is stored)',
});
export type TokenInfo = Static<typeof TokenInfo>;

export const TokenCreateBody = Type.Object(
  {
    name: TokenName,
    scopes: Type.Optional(
      Type.Array(ScopeSchema, {
        minItems: 1,
        uniqueItems: true,
        description: 'Default: every scope but `store:reset` and `admin`',
        examples: [['findby', 'share:read']],
      }),
    ),
    expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the token stops working' })),
    expiresInDays: Type.Optional(
      Type.Integer({ minimum: 1, maximum: TOKEN_MAX_DAYS, description: 'Or: how many days it works from now' }),
    ),
  },
  { ...strict, description: 'A new API token: its name, scopes and expiry (`expiresAt` or `expiresInDays`, not both)' },
);
export type TokenCreateBody = Static<typeof TokenCreateBody>;

export const CreatedToken = Type.Object(
  {
    token: Type.String({ description: 'The secret, shown this once: send it as `Authorization: Bearer <token>`' }),
    ...TokenProperties,
  },
  strict,
);
export type CreatedToken = Static<typeof CreatedToken>;

export const TokenList = Type.Object({ tokens: Type.Array(TokenInfo) }, strict);
export type TokenList = Static<typeof TokenList>;

export const TokenParams = Type.Object({ name: TokenName }, strict);

export const UserNumber = Type.Integer({ minimum: 1, maximum: 9999, examples: [25] });
const Password = Type.String({ minLength: 1, maxLength: USER_PASSWORD_MAX_LENGTH, pattern: PRINTABLE });

const UserProperties = {
  userNumber: UserNumber,
  name: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  /** Set while disabled: its credentials are refused. */
  disabledAt: nullable(Type.String({ format: 'date-time' })),
  state: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
};

export const UserInfo = Type.Object(UserProperties, {
  ...strict,
  description: 'A core user (UserNumberCredentials), never its password hash',
});
export type UserInfo = Static<typeof UserInfo>;

export const UserAddBody = Type.Object(
  {
    userNumber: UserNumber,
    name: Type.String({ minLength: 1, maxLength: 64, pattern: PRINTABLE, examples: ['Loan officer'] }),
    password: Type.Optional({ ...Password, description: 'Default: a generated one, answered this once' }),
  },
  { ...strict, description: 'A new core user' },
);
export type UserAddBody = Static<typeof UserAddBody>;

/** A user, with the password generated for it (shown this once) when none was given. */
export const UserWithPassword = Type.Object(
  { ...UserProperties, password: Type.Optional(Type.String({ description: 'The generated password, shown once' })) },
  strict,
);
export type UserWithPassword = Static<typeof UserWithPassword>;

/** A user as the list shows it to the operator: with its password lockouts, which its callers are never told of. */
export const UserListEntry = Type.Object(
  {
    ...UserProperties,
    lockedUntil: nullable(
      Type.String({
        format: 'date-time',
        description:
          "Until when a caller (address and token) is locked out of the user's password, the latest of them; null when none is. `POST /admin/users/{number}/unlock` clears it",
      }),
    ),
    failures: Type.Integer({
      minimum: 0,
      description: 'Wrong passwords counted towards the next lock, from every caller, within the lockout window',
    }),
  },
  { ...strict, description: 'A core user with its password lockouts' },
);
export type UserListEntry = Static<typeof UserListEntry>;

export const UserList = Type.Object({ users: Type.Array(UserListEntry) }, strict);
export type UserList = Static<typeof UserList>;

export const UserParams = Type.Object(
  {
    number: Type.String({ pattern: '^[1-9][0-9]{0,3}$', description: 'The user number, 1 to 9999', examples: ['25'] }),
  },
  strict,
);

export const UserPasswordBody = Type.Object(
  { password: Type.Optional({ ...Password, description: 'Default: a generated one, answered this once' }) },
  { ...strict, description: 'The new password, or nothing to have one generated' },
);
export type UserPasswordBody = Static<typeof UserPasswordBody>;

/**
 * The demo set-up's passwords (demo-credentials.json) an admin is given, each while it is the one in force
 * on the demo dataset: what /docs puts in place of its examples' placeholders.
 */
export const DemoCredentials = Type.Object(
  {
    adminPassword: Type.Optional(
      Type.String({ description: 'The administrative password (AdministrativeCredentials)' }),
    ),
    userPassword: Type.Optional(
      Type.String({ description: "The demo user's password (UserNumberCredentials, user 1)" }),
    ),
  },
  { ...strict, description: "The demo set-up's passwords still in force" },
);
export type DemoCredentials = Static<typeof DemoCredentials>;

export const UserUnlocked = Type.Object(
  {
    ...UserProperties,
    cleared: Type.Integer({
      minimum: 0,
      description: 'Callers (token and address) whose lock or failures were cleared',
    }),
  },
  strict,
);
export type UserUnlocked = Static<typeof UserUnlocked>;

export const AuditQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ pattern: ISO_TIME_PATTERN, description: 'Events at or after this time' })),
    to: Type.Optional(Type.String({ pattern: ISO_TIME_PATTERN, description: 'Events before this time' })),
    operation: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 80,
        description: 'An operation (`findBySSN`, `admin:token.create`), or a prefix ending in `*` (`admin:*`)',
      }),
    ),
    account: Type.Optional(Type.String({ pattern: '^[0-9]{10}$', description: 'Calls that touched this account' })),
    status: Type.Optional(
      Type.String({ pattern: '^[1-5]([0-9]{2}|xx)$', description: 'An HTTP status (`403`) or class (`4xx`)' }),
    ),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 160, description: "The bearer token's name" })),
    limit: Type.Optional(
      Type.String({
        pattern: '^[0-9]{1,4}$',
        description: `Events per page, 1 to ${AUDIT_PAGE_MAXIMUM} (default ${AUDIT_PAGE_DEFAULT}); an NDJSON answer has every event`,
      }),
    ),
    cursor: Type.Optional(
      Type.String({ pattern: '^[A-Za-z0-9_-]{1,80}$', description: "The previous page's `nextCursor`" }),
    ),
    order: Type.Optional(
      Type.String({ enum: ['oldest', 'newest'], description: 'Oldest events first (the default) or newest first' }),
    ),
  },
  strict,
);
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditEventInfo = Type.Object(
  {
    at: Type.String({ format: 'date-time' }),
    requestId: Type.String(),
    tokenName: nullable(Type.String()),
    userNumber: nullable(Type.Integer()),
    memberAccount: nullable(Type.String()),
    operation: Type.String(),
    accountNumbers: Type.Array(Type.String()),
    collateralNumber: nullable(Type.String()),
    status: Type.Integer(),
    code: nullable(Type.String()),
    coreLatencyMs: nullable(Type.Integer()),
    coreOutcome: nullable(Type.String()),
    target: nullable(Type.String({ description: 'What an administrative call acted on (`token:ci-bot`, `user:25`)' })),
    traceId: nullable(
      Type.String({
        pattern: '^[0-9a-f]{32}$',
        description: "The trace id of the call's span, when spans are exported",
      }),
    ),
  },
  { ...strict, description: 'One call: who made it, what it reached and how it ended' },
);
export type AuditEventInfo = Static<typeof AuditEventInfo>;

export const AuditPage = Type.Object(
  {
    events: Type.Array(AuditEventInfo),
    nextCursor: nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last' })),
    next: nullable(Type.String({ description: 'The next page, with the same filters' })),
  },
  strict,
);
export type AuditPage = Static<typeof AuditPage>;

const DemoDataset = Type.Object({ seed: Type.Integer(), accounts: Type.Integer() }, strict);
const RecordCounts = Type.Record(Type.String(), Type.Integer(), { description: 'Records, by record type' });

export const ImportQuery = Type.Object(
  {
    replace: Type.Optional(
      Type.String({ enum: ['true', 'false'], description: 'Replace the records the store holds (default false)' }),
    ),
  },
  strict,
);

export const Imported = Type.Object(
  {
    status: Type.Literal('imported'),
    records: RecordCounts,
    /** The demo dataset the records are, if they are one: what a later reset goes back to. */
    demoDataset: nullable(DemoDataset),
    elapsedMs: Type.Integer(),
  },
  strict,
);
export type Imported = Static<typeof Imported>;

export const ResetBody = Type.Object(
  {
    accounts: Type.Optional(Type.Integer({ minimum: 1, maximum: RESET_MAX_ACCOUNTS, examples: [1000] })),
    seed: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647, description: 'With accounts' })),
  },
  { ...strict, description: 'Another demo dataset to reset to; by default the one the store was seeded with' },
);
export type ResetBody = Static<typeof ResetBody>;

export const ResetAnswer = Type.Object(
  {
    status: Type.Literal('reset'),
    dataset: DemoDataset,
    records: RecordCounts,
    elapsedMs: Type.Integer(),
  },
  strict,
);
export type ResetAnswer = Static<typeof ResetAnswer>;
