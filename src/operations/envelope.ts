/**
 * The request envelope shared by every operation (spec: "Request envelope (all operations)").
 */
import { Type, type TSchema } from 'typebox';

const secret = (description: string) => Type.String({ minLength: 1, maxLength: 128, description });
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
    AccountNumber: digits(10, 10, 'Account number'),
    HomeBankingPassword: Type.Optional(secret('Home banking password')),
    AudioAccessCode: Type.Optional(secret('Audio response access code')),
  },
  HomeBankingCredentials: { UserName: Type.String({ minLength: 1, maxLength: 64 }), Password: secret('Home banking password') },
  CardCredentials: { CardNumber: digits(12, 19, 'Card number') },
  MICRCredentials: { MICRNumber: digits(4, 20, 'MICR number') },
  LookupCredentials: {
    Type: Type.Integer({ minimum: 0, maximum: 99 }),
    Value: Type.String({ minLength: 1, maxLength: 20 }),
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
        { appId: Type.Optional(Type.String({ maxLength: 64, description: 'Calling application identifier' })) },
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
