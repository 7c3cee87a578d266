/**
 * The request envelope shared by every operation (spec: "Request envelope (all operations)").
 */
import { Type, type TSchema } from 'typebox';

/** Printable text: no control characters (PostgreSQL cannot store NUL, and no field is multi-line). */
export const TEXT_PATTERN = '^[^\\u0000-\\u001f\\u007f]*$';

/** @example text(1, 64, 'Home banking user name') */
export function text(minLength: number, maxLength: number, description?: string) {
  return Type.String({ minLength, maxLength, pattern: TEXT_PATTERN, ...(description ? { description } : {}) });
}

const secret = (description: string) => text(1, 128, description);

/** AccountNumber in requests and responses (DESIGN: 10 digits, zero-padded, always a JSON string). */
export const AccountNumberSchema = Type.String({ pattern: '^[0-9]{10}$', description: 'Account number: 10 digits' });
const digits = (min: number, max: number, description: string) =>
  Type.String({ pattern: `^[0-9]{${min},${max}}$`, description });

/**
 * Credential objects. The spec shows the member-level ones as empty objects, so an empty object counts
 * as absent; a non-empty one must carry its fields (checked by the authenticator) and must verify.
 */
export const CREDENTIAL_SCHEMAS = {
  AdministrativeCredentials: { Password: secret('The administrative password') },
  UserNumberCredentials: { UserNumber: Type.Integer({ minimum: 1, maximum: 9999 }), Password: secret('User password') },
  TokenCredentials: { TokenId: secret('A session token from logon') },
  AccountNumberCredentials: {
    AccountNumber: AccountNumberSchema,
    HomeBankingPassword: Type.Optional(secret('Home banking password')),
    AudioAccessCode: Type.Optional(secret('Audio response access code')),
  },
  HomeBankingCredentials: {
    UserName: text(1, 64, 'Home banking user name'),
    Password: secret('Home banking password'),
  },
  CardCredentials: { CardNumber: digits(12, 19, 'Card number') },
  MICRCredentials: { MICRNumber: digits(4, 20, 'MICR number') },
  LookupCredentials: {
    Type: Type.Integer({ minimum: 0, maximum: 99 }),
    Value: text(1, 20, 'Lookup number'),
    HomeBankingPassword: secret('Home banking password'),
  },
} as const satisfies Record<string, Record<string, TSchema>>;

export type CredentialKind = keyof typeof CREDENTIAL_SCHEMAS;
export const CREDENTIAL_KINDS = Object.keys(CREDENTIAL_SCHEMAS) as CredentialKind[];

/** Member-level kinds confine a call to one account (DESIGN). */
export const MEMBER_CREDENTIAL_KINDS: readonly CredentialKind[] = [
  'AccountNumberCredentials',
  'HomeBankingCredentials',
  'CardCredentials',
  'MICRCredentials',
  'LookupCredentials',
];

export const CredentialsSchema = Type.Object(
  Object.fromEntries(
    CREDENTIAL_KINDS.map((kind) => [
      kind,
      Type.Optional(Type.Partial(Type.Object(CREDENTIAL_SCHEMAS[kind], { additionalProperties: false }))),
    ]),
  ),
  { $id: 'Credentials', additionalProperties: false, minProperties: 1 },
);

export const NxAttributesSchema = Type.Object(
  {
    customFields: Type.Optional(
      Type.Object(
        { appId: Type.Optional(text(0, 64, 'Calling application identifier')) },
        { additionalProperties: Type.Unsafe({ type: ['string', 'number', 'boolean', 'null'] }) },
      ),
    ),
  },
  { $id: 'NxAttributes', additionalProperties: false },
);

/** The envelope properties every request body has, to spread into an operation's body schema. */
export const envelopeProperties = {
  Credentials: Type.Ref('Credentials'),
  nxAttributes: Type.Optional(Type.Ref('NxAttributes')),
};

export type CredentialsBody = Partial<Record<CredentialKind, Record<string, unknown>>>;
