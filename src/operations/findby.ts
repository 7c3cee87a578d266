/**
 * FindByService (spec document 1): locate accounts by card, home-banking user, MICR plus draft,
 * lookup type plus number, SSN or short name. Nothing found is an empty result, never an error.
 */
import { Type, type Static, type TObject, type TProperties } from 'typebox';
import { answerCache } from '../store/answer-cache.js';
import { lookups, type ShareMatch } from '../store/lookups.js';
import { AccountNumberSchema, text } from '../contract/envelope.js';
import { defineOperation, STAFF_CREDENTIALS, type OperationContext, type RequestBody } from './types.js';

const AccountNumber = AccountNumberSchema;
const NullableAccountNumber = Type.Unsafe<string | null>({ ...AccountNumber, type: ['string', 'null'] });
const AccountNumbers = Type.Array(AccountNumber, { description: 'Distinct account numbers, ascending' });
const MessageId = Type.String({ description: 'The operation name' });
const Null = Type.Null();

/** Spec: "Lookup result object (findByMICR, findByLookup)"; null when nothing matches. */
const LookupResult = Type.Unsafe<{ AccountNumber: string; IdType: string; Id: string | null } | null>({
  type: ['object', 'null'],
  properties: {
    AccountNumber,
    IdType: Type.Unsafe<string>({
      type: 'string',
      enum: ['SHARE', 'LOAN', 'EXTERNAL', 'NONE'],
      description:
        'SHARE when the match names a share, NONE when only the account (the core also answers LOAN, EXTERNAL)',
    }),
    // The XSD's LookupResult.Id: at most 4 characters.
    Id: Type.Unsafe({ type: ['string', 'null'], maxLength: 4, description: 'The share id when IdType is SHARE' }),
  },
  required: ['AccountNumber', 'IdType', 'Id'],
  additionalProperties: false,
});

function lookupResult(match: ShareMatch | undefined) {
  if (!match) return null;
  return {
    AccountNumber: match.accountNumber,
    IdType: match.shareId ? 'SHARE' : 'NONE',
    Id: match.shareId,
  };
}

/** The accounts a lookup answered with, for the audit trail. */
function foundAccounts(result: unknown): string[] {
  const { AccountNumber, Result } = result as {
    AccountNumber?: string | string[] | null;
    Result?: { AccountNumber: string } | null;
  };
  return [AccountNumber, Result?.AccountNumber].flat().filter((a): a is string => typeof a === 'string');
}

/**
 * A lookup's answer, from memory when no change it depends on has been committed since it was read
 * (store/answer-cache.ts), else from `read`. `key` names the operation and its inputs, protected ones by
 * their HMAC only.
 */
function cached<T>({ db, config }: OperationContext, key: readonly unknown[], read: () => Promise<T>): Promise<T> {
  const cache = answerCache(db, 'lookup', config.lookupCacheEntries);
  return cache ? cache.answer(JSON.stringify(key), read) : read();
}

/**
 * The lookup keys have the core's lengths (docs/decisions.md, "SymXchange"); the spec requires each, so an
 * empty key is refused. A well-formed key nobody has finds nothing.
 */
const CardNumber = text(1, 30, 'Card number (PAN)');

function findBy<const Request extends TProperties, const Response extends TProperties>(
  name: string,
  summary: string,
  request: Request,
  response: Response,
  handle: (body: RequestBody<Request>, context: OperationContext) => Promise<Static<TObject<Response>>>,
) {
  return defineOperation({
    name,
    family: 'P1',
    service: 'findby',
    summary,
    scope: 'findby',
    credentials: STAFF_CREDENTIALS,
    request,
    response: Type.Object(response, { additionalProperties: false }),
    auditAccounts: foundAccounts,
    handle: (context, body) => handle(body, context),
  });
}

