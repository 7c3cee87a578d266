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

/** A secret of at most `maxLength` characters, as the core's credential types declare it. */
const secret = (maxLength: number, description: string) => text(0, maxLength, description);

/** AccountNumber in requests and responses (DESIGN: 10 digits, zero-padded, always a JSON string). */
export const AccountNumberSchema = Type.String({ pattern: '^[0-9]{10}$', description: 'Account number: 10 digits' });

/** The core's `xsd:short`. */
const Short = (options: { minimum?: number; maximum?: number } = {}) =>
  Type.Integer({ minimum: -32768, maximum: 32767, ...options });

/** A second factor a member credential may carry (the core's SecondaryVerification). */
const SecondaryVerificationSchema = Type.Object(
  {
    SocialSecurityNumber: Type.Optional(Type.String({ pattern: '^[0-9]{9}$', description: 'The SSN: 9 digits' })),
    SSNLastFourDigits: Type.Optional(Type.String({ pattern: '^[0-9]{4}$', description: 'Last four SSN digits' })),
    SecondaryHomeBankingPassword: Type.Optional(secret(20, 'A second home banking password')),
    SecondaryAudioAccessCode: Type.Optional(secret(15, 'A second audio response access code')),
  },
  { additionalProperties: false },
);

/** Which of a member's home-banking users (1 to 999) the credential names. */
const OptionalUserCode = Short({ minimum: 1, maximum: 999 });

/**
 * Credential objects, with the core's field lengths (docs/decisions.md, "SymXchange"). The spec shows the
 * member-level ones as empty objects, so an empty object counts as absent; a non-empty one must carry its
 * fields (checked by the authenticator) and must verify. Fields marked optional may be left out.
 */
export const CREDENTIAL_SCHEMAS = {
  AdministrativeCredentials: { Password: secret(20, 'The administrative password') },
  UserNumberCredentials: {
    UserNumber: Type.Integer({ minimum: 0, maximum: 9999 }),
    Password: secret(20, 'User password'),
  },
  TokenCredentials: { TokenId: secret(512, 'A session token from logon') },
  AccountNumberCredentials: {
    AccountNumber: AccountNumberSchema,
    OptionalUserCode: Type.Optional(OptionalUserCode),
    HomeBankingPassword: Type.Optional(secret(20, 'Home banking password')),
    AudioAccessCode: Type.Optional(secret(15, 'Audio response access code')),
    SecondaryVerification: Type.Optional(SecondaryVerificationSchema),
  },
  HomeBankingCredentials: {
    UserName: text(0, 20, 'Home banking user name'),
    Password: secret(20, 'Home banking password'),
    SecondaryVerification: Type.Optional(SecondaryVerificationSchema),
  },
  CardCredentials: { CardNumber: text(0, 30, 'Card number') },
  MICRCredentials: { MICRNumber: Type.String({ pattern: '^[0-9]{0,30}$', description: 'MICR number: digits' }) },
  LookupCredentials: {
    Type: Short(),
    Value: text(1, 20, 'Lookup number'),
    OptionalUserCode: Type.Optional(OptionalUserCode),
    HomeBankingPassword: Type.Optional(secret(20, 'Home banking password')),
    AudioAccessCode: Type.Optional(secret(15, 'Audio response access code')),
    SecondaryVerification: Type.Optional(SecondaryVerificationSchema),
  },
} as const satisfies Record<string, Record<string, TSchema>>;

/**
 * Fields of a credential kind of which exactly one must be given (the core's `xsd:choice`): a member proves
 * who they are with a home-banking password or an audio response code, never both.
 */
export const CREDENTIAL_SECRET_CHOICES: Readonly<Partial<Record<CredentialKind, readonly string[]>>> = {
  AccountNumberCredentials: ['HomeBankingPassword', 'AudioAccessCode'],
  LookupCredentials: ['HomeBankingPassword', 'AudioAccessCode'],
};

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