export const FINDBY_OPERATIONS = [
  findBy(
    'findByActiveCard',
    'Account of an active, unexpired card',
    { CardNumber },
    { AccountNumber: NullableAccountNumber, MessageId },
    async (body, context) => {
      const hmac = context.secrets.lookupHash('pan', body.CardNumber);
      const account = await cached(context, ['activeCard', hmac.toString('base64')], () =>
        lookups.activeCard(context.db, hmac),
      );
      return { AccountNumber: account ?? null, MessageId: 'findByActiveCard' };
    },
  ),
  findBy(
    'findByAnyCard',
    'Accounts of a card number, active or not',
    { CardNumber },
    { AccountNumber: AccountNumbers, MessageId, Version_1: Null, _value_1: Null },
    async (body, context) => {
      const hmac = context.secrets.lookupHash('pan', body.CardNumber);
      const accounts = await cached(context, ['anyCard', hmac.toString('base64')], () =>
        lookups.anyCard(context.db, hmac),
      );
      return { AccountNumber: accounts, MessageId: 'findByAnyCard', Version_1: null, _value_1: null };
    },
  ),
  findBy(
    'findByHomeUser',
    'Account of a home-banking user name (case-insensitive)',
    { HomeBankingUserName: text(1, 20, 'Home banking user name') },
    { AccountNumber: NullableAccountNumber, MessageId },
    async (body, context) => {
      const name = body.HomeBankingUserName;
      const account = await cached(context, ['homeUser', name], () => lookups.homeBankingUser(context.db, name));
      return { AccountNumber: account ?? null, MessageId: 'findByHomeUser' };
    },
  ),
  findBy(
    'findByMICR',
    'Account and share of a MICR number and draft',
    {
      MICR: text(1, 22, 'MICR account number'),
      Draft: text(1, 10, 'Draft number'),
    },
    { Result: LookupResult, MessageId },
    async (body, context) => {
      const hmac = context.secrets.lookupHash('micr', body.MICR);
      const match = await cached(context, ['micr', hmac.toString('base64'), body.Draft], () =>
        lookups.micr(context.db, hmac, body.Draft),
      );
      return { Result: lookupResult(match), MessageId: 'findByMICR' };
    },
  ),
  findBy(
    'findByLookup',
    'Account (and share) of a lookup type and number',
    {
      LookupType: Type.Integer({ minimum: 0, maximum: 99 }),
      LookupNumber: text(1, 20, 'Lookup number'),
    },
    { Result: LookupResult, AccountNumber: NullableAccountNumber, MessageId },
    async (body, context) => {
      const { LookupType, LookupNumber } = body;
      const match = await cached(context, ['lookup', LookupType, LookupNumber], () =>
        lookups.lookup(context.db, LookupType, LookupNumber),
      );
      return { Result: lookupResult(match), AccountNumber: match?.accountNumber ?? null, MessageId: 'findByLookup' };
    },
  ),
  findBy(
    'findBySSN',
    'Accounts with a name record carrying the SSN',
    {
      SSN: text(9, 9, 'The SSN: 9 characters, as the core takes it'),
    },
    { AccountNumber: AccountNumbers, MessageId },
    async (body, context) => {
      const hmac = context.secrets.lookupHash('ssn', body.SSN);
      const limit = context.config.listMaximum;
      const accounts = await cached(context, ['ssn', hmac.toString('base64'), limit], () =>
        lookups.bySsn(context.db, hmac, limit),
      );
      return { AccountNumber: accounts, MessageId: 'findBySSN' };
    },
  ),
  // Spec: the findByShortName response lists only AccountNumber (no MessageId).
  findBy(
    'findByShortName',
    'Accounts with a name record of that short name (case-insensitive)',
    { ShortName: text(1, 16, 'Short name') },
    { AccountNumber: AccountNumbers },
    async (body, context) => {
      const limit = context.config.listMaximum;
      const accounts = await cached(context, ['shortName', body.ShortName, limit], () =>
        lookups.byShortName(context.db, body.ShortName, limit),
      );
      return { AccountNumber: accounts };
    },
  ),
];
